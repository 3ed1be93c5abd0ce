#include "sc_main/partition.h"

#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <sstream>
#include <stdexcept>

#include "kernels/gqa/placement.h"
#include "platform/interrupt.h"
#include "sc_main/processes.h"

namespace kb::cli {

using Json = nlohmann::json;

namespace {

Json devices_json(const std::vector<SipId>& devices) {
  Json a = Json::array();
  for (const SipId d : devices) a.push_back(d.value);
  return a;
}

std::vector<SipId> devices_of(const Json& a) {
  std::vector<SipId> out;
  for (const auto& d : a) out.emplace_back(d.get<std::uint32_t>());
  return out;
}

Json rows_json(const std::vector<UseRow>& rows) {
  Json out = Json::array();
  for (const UseRow& row : rows) {
    Json engines = Json::object();
    for (const auto& [name, e] : row.engines)
      engines[name] = {{"ops", e.ops}, {"busy_cycles", e.busy_cycles}, {"bytes", e.bytes}, {"flops", e.flops}};
    out.push_back({{"where", row.where}, {"pes", row.pes}, {"engines", engines}});
  }
  return out;
}

Json info_json(const report::RunInfo& info) {
  return {{"elaboration_seconds", info.elaboration_seconds}, {"peak_rss_kib", info.peak_rss_kib},
          {"transactions", info.transactions}, {"sips", rows_json(info.use->sips)},
          {"cubes", rows_json(info.use->cubes)}};
}

std::vector<UseRow> rows_of(const Json& rows) {
  std::vector<UseRow> out;
  for (const auto& r : rows) {
    UseRow row{r.at("where"), r.at("pes"), {}};
    for (const auto& [name, e] : r.at("engines").items())
      row.engines[name] = {e.at("ops"), e.at("busy_cycles"), e.at("bytes"), e.at("flops")};
    out.push_back(std::move(row));
  }
  return out;
}

gqa::Phase merged(const gqa::Phase& a, const gqa::Phase& b) {
  if (a.end == 0) return b;
  if (b.end == 0) return a;
  return {std::min(a.begin, b.begin), std::max(a.end, b.end)};
}

Json phase_json(const gqa::Phase& p) { return {p.begin, p.end}; }
gqa::Phase phase_of(const Json& j) { return {j.at(0), j.at(1)}; }

}  // namespace

Json part_json(const gqa::DecodeResult& r, const report::RunInfo& info) {
  const auto& b = r.breakdown;
  return {{"result",
           {{"cycles", r.cycles}, {"groups_per_sip", r.groups_per_sip}, {"tile_rows", r.tile_rows},
            {"devices", devices_json(r.devices)}, {"sweep", phase_json(b.sweep)}, {"level2", phase_json(b.level2)},
            {"level1", phase_json(b.level1)}, {"store", phase_json(b.store)}, {"kv_bytes", r.kv_bytes},
            {"roofline_cycles", r.roofline_cycles}, {"model_cycles", r.model_cycles}, {"issued_ops", r.issued_ops}}},
          {"info", info_json(info)}};
}

Json part_json(const gqa::PrefillResult& r, const report::RunInfo& info) {
  return {{"result",
           {{"cycles", r.cycles}, {"groups_per_sip", r.groups_per_sip}, {"devices", devices_json(r.devices)},
            {"flops", r.flops}, {"gemm_flops", r.gemm_flops}, {"roofline_cycles", r.roofline_cycles},
            {"ring_transfers", r.ring_transfers}, {"ring_bytes", r.ring_bytes}, {"busy_max", r.busy_max},
            {"busy_total", r.busy_total}, {"ring_wait_total", r.ring_wait_total}, {"pes_measured", r.pes_measured}}},
          {"info", info_json(info)}};
}

std::vector<std::vector<SipId>> split_devices(const std::vector<SipId>& devices, std::size_t n) {
  n = std::max<std::size_t>(1, std::min(n, devices.size()));
  std::vector<std::vector<SipId>> parts(n);
  for (std::size_t i = 0; i < devices.size(); ++i) parts[i * n / devices.size()].push_back(devices[i]);
  return parts;
}

gqa::DecodeResult merge_decode(const std::vector<Json>& parts) {
  gqa::DecodeResult m;
  for (const Json& part : parts) {
    const Json& r = part.at("result");
    m.cycles = std::max<std::uint64_t>(m.cycles, r.at("cycles"));
    m.groups_per_sip = r.at("groups_per_sip");
    m.tile_rows = r.at("tile_rows");
    m.devices = devices_of(r.at("devices"));
    m.breakdown.sweep = merged(m.breakdown.sweep, phase_of(r.at("sweep")));
    m.breakdown.level2 = merged(m.breakdown.level2, phase_of(r.at("level2")));
    m.breakdown.level1 = merged(m.breakdown.level1, phase_of(r.at("level1")));
    m.breakdown.store = merged(m.breakdown.store, phase_of(r.at("store")));
    m.kv_bytes += r.at("kv_bytes").get<std::uint64_t>();
    m.roofline_cycles = r.at("roofline_cycles");
    m.model_cycles = r.at("model_cycles");
    m.issued_ops += r.at("issued_ops").get<std::uint64_t>();
  }
  return m;
}

gqa::PrefillResult merge_prefill(const std::vector<Json>& parts) {
  gqa::PrefillResult m;
  for (const Json& part : parts) {
    const Json& r = part.at("result");
    m.cycles = std::max<std::uint64_t>(m.cycles, r.at("cycles"));
    m.groups_per_sip = r.at("groups_per_sip");
    m.devices = devices_of(r.at("devices"));
    m.flops = r.at("flops");
    m.gemm_flops += r.at("gemm_flops").get<double>();
    m.roofline_cycles = r.at("roofline_cycles");
    m.ring_transfers += r.at("ring_transfers").get<std::uint64_t>();
    m.ring_bytes += r.at("ring_bytes").get<std::uint64_t>();
    m.busy_max = std::max(m.busy_max, r.at("busy_max").get<double>());
    m.busy_total += r.at("busy_total").get<double>();
    m.ring_wait_total += r.at("ring_wait_total").get<double>();
    m.pes_measured += r.at("pes_measured").get<std::uint64_t>();
  }
  return m;
}

report::RunInfo merge_info(const std::vector<Json>& parts, std::uint64_t cycles, double seconds) {
  report::RunInfo info;
  Utilisation use;
  use.cycles = cycles;
  for (const Json& part : parts) {
    const Json& i = part.at("info");
    info.elaboration_seconds = std::max(info.elaboration_seconds, i.at("elaboration_seconds").get<double>());
    info.peak_rss_kib = std::max(info.peak_rss_kib, i.at("peak_rss_kib").get<long>());
    info.transactions += i.at("transactions").get<std::uint64_t>();
    for (UseRow& row : rows_of(i.at("sips"))) use.sips.push_back(std::move(row));
    for (UseRow& row : rows_of(i.at("cubes"))) use.cubes.push_back(std::move(row));
  }
  info.simulation_seconds = seconds;
  info.use = std::move(use);
  return info;
}

std::vector<Json> run_parts(const std::vector<std::string>& args, const std::vector<SipId>& devices,
                            const std::vector<std::vector<SipId>>& parts, OpLog* log) {
  const auto scratch = std::filesystem::temp_directory_path() / ("kernbench_jobs_" + std::to_string(::getpid()));
  std::filesystem::create_directories(scratch);
  const interrupt::RemovedOnInterrupt scratch_removed(scratch.string());
  std::vector<std::unique_ptr<interrupt::RemovedOnInterrupt>> files_removed;
  std::map<pid_t, std::size_t> running;
  std::vector<std::vector<std::string>> commands(parts.size());
  for (std::size_t i = 0; i < parts.size(); ++i) {
    const std::string stem = (scratch / std::to_string(i)).string();
    for (const char* ext : {".json", ".jsonl", ".log"})
      files_removed.push_back(std::make_unique<interrupt::RemovedOnInterrupt>(stem + ext));
    commands[i] = args;
    commands[i].insert(commands[i].end(), {"--devices", gqa::devices_text(devices), "--simulate",
                                           gqa::devices_text(parts[i]), "--part", stem + ".json"});
    if (log != nullptr) commands[i].insert(commands[i].end(), {"--op-log", stem + ".jsonl"});
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
      failure = "--jobs: the part simulating SIP(s) " + gqa::devices_text(parts[i]) + " failed (" +
                command_text(commands[i]) + "):\n" + log_tail((scratch / (std::to_string(i) + ".log")).string());
  }
  std::vector<Json> out;
  if (failure.empty())
    for (std::size_t i = 0; i < parts.size(); ++i) {
      const std::string stem = (scratch / std::to_string(i)).string();
      std::ifstream json(stem + ".json");
      out.push_back(Json::parse(json));
      if (log == nullptr) continue;
      std::ifstream jsonl(stem + ".jsonl");
      std::stringstream text;
      text << jsonl.rdbuf();
      log->append_jsonl(text.str());
    }
  std::filesystem::remove_all(scratch);
  if (!failure.empty()) throw std::runtime_error(failure);
  return out;
}

}  // namespace kb::cli
