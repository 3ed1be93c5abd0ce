#pragma once
// Critical-path accounting (docs/critical_path.md). Every activity of the model (an
// engine command, a DMA burst, a message, a PE's program) carries a PathAccount: the
// time it has reached, split by cause along the chain of activities that held it back.
// An activity that waits for several things takes the account of the one it waited for
// last (join); its own time then adds under its own cause (advance). So the account of
// whatever finishes a run last splits the run's latency exactly, and no graph is kept.
#include <array>
#include <cstdint>
#include <deque>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "base/ids.h"

namespace kb {

// What a cycle on the critical path was spent on.
enum class Cause : std::uint8_t {
  Hbm,     // an HBM channel's wire (queueing and serialisation) and access latency
  Noc,     // mesh links: queueing, serialisation, hop latency
  Fabric,  // the cube fabric's ports and the IPCQ mailbox
  Gemm,    // the GEMM engine
  Math,    // the MATH engine
  Dma,     // the DMA engine itself (its ports), beyond the bursts' paths
  Cpu,     // the PE's CPU: issue costs
  Sync,    // waiting for a message whose path is not known (sent from outside the model)
  Link,    // links between SIPs: queueing, serialisation, latency
};
inline constexpr std::size_t kCauses = 9;
const char* cause_name(Cause c);

// No op-log record.
inline constexpr std::uint64_t kNoOp = std::numeric_limits<std::uint64_t>::max();

inline constexpr std::uint64_t kNoStep = std::numeric_limits<std::uint64_t>::max();
// The op of a step that stands for a chain's past in another process of a parallel
// simulation (docs/parallel.md): its `before` says where that past is (an import's number).
inline constexpr std::uint64_t kImported = kNoOp - 1;

// A step of a chain: it entered op-log record `op` at `at`, coming from step `before`.
struct PathStep {
  std::uint64_t op, at, before;
};
// The steps of the chains of the current run, indexed by number. Chains share their
// common past, so an account carries its whole history in one index and copies as a
// plain value; a step takes 24 bytes per op a chain enters. The runtime empties it when
// a run starts (an account of an earlier run is never joined: its time is earlier).
std::deque<PathStep>& path_steps();
// Whether chains record their steps (on by default). Only the op log's critical spans
// use them: a run that keeps no op log turns them off.
inline bool path_steps_on = true;
inline void keep_path_steps(bool on) { path_steps_on = on; }
inline bool path_steps_kept() { return path_steps_on; }

struct PathAccount {
  std::uint64_t at = 0;                        // simulated time reached (kernel time ticks)
  std::array<std::uint64_t, kCauses> spent{};  // ticks per cause; they sum to at - the start
  std::uint64_t step = kNoStep;                // where the chain is in path_steps()
  std::uint64_t op = kNoOp;                    // the op-log record it is in now (the step's
                                               // op, kept here: enter() compares it often)

  static PathAccount starting(std::uint64_t t) {
    PathAccount a;
    a.at = t;
    return a;
  }
  // The time up to `to` was spent on `c`.
  void advance(std::uint64_t to, Cause c) {
    if (to <= at) return;
    spent[static_cast<std::size_t>(c)] += to - at;
    at = to;
  }
  // This activity also waited for `other`: the later of the two holds it back (on a tie,
  // the one already held).
  void join(const PathAccount& other) {
    if (other.at > at) *this = other;
  }
  // The chain goes on inside op-log record `id`.
  void enter(std::uint64_t id) {
    if (id == op) return;
    op = id;
    if (!path_steps_kept()) return;
    std::deque<PathStep>& steps = path_steps();
    steps.push_back({id, at, step});
    step = steps.size() - 1;
  }
  // The chain came from another process of a parallel simulation, whose history its step
  // indexes there: here it goes on from import number `import` (and in no op yet).
  void imported(std::uint64_t import) {
    op = kNoOp;
    if (step == kNoStep || !path_steps_kept()) return;
    path_steps().push_back({kImported, at, import});
    step = path_steps().size() - 1;
  }
  std::uint64_t total() const;
};

// A run's critical path in cycles per cause, largest first (ties in Cause order); the
// values sum to the latency.
struct CriticalPath {
  std::vector<std::pair<std::string, std::uint64_t>> cycles;
  // The PE whose program ends the path. Of programs that end at once, the first in PE
  // order: so parts of a split run pick the one a single process picks.
  std::optional<PeCoord> end;
  std::uint64_t total() const;
  std::uint64_t of(const std::string& cause) const;  // 0 for a cause not on the path
};

// `account` in cycles of `cycle_ticks` ticks. Each cause is rounded down and the
// remainders go, in whole cycles, to the causes with the largest remainders, so the
// cycles sum to the account's total rounded to the nearest cycle.
CriticalPath critical_path(const PathAccount& account, std::uint64_t cycle_ticks);

}  // namespace kb
