#pragma once
// The energy accountant (docs/energy.md): prices what the models counted (ActivityMeter,
// one a SIP) at the topology's `energy:` prices and adds the static power of the run's
// SIPs for its whole time. Counts stay whole numbers until they are priced, so the parts
// of a split run add up to the serial run's counts exactly, and a price changed moves its
// own cause alone.
#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "base/ids.h"
#include "base/topology.h"
#include "models/common/activity.h"
#include "models/sip/system.h"

namespace kb {

// The causes of a run's energy, in report order.
inline constexpr std::size_t kEnergyCauses = 9;
inline constexpr std::array<const char*, kEnergyCauses> kEnergyCauseNames = {
    "hbm", "tcm", "fabric", "noc", "link", "gemm", "math", "cpu", "static"};
using CauseJoules = std::array<double, kEnergyCauses>;

// One SIP's counts of a run: in all, and in windows of `window_cycles` from its start.
struct SipActivity {
  SipId sip;
  ActCounts totals{};
  std::uint64_t window_cycles = 0;
  std::vector<ActCounts> windows;
};

// The activity of each SIP of `sips`, from the System's meters.
std::vector<SipActivity> activity_of(const System& system, const std::vector<SipId>& sips);
// The parts' activity of one run: a SIP's windows brought to the longest window any part
// has (joined in pairs) and added, as its totals.
std::vector<SipActivity> merge_activity(const std::vector<std::vector<SipActivity>>& parts);

// Joules of `counts` (an ActCounts, or a share of one) by cause, static left 0.
CauseJoules dynamic_joules(const std::array<double, kActs>& counts,
                           const Topology::EnergySpec& prices);
std::array<double, kActs> as_doubles(const ActCounts& counts);
// What `a` counted from cycle `begin` to `end` of its windows: a window the span cuts
// counts by the share of it inside (its events spread evenly over it).
std::array<double, kActs> counts_between(const SipActivity& a, double begin, double end);
// Watts the run's `sips` SIPs draw whatever they do: each SIP's, its cubes' and its PEs'.
double static_watts(const Topology& topo, std::size_t sips);

struct Energy {
  double total_joules = 0;  // the sum of by_cause, in kEnergyCauseNames order
  CauseJoules by_cause{};
  double seconds = 0;  // the time the static power is charged for
  double watts() const { return seconds > 0 ? total_joules / seconds : 0; }
};
// by_cause (static: static_watts x seconds) and its sum.
Energy energy_of(const CauseJoules& dynamic, double static_power, double seconds);
// The energy of a run of `seconds` on `sips` SIPs that did `activity`.
Energy account(const std::vector<SipActivity>& activity, const Topology& topo, std::size_t sips,
               double seconds);

// Power over the run, per SIP and cause: watts[w][cause] in the windows of the SIPs'
// longest window, up to `cycles`.
struct PowerTrack {
  SipId sip;
  std::uint64_t window_cycles = 0;
  std::vector<CauseJoules> watts;
};
std::vector<PowerTrack> power_tracks(const std::vector<SipActivity>& activity, const Topology& topo,
                                     std::uint64_t cycles);
// The tracks as CSV: sip, start_cycle, end_cycle, a column of watts per cause, total_W.
std::string power_csv(const std::vector<PowerTrack>& tracks, std::uint64_t cycles);

}  // namespace kb
