#pragma once
// Base of the PE engines: a command target socket, a FIFO per lane (an engine lane
// serves one command at a time — that is its contention), and the response path.
#include <cstdint>
#include <deque>
#include <vector>

#include <systemc>
#include <tlm>
#include <tlm_utils/peq_with_cb_and_phase.h>
#include <tlm_utils/simple_target_socket.h>

#include "models/common/ports.h"
#include "models/pe/command.h"
#include "platform/topology.h"

namespace kb {

class PeEngine : public sc_core::sc_module {
 public:
  tlm_utils::simple_target_socket<PeEngine> command;

  std::uint64_t commands_done() const { return commands_done_; }
  sc_core::sc_time busy() const { return busy_; }  // service time summed over commands
  std::size_t queued() const;                       // waiting + in service

 protected:
  PeEngine(const sc_core::sc_module_name& name, const Topology& topo, std::size_t lanes);

  virtual std::size_t lane_of(const Command&) const { return 0; }
  // Begins serving a command; the engine calls finish() when the service ends.
  virtual void start(tlm::tlm_generic_payload& gp, Command& cmd) = 0;
  // Runs when a command's service ends, before its response (data-mode results land here).
  virtual void completed(Command&) {}
  void finish_after(tlm::tlm_generic_payload& gp, const sc_core::sc_time& delay);
  void finish(tlm::tlm_generic_payload& gp);
  // Lets the lane start its next command while this one is still completing (e.g. a DMA
  // command whose bursts are all issued and in flight).
  void release(tlm::tlm_generic_payload& gp);

  sc_core::sc_time cycles(std::uint64_t n) const { return cycle_ * static_cast<double>(n); }
  const Topology& topo_;

 private:
  struct Lane {
    std::deque<tlm::tlm_generic_payload*> waiting;
    tlm::tlm_generic_payload* current = nullptr;  // the command the lane is serving
  };
  tlm::tlm_sync_enum nb_transport_fw(tlm::tlm_generic_payload& gp, tlm::tlm_phase& phase,
                                     sc_core::sc_time& delay);
  void start_next(Lane& lane);
  void on_timer(tlm::tlm_generic_payload& gp, const tlm::tlm_phase& phase);

  sc_core::sc_time cycle_;
  std::vector<Lane> lanes_;
  Responder responder_;
  tlm_utils::peq_with_cb_and_phase<PeEngine> timer_;
  std::uint64_t commands_done_ = 0;
  sc_core::sc_time busy_ = sc_core::SC_ZERO_TIME;
};

}  // namespace kb
