#pragma once
// What the machine does, counted where it happens (docs/energy.md): the bytes each kind
// of memory and wire moves, the GEMM arrays' MACs, the MATH engines' lane-ops by op and
// the ops the CPUs issue. The models count; the energy accountant (platform/energy.h)
// prices the counts, so no price lives in a model and a price changed moves only its
// own cause.
#include <array>
#include <cstdint>
#include <string>
#include <systemc>
#include <vector>

namespace kb {

// The counted events. The MATH engine's lane-ops follow MathOps, one an op of
// pe.math.cycles, in Topology::math_ops() order.
enum class Act : std::uint8_t {
  HbmRead,
  HbmWrite,
  TcmRead,
  TcmWrite,
  Fabric,
  Noc,
  Link,
  Mac,
  CpuOp,
  MathOps
};
inline constexpr std::size_t kMathActs =
    10;  // Topology::math_ops().size(), checked where the MATH engine maps its ops
inline constexpr std::size_t kActs = static_cast<std::size_t>(Act::MathOps) + kMathActs;
using ActCounts = std::array<std::uint64_t, kActs>;
inline constexpr std::size_t act_index(Act a) { return static_cast<std::size_t>(a); }
inline void add_into(ActCounts& sum, const ActCounts& part) {
  for (std::size_t a = 0; a < kActs; ++a) sum[a] += part[a];
}
// "hbm_read_bytes", "noc_hop_bytes", "gemm_macs", "math_exp_ops", ...: the count's name in results.
const std::string& act_name(std::size_t act);

// Where a System's meters count time from (the runtime simulates one unit after another,
// each from its own start) and how long their first windows are.
struct ActivityClock {
  sc_core::sc_time origin = sc_core::SC_ZERO_TIME;
  std::uint64_t window_cycles = 1024;
  sc_core::sc_time cycle;
};

// One SIP's counts: in all, and in windows of time from the clock's origin (an event
// counts in the window it starts in). A meter holds at most kMostWindows windows: when a
// run outgrows them it joins them in pairs and its windows are twice as long, so a long
// run keeps a bounded trace and joining a finer meter's windows in pairs reproduces it.
class ActivityMeter {
 public:
  static constexpr std::size_t kMostWindows = 16384;

  explicit ActivityMeter(const ActivityClock& clock) : clock_(&clock) {}

  void add(Act a, std::uint64_t amount, const sc_core::sc_time& at) {
    add(act_index(a), amount, at);
  }
  void add(std::size_t act, std::uint64_t amount, const sc_core::sc_time& at);

  const ActCounts& totals() const { return totals_; }
  const std::vector<ActCounts>& windows() const { return windows_; }
  std::uint64_t window_cycles() const { return clock_->window_cycles << doublings_; }

 private:
  const ActivityClock* clock_;
  ActCounts totals_{};
  std::vector<ActCounts> windows_;
  std::uint32_t doublings_ = 0;
};

// Joins `windows` in pairs until each is `cycles` long (a multiple of `from` by a power of two).
std::vector<ActCounts> coarsen(std::vector<ActCounts> windows, std::uint64_t from,
                               std::uint64_t cycles);

}  // namespace kb
