#pragma once
// Base of the PE engines: a command target socket, a FIFO per lane (an engine lane
// serves one command at a time — that is its contention), and the response path.
#include <tlm_utils/simple_target_socket.h>

#include <cstdint>
#include <deque>
#include <systemc>
#include <tlm>
#include <vector>

#include "base/topology.h"
#include "models/common/activity.h"
#include "models/common/path_extension.h"
#include "models/common/payload_queue.h"
#include "models/common/ports.h"
#include "models/common/sim_time.h"
#include "models/common/waveform.h"
#include "models/pe/command.h"

namespace kb {

class PeEngine : public sc_core::sc_module {
 public:
  tlm_utils::simple_target_socket<PeEngine> command;

  std::uint64_t commands_done() const { return commands_done_; }
  sc_core::sc_time busy() const { return busy_; }      // service time summed over commands
  sc_core::sc_time active() const { return active_; }  // time with a command in service (lanes merged)
  std::uint64_t bytes_moved() const { return bytes_moved_; }  // DMA and message bytes
  std::uint64_t flops_done() const { return flops_done_; }    // 2mnk per GEMM, one per element of a vector op
  std::size_t queued() const;                       // waiting + in service

  // Sets `flag` when it serves a command that a held command waits for
  // (Command::holding): the PE scheduler that holds it looks again only then.
  void report_blockers_served(bool& flag) { blockers_served_ = &flag; }

  // Records per lane a busy wire (a command in service: started, not finished) and the
  // queue depth (accepted, not finished) into `wave`, if its filter takes this engine.
  void record_to(Waveform& wave);
  // Counts what its commands do (bytes of TCM, MACs, lane-ops) into `meter`.
  void count_into(ActivityMeter& meter) { meter_ = &meter; }

 protected:
  // `cause`: what a command's own service time counts as on the critical path.
  PeEngine(const sc_core::sc_module_name& name, const Topology& topo, std::size_t lanes, Cause cause);

  virtual std::size_t lane_of(const Command&) const { return 0; }
  // The lane's name in traces ("" for an engine of one lane).
  virtual const char* lane_name(std::size_t) const { return ""; }
  // Begins serving a command; the engine calls finish() when the service ends.
  virtual void start(tlm::tlm_generic_payload& gp, Command& cmd) = 0;
  // Runs when a command's service ends, before its response (data-mode results land here).
  virtual void completed(Command&) {}
  void finish_after(tlm::tlm_generic_payload& gp, const sc_core::sc_time& delay);
  void add_work(std::uint64_t bytes, std::uint64_t flops) {
    bytes_moved_ += bytes;
    flops_done_ += flops;
  }
  // `amount` of `act` now, in the meter given (if any).
  void tally(Act act, std::uint64_t amount) { tally(act_index(act), amount); }
  void tally(std::size_t act, std::uint64_t amount) {
    if (meter_ != nullptr && amount > 0) meter_->add(act, amount, sim_time());
  }
  void finish(tlm::tlm_generic_payload& gp);
  // Lets the lane start its next command while this one is still completing (e.g. a DMA
  // command whose bursts are all issued and in flight); `path`: where the lane's
  // critical-path account stands then (the next command waited for it).
  void release(tlm::tlm_generic_payload& gp, const PathAccount& path);

  sc_core::sc_time cycles(std::uint64_t n) const { return cycle_ * static_cast<double>(n); }
  const Topology& topo_;

 private:
  struct Lane {
    std::deque<tlm::tlm_generic_payload*> waiting;
    tlm::tlm_generic_payload* current = nullptr;  // the command the lane is serving
    std::uint32_t in_service = 0;                 // started, not finished (release() overlaps them)
    int busy_signal = -1;
    PathAccount freed;  // the account of the lane's last release
  };
  void traced(int signal, std::uint64_t value) {
    if (wave_ != nullptr) wave_->set(signal, sim_time(), value);
  }
  tlm::tlm_sync_enum nb_transport_fw(tlm::tlm_generic_payload& gp, tlm::tlm_phase& phase,
                                     sc_core::sc_time& delay);
  void start_next(Lane& lane);
  void release(Lane& lane, tlm::tlm_generic_payload& gp, const PathAccount& path);
  void on_timer(tlm::tlm_generic_payload& gp, const tlm::tlm_phase& phase);

  sc_core::sc_time cycle_;
  Cause cause_;
  std::vector<Lane> lanes_;
  Responder responder_;
  PayloadQueue<PeEngine> timer_;
  std::uint64_t commands_done_ = 0;
  std::uint32_t depth_ = 0;       // accepted, not finished
  std::uint32_t in_service_ = 0;  // over all lanes
  sc_core::sc_time active_ = sc_core::SC_ZERO_TIME, active_since_ = sc_core::SC_ZERO_TIME;
  std::uint64_t bytes_moved_ = 0, flops_done_ = 0;
  Waveform* wave_ = nullptr;
  ActivityMeter* meter_ = nullptr;
  bool* blockers_served_ = nullptr;
  int queue_signal_ = -1;
  sc_core::sc_time busy_ = sc_core::SC_ZERO_TIME;
};

}  // namespace kb
