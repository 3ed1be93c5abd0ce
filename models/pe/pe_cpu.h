#pragma once
// PeCpu: runs the PE's program (later: a tl kernel) as an SC_THREAD. It issues commands
// to PeScheduler without blocking and waits only for the ones it needs.
#include <deque>
#include <functional>

#include <systemc>

#include "models/common/ids.h"
#include "models/common/payload_pool.h"
#include "models/common/ports.h"
#include "models/pe/command.h"

namespace kb {

class PeCpu : public sc_core::sc_module {
 public:
  using Program = std::function<void(PeCpu&)>;

  InitiatorPort port;  // to PeScheduler

  PeCpu(const sc_core::sc_module_name& name, PeCoord self);

  // Sets the program; it starts at the current simulated time (0 before sc_start).
  void load(Program program);
  bool finished() const { return finished_; }
  const sc_core::sc_event& finished_event() const { return finished_event_; }
  PeCoord coord() const { return self_; }

  // Called from the program: issue without blocking; wait for one or for all.
  Command& issue(const Command& command);
  void wait(const Command& command);
  void wait_all();

 private:
  void run();
  void completed(tlm::tlm_generic_payload& gp);

  PeCoord self_;
  Program program_;
  sc_core::sc_event program_loaded_, completed_, finished_event_;
  bool finished_ = false;
  std::deque<Command> commands_;
  std::size_t pending_ = 0;
  PayloadPool pool_;
};

}  // namespace kb
