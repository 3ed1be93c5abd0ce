#pragma once
// PeCpu: runs the PE's program (a tl kernel) as an SC_THREAD. It issues commands to
// PeScheduler without blocking and waits only for the ones it needs; `spend` charges
// the CPU's own issue cycles. An exception thrown by the program is kept for the host
// to report and stops the simulation (or, with an error hook, calls the hook instead).
// abort() stops a program where it stands (a platform's reset).
#include <exception>
#include <functional>
#include <systemc>

#include "base/ids.h"
#include "base/topology.h"
#include "models/common/activity.h"
#include "models/common/dispatch.h"
#include "models/common/payload_pool.h"
#include "models/common/ports.h"
#include "models/pe/command.h"

namespace kb {

class PeCpu : public sc_core::sc_module {
 public:
  using Program = std::function<void(PeCpu&)>;
  using CompletionHook = std::function<void(const Command&)>;

  InitiatorPort port;  // to PeScheduler

  PeCpu(const sc_core::sc_module_name& name, const Topology& topo, PeCoord self);

  // Sets the program; it starts at the current simulated time (0 before sc_start).
  void load(Program program);
  bool finished() const { return finished_; }
  bool running() const { return static_cast<bool>(program_) || started_; }
  const sc_core::sc_event& finished_event() const { return finished_event_; }
  PeCoord coord() const { return self_; }
  std::exception_ptr error() const { return error_; }
  // Called for every command when it completes (the op log listens here).
  void on_complete(CompletionHook hook) { hook_ = std::move(hook); }
  // Called instead of sc_stop() when the program throws (a platform that owns the
  // simulation keeps it running). The CPU takes no program after an error until abort().
  void on_error(std::function<void()> hook) { error_hook_ = std::move(hook); }
  // Stops the program where it stands, unwinding it (its scratch scopes do not wait),
  // drops a program not yet started and clears an error. Commands issued go on to their
  // end: drained_event() is notified when the last of them is done.
  void abort();
  const sc_core::sc_event& drained_event() const { return drained_; }
  // A fault for a platform's driver tests: the program's next command is refused, as
  // if the program had failed there.
  void inject_fault() { fault_armed_ = true; }

  // Called from the program: issue without blocking; wait for one or for all. The
  // command returned is good until the program next waits (CommandPool). A command is
  // large (every engine's operands), so one given as an rvalue is moved once, into its slot.
  Command& issue(Command&& command);
  Command& issue(const Command& command) { return issue(Command(command)); }
  void wait(const Command& command);
  void wait_all();
  void spend(std::uint64_t cycles);                           // the CPU's own time: one op issued
  void count_into(ActivityMeter& meter) { meter_ = &meter; }  // counts the ops it issues
  std::size_t pending() const { return pending_; }
  // Command slots the CPU has made: the most commands alive at once (CommandPool).
  std::size_t command_slots() const { return commands_.slots(); }

  // The program's critical-path account: how it got to where it is (at its end once
  // finished). The program joins what it waited for outside the CPU (a message).
  PathAccount& path() { return path_; }
  const PathAccount& path() const { return path_; }

 private:
  void run();
  void completed(tlm::tlm_generic_payload& gp);

  PeCoord self_;
  sc_core::sc_time cycle_;
  Program program_;
  sc_core::sc_event program_loaded_, completed_, finished_event_, drained_;
  sc_core::sc_process_handle thread_;
  ThreadAlarm alarm_;  // the timed waits of `spend`
  bool finished_ = false, started_ = false, fault_armed_ = false;
  std::exception_ptr error_;
  CompletionHook hook_;
  std::function<void()> error_hook_;
  CommandPool commands_;
  // What the program waits for: only its completion wakes the program's thread.
  const Command* awaited_ = nullptr;
  bool awaiting_all_ = false;
  std::size_t pending_ = 0;
  PayloadPool pool_;
  PathAccount path_;
  PathAccount last_done_;  // the latest-finishing command's account (what wait_all waits for)
  ActivityMeter* meter_ = nullptr;
};

}  // namespace kb
