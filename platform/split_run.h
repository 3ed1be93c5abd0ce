#pragma once
// One process's share of a run of coupled SIPs split over processes (run --jobs, mpirun;
// docs/parallel.md): it simulates its own SIPs, and what the links carry to the SIPs of
// other processes goes there. Conservative synchronisation in time windows: no message
// crosses between SIPs in less than the smallest link latency L, so a window [G, G + L),
// where G is the earliest event or message of any process, can be simulated by every
// process at once; the messages it sends to other processes all arrive at G + L or later,
// and are handed over between windows. Each SIP keeps its events' order (its dispatch
// domain, and its Inbound's own order of what the links bring), so the run is the serial
// one, byte for byte.
#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "base/op_log.h"
#include "models/sip/system.h"
#include "platform/critical_path.h"

namespace kb {

// How the processes of a split run talk (pipes through the parent for --jobs, MPI under
// mpirun): each round, every process sends one message and receives everyone's.
class PartExchange {
 public:
  virtual ~PartExchange() = default;
  virtual std::uint32_t rank() const = 0;   // this process, from 0
  virtual std::uint32_t parts() const = 0;  // how many there are
  // Every process's message of this round, in rank order, this one's included. Every
  // process calls it the same number of times.
  virtual std::vector<std::string> all_gather(const std::string& mine) = 0;
};

class SplitRun {
 public:
  // Why a window loop ended.
  enum class End : std::uint8_t { Done, Limit, Timeout };

  // This process simulates the SIPs `system` built. Learns every process's, and sends
  // what the links bring to the others' SIPs away.
  SplitRun(System& system, PartExchange& exchange);
  ~SplitRun();  // links deliver here again
  SplitRun(const SplitRun&) = delete;
  SplitRun& operator=(const SplitRun&) = delete;

  // Simulates window by window until no process has an event or message left (Done),
  // until the next one is after `limit` (sc_time value; Limit), or until a process's
  // `timed_out()` says so (Timeout). Every process ends in the same window.
  template <class TimedOut>
  End simulate(std::uint64_t limit, TimedOut&& timed_out) {
    for (;;) {
      const Round r = round(timed_out());
      if (r.stop) return End::Timeout;
      if (r.next == kNever) return End::Done;
      if (r.next > limit) return End::Limit;
      window(limit - r.next < lookahead_ ? limit + 1 : r.next + lookahead_);
    }
  }
  // Finishes the critical-path walks that reached other processes (`away`, this
  // process's), and those others' that reach here: their spans go to `spans`.
  void finish_spans(std::map<std::uint64_t, CriticalSpans>& spans, std::vector<AwayWalk> away,
                    const sc_core::sc_time& origin, const sc_core::sc_time& cycle);

 private:
  static constexpr std::uint64_t kNever = ~std::uint64_t{0};
  struct Round {
    std::uint64_t next;  // the earliest event or message of any process
    bool stop;
  };
  // Sends this window's messages for other processes with this process's next event
  // time; takes in those for its SIPs.
  Round round(bool timed_out);
  void window(std::uint64_t end);  // simulates every event before `end`

  static constexpr std::uint32_t kNobody = ~std::uint32_t{0};
  System& system_;
  PartExchange& exchange_;
  std::vector<SipId> local_;
  std::vector<std::uint32_t> rank_of_sip_;
  std::uint64_t lookahead_;
  std::vector<std::pair<std::uint32_t, LinkPacket>> outbox_;  // (SIP, message)
  std::vector<std::pair<std::uint32_t, std::uint64_t>> imports_;  // (rank, its step) of chains that came in
};

}  // namespace kb
