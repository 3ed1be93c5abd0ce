#include "sc_main/partition.h"

#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <sstream>
#include <stdexcept>

#include "workloads/result.h"
#include "base/interrupt.h"
#include "base/op_log_file.h"
#include "sc_main/processes.h"

namespace kb::cli {

using Json = nlohmann::json;

std::vector<std::vector<SipId>> split_devices(const std::vector<SipId>& devices, std::size_t n) {
  n = std::max<std::size_t>(1, std::min(n, devices.size()));
  std::vector<std::vector<SipId>> parts(n);
  for (std::size_t i = 0; i < devices.size(); ++i) parts[i * n / devices.size()].push_back(devices[i]);
  return parts;
}

std::vector<Json> run_parts(const std::vector<std::string>& args, const std::vector<SipId>& devices,
                            const std::vector<std::vector<SipId>>& parts, OpLog* log,
                            const std::string& op_log_path) {
  // A part writes its op log in the format the parent's file has.
  const std::string log_ext = op_log_path.ends_with(".csv") ? ".csv" : ".jsonl";
  const auto scratch = std::filesystem::temp_directory_path() / ("kernbench_jobs_" + std::to_string(::getpid()));
  std::filesystem::create_directories(scratch);
  const interrupt::RemovedOnInterrupt scratch_removed(scratch.string());
  std::vector<std::unique_ptr<interrupt::RemovedOnInterrupt>> files_removed;
  std::map<pid_t, std::size_t> running;
  std::vector<std::vector<std::string>> commands(parts.size());
  for (std::size_t i = 0; i < parts.size(); ++i) {
    const std::string stem = (scratch / std::to_string(i)).string();
    for (const char* ext : {".json", ".jsonl", ".csv", ".log"})
      files_removed.push_back(std::make_unique<interrupt::RemovedOnInterrupt>(stem + ext));
    commands[i] = args;
    commands[i].insert(commands[i].end(), {"--devices", workloads::devices_text(devices), "--simulate",
                                           workloads::devices_text(parts[i]), "--part", stem + ".json"});
    if (log != nullptr) commands[i].insert(commands[i].end(), {"--op-log", stem + ".jsonl"});
    else if (!op_log_path.empty()) commands[i].insert(commands[i].end(), {"--op-log", stem + log_ext});
    running[spawn_self(commands[i], stem + ".log")] = i;
  }
  std::string failure;
  while (!running.empty()) {
    int status = 0;
    const pid_t pid = reap(status, true);
    if (pid < 0) break;
    const auto it = running.find(pid);
    if (it == running.end()) continue;
    const std::size_t i = it->second;
    running.erase(it);
    if ((!WIFEXITED(status) || WEXITSTATUS(status) != 0) && failure.empty())
      failure = "--jobs: the part simulating SIP(s) " + workloads::devices_text(parts[i]) + " failed (" +
                command_text(commands[i]) + "):\n" + log_tail((scratch / (std::to_string(i) + ".log")).string());
  }
  std::vector<Json> out;
  std::vector<std::string> part_logs;
  if (failure.empty())
    for (std::size_t i = 0; i < parts.size(); ++i) {
      const std::string stem = (scratch / std::to_string(i)).string();
      std::ifstream json(stem + ".json");
      out.push_back(Json::parse(json));
      if (!op_log_path.empty() && log == nullptr) part_logs.push_back(stem + log_ext);
      if (log == nullptr) continue;
      std::ifstream jsonl(stem + ".jsonl");
      std::stringstream text;
      text << jsonl.rdbuf();
      log->append_jsonl(text.str());
    }
  if (failure.empty() && !part_logs.empty()) concatenate_op_logs(op_log_path, part_logs);
  std::filesystem::remove_all(scratch);
  if (!failure.empty()) throw std::runtime_error(failure);
  return out;
}

}  // namespace kb::cli
