#include "sc_main/partition.h"

#include <sys/wait.h>
#include <unistd.h>

#include <optional>

#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <sstream>
#include <stdexcept>

#include "workloads/result.h"
#include "base/interrupt.h"
#include "base/op_log_file.h"
#include "sc_main/exchange.h"
#include "sc_main/processes.h"

namespace kb::cli {

using Json = nlohmann::json;

std::vector<std::vector<workloads::SimUnit>> split_units(const std::vector<SipId>& devices,
                                                         std::uint32_t groups_per_sip, std::size_t n) {
  std::vector<workloads::SimUnit> units;
  for (const SipId sip : devices)
    if (groups_per_sip <= 1) units.push_back({sip, std::nullopt});
    else
      for (std::uint32_t g = 0; g < groups_per_sip; ++g) units.push_back({sip, g});
  n = std::max<std::size_t>(1, std::min(n, units.size()));
  std::vector<std::vector<workloads::SimUnit>> parts(n);
  for (std::size_t i = 0; i < units.size(); ++i) parts[i * n / units.size()].push_back(units[i]);
  for (auto& part : parts) {  // a part with every group of a SIP simulates the SIP whole
    std::vector<workloads::SimUnit> whole;
    for (const workloads::SimUnit& u : part) {
      const auto n_of_sip = std::count_if(part.begin(), part.end(), [&](const auto& v) { return v.sip == u.sip; });
      if (!u.group || n_of_sip < static_cast<std::ptrdiff_t>(groups_per_sip)) whole.push_back(u);
      else if (*u.group == 0) whole.push_back({u.sip, std::nullopt});
    }
    part = std::move(whole);
  }
  return parts;
}

std::string units_text(const std::vector<workloads::SimUnit>& units) {
  std::string out;
  for (const workloads::SimUnit& u : units) {
    if (!out.empty()) out += ',';
    out += std::to_string(u.sip.value);
    if (u.group) out += '.' + std::to_string(*u.group);
  }
  return out;
}

std::vector<workloads::SimUnit> parse_units(const std::string& text, std::uint32_t sips) {
  std::vector<workloads::SimUnit> units;
  if (text.empty() || text.back() == ',')
    throw std::invalid_argument("--simulate '" + text + "': expected SIPs and SIP.GROUPs, comma-separated");
  std::istringstream in(text);
  for (std::string item; std::getline(in, item, ',');) {
    unsigned sip = 0, group = 0;
    int used = 0;
    const bool with_group = std::sscanf(item.c_str(), "%u.%u%n", &sip, &group, &used) == 2 &&
                            static_cast<std::size_t>(used) == item.size();
    if (!with_group && (std::sscanf(item.c_str(), "%u%n", &sip, &used) != 1 || static_cast<std::size_t>(used) != item.size()))
      throw std::invalid_argument("--simulate '" + text + "': expected SIPs and SIP.GROUPs, comma-separated");
    if (sip >= sips)
      throw std::invalid_argument("--simulate '" + text + "': SIP " + std::to_string(sip) + " does not exist");
    units.push_back({SipId(sip), with_group ? std::optional<std::uint32_t>(group) : std::nullopt});
  }
  return units;
}

std::vector<Json> run_parts(const std::vector<std::string>& args, const std::vector<SipId>& devices,
                            const std::vector<std::vector<workloads::SimUnit>>& parts, OpLog* log,
                            const std::string& op_log_path, bool coupled) {
  // A part writes its op log in the format the parent's file has.
  const std::string log_ext = op_log_path.ends_with(".csv") ? ".csv" : ".jsonl";
  const auto scratch = std::filesystem::temp_directory_path() / ("kernbench_jobs_" + std::to_string(::getpid()));
  std::filesystem::create_directories(scratch);
  const interrupt::RemovedOnInterrupt scratch_removed(scratch.string());
  std::vector<std::unique_ptr<interrupt::RemovedOnInterrupt>> files_removed;
  std::map<pid_t, std::size_t> running;
  std::vector<std::vector<std::string>> commands(parts.size());
  std::optional<PipeMesh> pipes;
  if (coupled) pipes.emplace(static_cast<std::uint32_t>(parts.size()));
  for (std::size_t i = 0; i < parts.size(); ++i) {
    const std::string stem = (scratch / std::to_string(i)).string();
    for (const char* ext : {".json", ".jsonl", ".csv", ".log"})
      files_removed.push_back(std::make_unique<interrupt::RemovedOnInterrupt>(stem + ext));
    commands[i] = args;
    commands[i].insert(commands[i].end(), {"--devices", workloads::devices_text(devices), "--simulate",
                                           units_text(parts[i]), "--part", stem + ".json"});
    if (log != nullptr) commands[i].insert(commands[i].end(), {"--op-log", stem + ".jsonl"});
    else if (!op_log_path.empty()) commands[i].insert(commands[i].end(), {"--op-log", stem + log_ext});
    std::vector<std::pair<int, int>> descriptors;
    if (pipes) {
      const auto rank = static_cast<std::uint32_t>(i);
      commands[i].insert(commands[i].end(), {"--exchange", pipes->plan(rank).text()});
      descriptors = pipes->descriptors(rank);
    }
    running[spawn_self(commands[i], stem + ".log", descriptors)] = i;
  }
  if (pipes) pipes->close();  // the parts hold them now: a part that stops closes its ends
  auto failed = [&](std::size_t i) {
    return "--jobs: the part simulating SIP(s) " + units_text(parts[i]) + " failed (" + command_text(commands[i]) +
           "):\n" + log_tail((scratch / (std::to_string(i) + ".log")).string());
  };
  std::string failure, stopped;  // a part's own failure; one that another part's stopped
  while (!running.empty()) {
    int status = 0;
    const pid_t pid = reap(status, true);
    if (pid < 0) break;
    const auto it = running.find(pid);
    if (it == running.end()) continue;
    const std::size_t i = it->second;
    running.erase(it);
    if (WIFEXITED(status) && WEXITSTATUS(status) == 0) continue;
    std::string& first = WIFEXITED(status) && WEXITSTATUS(status) == kPeerStoppedExit ? stopped : failure;
    if (first.empty()) first = failed(i);
  }
  if (failure.empty()) failure = stopped;
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
  if (failure.empty() && !part_logs.empty()) merge_op_logs(op_log_path, part_logs);
  if (failure.empty() && log != nullptr) log->group_by_pe(0);  // parts of one SIP's groups interleave by PE
  std::filesystem::remove_all(scratch);
  if (!failure.empty()) throw std::runtime_error(failure);
  return out;
}

}  // namespace kb::cli
