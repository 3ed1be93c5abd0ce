#include "platform/energy.h"

#include <algorithm>
#include <cstdio>
#include <map>
#include <string_view>

namespace kb {

namespace {

enum Cause : std::size_t { Hbm, Tcm, Fabric, Noc, Link, Gemm, Math, Cpu, Static };

// Each counted event's cause and price (pJ an event).
struct Priced {
  std::size_t cause;
  double picojoules;
};

std::array<Priced, kActs> prices_of(const Topology::EnergySpec& e) {
  std::array<Priced, kActs> p{};
  p[act_index(Act::HbmRead)] = {Hbm, e.hbm_read};
  p[act_index(Act::HbmWrite)] = {Hbm, e.hbm_write};
  p[act_index(Act::TcmRead)] = {Tcm, e.tcm_read};
  p[act_index(Act::TcmWrite)] = {Tcm, e.tcm_write};
  p[act_index(Act::Fabric)] = {Fabric, e.fabric};
  p[act_index(Act::Noc)] = {Noc, e.noc};
  p[act_index(Act::Link)] = {Link, e.link};
  p[act_index(Act::Mac)] = {Gemm, e.gemm_mac};
  p[act_index(Act::CpuOp)] = {Cpu, e.cpu_op};
  const std::vector<std::string>& ops = Topology::math_ops();
  for (std::size_t i = 0; i < kMathActs; ++i)
    p[act_index(Act::MathOps) + i] = {Math, e.math.at(ops.at(i))};
  return p;
}

}  // namespace

std::vector<SipActivity> activity_of(const System& system, const std::vector<SipId>& sips) {
  std::vector<SipActivity> out;
  for (const SipId s : sips) {
    if (!system.has(s)) continue;
    const ActivityMeter& m = system.activity(s);
    out.push_back({s, m.totals(), m.window_cycles(), m.windows()});
  }
  return out;
}

std::vector<SipActivity> merge_activity(const std::vector<std::vector<SipActivity>>& parts) {
  std::map<std::uint32_t, SipActivity> by_sip;
  for (const auto& part : parts)
    for (const SipActivity& a : part) {
      auto [it, fresh] = by_sip.try_emplace(a.sip.value, a);
      if (fresh) continue;
      SipActivity& m = it->second;
      const std::uint64_t cycles = std::max(m.window_cycles, a.window_cycles);
      std::vector<ActCounts> mine = coarsen(std::move(m.windows), m.window_cycles, cycles);
      const std::vector<ActCounts> theirs = coarsen(a.windows, a.window_cycles, cycles);
      mine.resize(std::max(mine.size(), theirs.size()), ActCounts{});
      for (std::size_t w = 0; w < theirs.size(); ++w) add_into(mine[w], theirs[w]);
      add_into(m.totals, a.totals);
      m.windows = std::move(mine);
      m.window_cycles = cycles;
    }
  std::vector<SipActivity> out;
  for (auto& [sip, a] : by_sip) out.push_back(std::move(a));
  return out;
}

std::array<double, kActs> as_doubles(const ActCounts& counts) {
  std::array<double, kActs> out{};
  for (std::size_t a = 0; a < kActs; ++a) out[a] = static_cast<double>(counts[a]);
  return out;
}

std::array<double, kActs> counts_between(const SipActivity& a, double begin, double end) {
  std::array<double, kActs> out{};
  const auto w = static_cast<double>(a.window_cycles);
  for (std::size_t i = 0; i < a.windows.size(); ++i) {
    const double lo = static_cast<double>(i) * w,
                 inside = std::min(lo + w, end) - std::max(lo, begin);
    if (inside <= 0) continue;
    for (std::size_t e = 0; e < kActs; ++e)
      out[e] += static_cast<double>(a.windows[i][e]) * (inside / w);
  }
  return out;
}

CauseJoules dynamic_joules(const std::array<double, kActs>& counts,
                           const Topology::EnergySpec& prices) {
  const std::array<Priced, kActs> p = prices_of(prices);
  CauseJoules j{};
  for (std::size_t a = 0; a < kActs; ++a) j[p[a].cause] += counts[a] * p[a].picojoules * 1e-12;
  return j;
}

double static_watts(const Topology& topo, std::size_t sips) {
  return static_cast<double>(sips) * topo.static_watts_per_sip();
}

Energy energy_of(const CauseJoules& dynamic, double static_power, double seconds) {
  Energy e;
  e.seconds = seconds;
  e.by_cause = dynamic;
  e.by_cause[Static] = static_power * seconds;
  // Summed in the causes' alphabetical order, the order the JSON lists them in, so that
  // adding up the JSON's by_cause gives its total_joules to the bit.
  std::array<std::size_t, kEnergyCauses> order{};
  for (std::size_t c = 0; c < kEnergyCauses; ++c) order[c] = c;
  std::sort(order.begin(), order.end(), [](std::size_t a, std::size_t b) {
    return std::string_view(kEnergyCauseNames[a]) < kEnergyCauseNames[b];
  });
  for (const std::size_t c : order) e.total_joules += e.by_cause[c];
  return e;
}

Energy account(const std::vector<SipActivity>& activity, const Topology& topo, std::size_t sips,
               double seconds) {
  ActCounts counts{};
  for (const SipActivity& a : activity) add_into(counts, a.totals);
  return energy_of(dynamic_joules(as_doubles(counts), topo.energy), static_watts(topo, sips),
                   seconds);
}

std::vector<PowerTrack> power_tracks(const std::vector<SipActivity>& activity, const Topology& topo,
                                     std::uint64_t cycles) {
  std::uint64_t window = 1;
  for (const SipActivity& a : activity) window = std::max(window, a.window_cycles);
  const double cycle_seconds = 1.0 / topo.pe.clock_hz;
  const std::uint64_t count = (cycles + window - 1) / window;
  std::vector<PowerTrack> out;
  for (const SipActivity& a : activity) {
    std::vector<ActCounts> windows = coarsen(a.windows, a.window_cycles, window);
    // What a SIP counted after the run's end (a response still on its way) goes in its last window.
    for (std::size_t w = count; count > 0 && w < windows.size(); ++w)
      add_into(windows[count - 1], windows[w]);
    windows.resize(count, ActCounts{});
    PowerTrack t{a.sip, window, {}};
    for (std::uint64_t w = 0; w < count; ++w) {
      const std::uint64_t begin = w * window, end = std::min(begin + window, cycles);
      const double seconds = static_cast<double>(end - begin) * cycle_seconds;
      const CauseJoules dynamic = dynamic_joules(as_doubles(windows[w]), topo.energy);
      CauseJoules watts{};
      for (std::size_t c = 0; c < kEnergyCauses; ++c) watts[c] = dynamic[c] / seconds;
      watts[Static] = static_watts(topo, 1);
      t.watts.push_back(watts);
    }
    out.push_back(std::move(t));
  }
  return out;
}

std::string power_csv(const std::vector<PowerTrack>& tracks, std::uint64_t cycles) {
  std::string out = "sip,start_cycle,end_cycle";
  for (const char* c : kEnergyCauseNames) out += std::string(",") + c + "_W";
  out += ",total_W\n";
  char buf[64];
  for (const PowerTrack& t : tracks)
    for (std::size_t w = 0; w < t.watts.size(); ++w) {
      const std::uint64_t begin = w * t.window_cycles;
      out += std::to_string(t.sip.value) + "," + std::to_string(begin) + "," +
             std::to_string(std::min(begin + t.window_cycles, cycles));
      double total = 0;
      for (const double watts : t.watts[w]) {
        std::snprintf(buf, sizeof buf, ",%.12g", watts);
        out += buf;
        total += watts;
      }
      std::snprintf(buf, sizeof buf, ",%.12g\n", total);
      out += buf;
    }
  return out;
}

}  // namespace kb
