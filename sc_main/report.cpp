#include "sc_main/report.h"

#include <algorithm>
#include <cstdio>
#include <map>
#include <set>

#include <sys/resource.h>

#include "kernels/gqa/placement.h"
#include "platform/units.h"

namespace kb::report {
namespace {

// Report text, a printf-formatted line at a time.
class Lines {
 public:
  template <class... Args>
  void operator()(const char* fmt, Args... args) {
    char line[512];
    std::snprintf(line, sizeof line, fmt, args...);
    text_ += line;
  }
  const std::string& text() const { return text_; }

 private:
  std::string text_;
};

// The shape line both attention reports print.
void shape_line(Lines& add, std::uint32_t h_q, std::uint32_t h_kv, std::uint32_t d, std::uint64_t s,
                std::uint32_t t_q, bool causal, DType dtype) {
  add("  shape           H_q %u, H_kv %u (G %u), d %u, S %llu, T_q %u, %s, %s\n", h_q, h_kv, h_q / h_kv, d,
      static_cast<unsigned long long>(s), t_q, causal ? "causal" : "not causal", dtype_name(dtype));
}

// The utilisation table, wall-time and simulator lines every report ends with.
void run_lines(Lines& add, const RunInfo& info) {
  if (info.use) {
    add("  utilisation     %-16s %-6s %7s %12s %12s   (busy: %% of the run, mean over the PEs that ran)\n",
        "where", "engine", "busy", "bytes", "flops");
    for (const UseRow& row : info.use->sips) {
      const std::string where = row.where + " (" + std::to_string(row.pes) + " PEs)";
      for (const auto& [engine, e] : row.engines) {
        const double busy = info.use->cycles && row.pes
                                ? 100.0 * static_cast<double>(e.busy_cycles) / (static_cast<double>(info.use->cycles) * row.pes)
                                : 0;
        add("                  %-16s %-6s %6.1f%% %12s %12.3g\n", where.c_str(), engine.c_str(), busy,
            units::format_bytes(e.bytes).c_str(), static_cast<double>(e.flops));
      }
    }
  }
  add("  wall time       elaboration %.3f s, simulation %.3f s, peak RSS %.1f MiB\n", info.elaboration_seconds,
      info.simulation_seconds, static_cast<double>(info.peak_rss_kib) / 1024);
  add("  simulator       %llu transactions, %.0f transactions/s\n", static_cast<unsigned long long>(info.transactions),
      info.simulation_seconds > 0 ? static_cast<double>(info.transactions) / info.simulation_seconds : 0.0);
}

nlohmann::json rows_json(const std::vector<UseRow>& rows, std::uint64_t cycles) {
  nlohmann::json out = nlohmann::json::array();
  for (const UseRow& row : rows) {
    nlohmann::json engines = nlohmann::json::object();
    for (const auto& [engine, e] : row.engines)
      engines[engine] = {{"ops", e.ops},
                         {"busy_cycles", e.busy_cycles},
                         {"busy", cycles && row.pes ? static_cast<double>(e.busy_cycles) / (static_cast<double>(cycles) * row.pes) : 0.0},
                         {"bytes", e.bytes},
                         {"flops", e.flops}};
    out.push_back({{"where", row.where}, {"pes", row.pes}, {"engines", engines}});
  }
  return out;
}

// The fields every --json result ends with: wall time and, for tl kernels, utilisation.
void add_run_json(nlohmann::json& j, const RunInfo& info) {
  j["wall"] = {{"elaboration_seconds", info.elaboration_seconds}, {"simulation_seconds", info.simulation_seconds},
               {"peak_rss_kib", info.peak_rss_kib}, {"transactions", info.transactions}};
  if (info.use)
    j["utilisation"] = {{"sips", rows_json(info.use->sips, info.use->cycles)},
                        {"cubes", rows_json(info.use->cubes, info.use->cycles)}};
}

}  // namespace

long peak_rss_kib() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return u.ru_maxrss;
}

std::string format_stream(const Topology& topo, const StreamResult& r, const RunInfo& info) {
  const double ns_per_cycle = 1e9 / topo.pe.clock_hz;
  const double efficiency = r.achieved_bytes_per_cycle_per_pe / r.configured_bytes_per_cycle_per_pe;
  const double agg_tbs = static_cast<double>(r.total_bytes) /
                         (static_cast<double>(r.simulated_cycles) * ns_per_cycle * 1e-9) / 1e12;
  const double deviation = r.predicted_cycles
                               ? (static_cast<double>(r.simulated_cycles) - static_cast<double>(r.predicted_cycles)) /
                                     static_cast<double>(r.predicted_cycles)
                               : 0;
  Lines add;
  add("kernbench: hbm_stream on %s (%s)\n", info.topology_name.c_str(), info.topology_file.c_str());
  add("  workload        every PE %s %s %s its own HBM channel (%u PEs)\n",
      r.write ? "writes" : "reads", units::format_bytes(r.bytes_per_pe).c_str(),
      r.write ? "to" : "from", r.pes);
  add("  simulated       %llu cycles = %.3f us\n",
      static_cast<unsigned long long>(r.simulated_cycles),
      static_cast<double>(r.simulated_cycles) * ns_per_cycle / 1e3);
  add("  predicted       %llu cycles (burst pipeline: %s bursts, %u outstanding, %lluB/cycle, "
      "latency %llu)\n",
      static_cast<unsigned long long>(r.predicted_cycles),
      units::format_bytes(topo.pe.dma.burst_bytes).c_str(), topo.pe.dma.outstanding,
      static_cast<unsigned long long>(topo.cube.hbm.bytes_per_cycle),
      static_cast<unsigned long long>(topo.cube.hbm.latency_cycles));
  add("  model vs sim    %+.2f%%\n", deviation * 100);
  add("  bytes moved     %s\n", units::format_bytes(r.total_bytes).c_str());
  add("  bandwidth       %.2f B/cycle per channel of %.0f configured (%.1f%%); %.3f TB/s aggregate\n",
      r.achieved_bytes_per_cycle_per_pe, r.configured_bytes_per_cycle_per_pe, efficiency * 100,
      agg_tbs);
  run_lines(add, info);
  return add.text();
}


std::string format_kernel(const Topology& topo, const KernelSummary& k, const OpLog& log, const RunInfo& info) {
  const double ns = 1e9 / topo.pe.clock_hz;
  Lines add;
  add("kernbench: %s on %s (%s), %s mode, %u PEs\n", k.kernel.c_str(), info.topology_name.c_str(),
      info.topology_file.c_str(), k.data ? "data" : "timing", k.pes);
  add("  knobs           %s\n", k.knobs.dump().c_str());
  add("  simulated       %llu cycles = %.3f us\n", static_cast<unsigned long long>(k.cycles),
      static_cast<double>(k.cycles) * ns / 1e3);
  add("  op log          %zu records, hash %016llx\n", log.size(), static_cast<unsigned long long>(log.hash()));
  run_lines(add, info);
  return add.text();
}

nlohmann::json kernel_json(const Topology& topo, const KernelSummary& k, const OpLog& log, const RunInfo& info) {
  nlohmann::json j = {
      {"kernel", k.kernel},
      {"topology", {{"file", info.topology_file}, {"name", info.topology_name}}},
      {"mode", k.data ? "data" : "timing"},
      {"knobs", k.knobs},
      {"pes", k.pes},
      {"simulated_cycles", k.cycles},
      {"simulated_seconds", static_cast<double>(k.cycles) / topo.pe.clock_hz},
      {"op_log", {{"records", log.size()}, {"hash", log.hash()}}},
  };
  add_run_json(j, info);
  return j;
}

namespace {

std::string phase_text(const gqa::Phase& p) {
  if (p.end == 0) return "-";
  char buf[64];
  std::snprintf(buf, sizeof buf, "[%llu, %llu)", static_cast<unsigned long long>(p.begin),
                static_cast<unsigned long long>(p.end));
  return buf;
}

// The numerics, wall-time and simulator lines of an attention report.
std::string attention_tail(DType dtype, const std::optional<gqa::NumericCheck>& check, const RunInfo& info) {
  Lines add;
  if (check)
    add("  numerics        max |O - O_fp64| = %.3g; naive %s attention: %.3g; tolerance %.3g: %s\n", check->error,
        dtype_name(dtype), check->naive_error, check->tolerance, check->pass ? "PASS" : "FAIL");
  run_lines(add, info);
  return add.text();
}

// The wall-time and numerics fields of an attention result.
void add_attention_tail(nlohmann::json& j, const std::optional<gqa::NumericCheck>& check, const RunInfo& info) {
  add_run_json(j, info);
  if (check)
    j["numerics"] = {{"max_abs_error", check->error}, {"naive_error", check->naive_error},
                     {"tolerance", check->tolerance}, {"pass", check->pass}};
}

}  // namespace

std::string format_decode(const Topology& topo, const gqa::DecodeConfig& c, const gqa::DecodeResult& r,
                          const std::optional<gqa::NumericCheck>& check, const RunInfo& info) {
  const double ns = 1e9 / topo.pe.clock_hz;
  Lines add;
  add("kernbench: gqa_decode (%s) on %s (%s), %s mode\n", gqa::variant_name(c.variant), info.topology_name.c_str(),
      info.topology_file.c_str(), r.o ? "data" : "timing");
  shape_line(add, c.h_q, c.h_kv, c.d, c.s, c.t_q, c.causal, c.dtype);
  add("  placement       C %u cubes x P %u PEs per KV head, %u group(s) per SIP, devices %s; sweep tiles of %u rows\n",
      c.cubes, c.pes, r.groups_per_sip, gqa::devices_text(r.devices).c_str(), r.tile_rows);
  add("  simulated       %llu cycles = %.3f us\n", static_cast<unsigned long long>(r.cycles),
      static_cast<double>(r.cycles) * ns / 1e3);
  add("  breakdown       KV sweep %s, Level-2 reduce %s, Level-1 reduce %s, store %s (cycles)\n",
      phase_text(r.breakdown.sweep).c_str(), phase_text(r.breakdown.level2).c_str(),
      phase_text(r.breakdown.level1).c_str(), phase_text(r.breakdown.store).c_str());
  add("  bytes           K/V read %s\n", units::format_bytes(r.kv_bytes).c_str());
  add("  roofline        %.0f cycles (KV bytes over the HBM bandwidth of the %u PEs used): efficiency %.1f%%\n",
      r.roofline_cycles, c.h_kv * c.cubes * c.pes, 100.0 * r.roofline_cycles / static_cast<double>(r.cycles));
  const double dev = (static_cast<double>(r.cycles) - r.model_cycles) / r.model_cycles;
  add("  model           %.0f cycles (closed form: Q load + max(KV DMA, GEMMs) + last tile + reduce + store); "
      "simulated %+.1f%%%s\n",
      r.model_cycles, 100 * dev,
      std::abs(dev) <= 0.10 ? "" : " - over 10%: the model leaves out the CPU issue costs, the softmax MATH and "
                                  "the merges, which weigh most when each rank holds few KV rows");
  add("  ops             %llu tl ops issued\n", static_cast<unsigned long long>(r.issued_ops));
  return add.text() + attention_tail(c.dtype, check, info);
}

nlohmann::json decode_json(const Topology& topo, const gqa::DecodeConfig& c, const gqa::DecodeResult& r,
                           const std::optional<gqa::NumericCheck>& check, const RunInfo& info) {
  auto phase = [](const gqa::Phase& p) { return nlohmann::json{{"begin", p.begin}, {"end", p.end}}; };
  std::vector<std::uint32_t> devs;
  for (const SipId d : r.devices) devs.push_back(d.value);
  nlohmann::json j = {
      {"kernel", "gqa_decode"},
      {"topology", {{"file", info.topology_file}, {"name", info.topology_name}}},
      {"mode", r.o ? "data" : "timing"},
      {"knobs",
       {{"heads_q", c.h_q}, {"heads_kv", c.h_kv}, {"head_dim", c.d}, {"seq_len", c.s}, {"q_len", c.t_q},
        {"cubes_per_group", c.cubes}, {"pes", c.pes}, {"variant", gqa::variant_name(c.variant)},
        {"causal", c.causal}, {"dtype", dtype_name(c.dtype)}, {"tile_rows", r.tile_rows}, {"devices", devs}}},
      {"simulated_cycles", r.cycles},
      {"simulated_seconds", static_cast<double>(r.cycles) / topo.pe.clock_hz},
      {"breakdown",
       {{"kv_sweep", phase(r.breakdown.sweep)}, {"level2_reduce", phase(r.breakdown.level2)},
        {"level1_reduce", phase(r.breakdown.level1)}, {"store", phase(r.breakdown.store)}}},
      {"kv_bytes", r.kv_bytes},
      {"roofline_cycles", r.roofline_cycles},
      {"roofline_efficiency", r.roofline_cycles / static_cast<double>(r.cycles)},
      {"model_cycles", r.model_cycles},
      {"issued_ops", r.issued_ops},
  };
  add_attention_tail(j, check, info);
  return j;
}

std::string format_prefill(const Topology& topo, const gqa::PrefillConfig& c, const gqa::PrefillResult& r,
                           const std::optional<gqa::NumericCheck>& check, const RunInfo& info) {
  const double ns = 1e9 / topo.pe.clock_hz;
  Lines add;
  add("kernbench: gqa_prefill (%s) on %s (%s), %s mode\n", gqa::layout_name(c.layout), info.topology_name.c_str(),
      info.topology_file.c_str(), r.o ? "data" : "timing");
  shape_line(add, c.h_q, c.h_kv, c.d, c.s, c.q_len(), c.causal, c.dtype);
  add("  placement       C = G = %u cubes x P %u PEs per KV head (ring), %u group(s) per SIP, devices %s; chunks of "
      "%u KV rows, query tiles of %u rows\n",
      c.g(), c.pes, r.groups_per_sip, gqa::devices_text(r.devices).c_str(), c.chunk_rows, c.q_tile);
  add("  simulated       %llu cycles = %.3f us\n", static_cast<unsigned long long>(r.cycles),
      static_cast<double>(r.cycles) * ns / 1e3);
  add("  flops           %.4g (causal-aware attention); GEMMs did %.4g\n", r.flops, r.gemm_flops);
  add("  roofline        %.0f cycles (FLOPs over the GEMM peak of the %u PEs used): efficiency %.1f%%\n",
      r.roofline_cycles, c.h_kv * c.g() * c.pes, 100.0 * r.roofline_cycles / static_cast<double>(r.cycles));
  const double cyc = static_cast<double>(r.cycles);
  add("  breakdown       per PE on average: GEMM busy %.1f%%, program blocked on ring chunks %.1f%%, the rest "
      "(softmax MATH and state DMA not hidden, issue) %.1f%%\n",
      100.0 * r.busy_mean() / cyc, 100.0 * r.ring_wait_mean() / cyc,
      100.0 * std::max(0.0, cyc - r.busy_mean() - r.ring_wait_mean()) / cyc);
  add("  balance         max / mean PE GEMM busy = %.3f\n", r.busy_mean() > 0 ? r.busy_max / r.busy_mean() : 0.0);
  add("  ring            %llu KV chunk transfers, %s\n", static_cast<unsigned long long>(r.ring_transfers),
      units::format_bytes(r.ring_bytes).c_str());
  return add.text() + attention_tail(c.dtype, check, info);
}

nlohmann::json prefill_json(const Topology& topo, const gqa::PrefillConfig& c, const gqa::PrefillResult& r,
                            const std::optional<gqa::NumericCheck>& check, const RunInfo& info) {
  std::vector<std::uint32_t> devs;
  for (const SipId d : r.devices) devs.push_back(d.value);
  nlohmann::json j = {
      {"kernel", "gqa_prefill"},
      {"topology", {{"file", info.topology_file}, {"name", info.topology_name}}},
      {"mode", r.o ? "data" : "timing"},
      {"knobs",
       {{"heads_q", c.h_q}, {"heads_kv", c.h_kv}, {"head_dim", c.d}, {"seq_len", c.s}, {"q_len", c.q_len()},
        {"pes", c.pes}, {"layout", gqa::layout_name(c.layout)}, {"causal", c.causal},
        {"dtype", dtype_name(c.dtype)}, {"chunk_rows", c.chunk_rows}, {"q_tile", c.q_tile}, {"devices", devs}}},
      {"simulated_cycles", r.cycles},
      {"simulated_seconds", static_cast<double>(r.cycles) / topo.pe.clock_hz},
      {"flops", r.flops},
      {"gemm_flops", r.gemm_flops},
      {"roofline_cycles", r.roofline_cycles},
      {"roofline_efficiency", r.roofline_cycles / static_cast<double>(r.cycles)},
      {"gemm_busy", {{"mean", r.busy_mean()}, {"max", r.busy_max}}},
      {"ring_wait_mean", r.ring_wait_mean()},
      {"imbalance", r.busy_mean() > 0 ? r.busy_max / r.busy_mean() : 0.0},
      {"ring", {{"transfers", r.ring_transfers}, {"bytes", r.ring_bytes}}},
  };
  add_attention_tail(j, check, info);
  return j;
}

nlohmann::json stream_json(const Topology& topo, const StreamResult& r, const RunInfo& info) {
  nlohmann::json j = {
      {"kernel", "hbm_stream"},
      {"topology", {{"file", info.topology_file}, {"name", info.topology_name}}},
      {"knobs", {{"bytes_per_pe", r.bytes_per_pe}, {"write", r.write}, {"pes", r.pes}}},
      {"simulated_cycles", r.simulated_cycles},
      {"simulated_seconds", static_cast<double>(r.simulated_cycles) / topo.pe.clock_hz},
      {"predicted_cycles", r.predicted_cycles},
      {"total_bytes", r.total_bytes},
      {"bursts", r.bursts},
      {"achieved_bytes_per_cycle_per_pe", r.achieved_bytes_per_cycle_per_pe},
      {"configured_bytes_per_cycle_per_pe", r.configured_bytes_per_cycle_per_pe},
  };
  add_run_json(j, info);
  return j;
}

}  // namespace kb::report
