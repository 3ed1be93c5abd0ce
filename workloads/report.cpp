#include "workloads/report.h"

#include <sys/resource.h>

#include "base/units.h"

namespace kb::report {

void shape_line(Lines& add, const nlohmann::json& k) {
  const std::uint32_t h_q = k.at("heads_q"), h_kv = k.at("heads_kv");
  if (k.contains("model")) add("  model           %s\n", k.at("model").get<std::string>().c_str());
  add("  shape           H_q %u, H_kv %u (G %u), d %u, S %llu, T_q %u, %s, %s\n", h_q, h_kv, h_q / h_kv,
      k.at("head_dim").get<std::uint32_t>(), k.at("seq_len").get<unsigned long long>(),
      k.at("q_len").get<std::uint32_t>(), k.at("causal").get<bool>() ? "causal" : "not causal",
      k.at("dtype").get<std::string>().c_str());
}

std::string span_text(const nlohmann::json& span) {
  if (span.at("end") == 0) return "-";
  char text[64];
  std::snprintf(text, sizeof text, "[%llu, %llu)", span.at("begin").get<unsigned long long>(),
                span.at("end").get<unsigned long long>());
  return text;
}

void simulated_line(Lines& add, const workloads::Result& r) {
  add("  simulated       %llu cycles = %.3f us\n", static_cast<unsigned long long>(r.simulated_cycles),
      r.simulated_seconds * 1e6);
}

std::string tail(const workloads::Result& r) {
  Lines add;
  if (r.numerics && r.knobs.contains("dtype"))
    add("  numerics        max |O - O_fp64| = %.3g; naive %s attention: %.3g; tolerance %.3g: %s\n", r.numerics->error,
        r.knobs.at("dtype").get<std::string>().c_str(), r.numerics->naive_error, r.numerics->tolerance,
        r.numerics->pass ? "PASS" : "FAIL");
  else if (r.numerics)  // a collective: its error relative to the magnitudes it reduced
    add("  numerics        max |x - x_fp64| / sum |x| = %.3g; tolerance %.3g: %s\n", r.numerics->error,
        r.numerics->tolerance, r.numerics->pass ? "PASS" : "FAIL");
  if (!r.critical_path.cycles.empty()) {
    add("  critical path   %-8s %12s %7s   (the chain of waits that sets the latency)\n", "cause", "cycles", "share");
    for (const auto& [cause, cycles] : r.critical_path.cycles)
      add("                  %-8s %12llu %6.1f%%\n", cause.c_str(), static_cast<unsigned long long>(cycles),
          r.simulated_cycles ? 100.0 * static_cast<double>(cycles) / static_cast<double>(r.simulated_cycles) : 0.0);
  }
  if (r.energy) {
    const Energy& e = *r.energy;
    add("  energy          %.4g J over %.4g ms: %.4g W on average%s\n", e.total_joules,
        1e3 * e.seconds, e.watts(), r.has("energy.joules_per_token") ? "" : " (docs/energy.md)");
    if (r.has("energy.joules_per_token"))
      add("                  %.4g J a token, %.4g pJ a FLOP (the whole step)\n",
          r.number("energy.joules_per_token"), r.number("energy.pj_per_flop"));
    std::string causes;
    for (std::size_t c = 0; c < kEnergyCauses; ++c) {
      char part[64];
      std::snprintf(part, sizeof part, "%s%s %.1f%%", c ? ", " : "", kEnergyCauseNames[c],
                    e.total_joules > 0 ? 100 * e.by_cause[c] / e.total_joules : 0.0);
      causes += part;
    }
    add("                  by cause: %s\n", causes.c_str());
  }
  if (r.use) {
    add("  utilisation     %-16s %-6s %7s %12s %12s   (busy: %% of the run, mean over the PEs that ran)\n", "where",
        "engine", "busy", "bytes", "flops");
    for (const UseRow& row : r.use->sips) {
      const std::string where = row.where + " (" + std::to_string(row.pes) + " PEs)";
      for (const auto& [engine, e] : row.engines) {
        const double busy = r.use->cycles && row.pes ? 100.0 * static_cast<double>(e.busy_cycles) /
                                                           (static_cast<double>(r.use->cycles) * row.pes)
                                                     : 0;
        add("                  %-16s %-6s %6.1f%% %12s %12.3g\n", where.c_str(), engine.c_str(), busy,
            units::format_bytes(e.bytes).c_str(), static_cast<double>(e.flops));
      }
    }
    for (const LinkUse& l : r.use->links)
      add("                  %-16s %-6s %6.1f%% %12s %12s   %llu messages\n", l.name.c_str(), "link",
          r.use->cycles ? 100.0 * static_cast<double>(l.busy_cycles) / static_cast<double>(r.use->cycles) : 0.0,
          units::format_bytes(l.bytes).c_str(), "", static_cast<unsigned long long>(l.messages));
  }
  const workloads::Wall& w = r.wall;
  add("  wall time       elaboration %.3f s, simulation %.3f s, peak RSS %.1f MiB\n", w.elaboration_seconds,
      w.simulation_seconds, static_cast<double>(w.peak_rss_kib) / 1024);
  add("  simulator       %llu transactions, %.0f transactions/s\n", static_cast<unsigned long long>(w.transactions),
      w.simulation_seconds > 0 ? static_cast<double>(w.transactions) / w.simulation_seconds : 0.0);
  return add.text();
}

long peak_rss_kib() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return u.ru_maxrss;
}

}  // namespace kb::report
