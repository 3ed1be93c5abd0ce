#include "models/pe/pe_cpu.h"

#include <stdexcept>
#include <utility>

#include "models/common/clock.h"
#include "models/common/path_extension.h"
#include "models/common/sim_time.h"

namespace kb {

PeCpu::PeCpu(const sc_core::sc_module_name& name, const Topology& topo, PeCoord self)
    : sc_core::sc_module(name),
      port("port", [this](tlm::tlm_generic_payload& gp) { completed(gp); }),
      self_(self),
      cycle_(cycle_time(topo)) {
  SC_HAS_PROCESS(PeCpu);
  SC_THREAD(run);
  thread_ = sc_core::sc_get_current_process_handle();  // the thread just made
}

void PeCpu::load(Program program) {
  program_ = std::move(program);
  finished_ = false;
  program_loaded_.notify(sc_core::SC_ZERO_TIME);
}

void PeCpu::run() {
  // Started at elaboration, and again by abort().
  started_ = false;
  awaited_ = nullptr;
  awaiting_all_ = false;
  for (;;) {
    while (!program_ || error_) sc_core::wait(program_loaded_);
    Program program = std::move(program_);
    program_ = nullptr;
    started_ = true;
    path_ = last_done_ = PathAccount::starting(ticks(sim_time()));
    try {
      program(*this);
      wait_all();
      path_.advance(ticks(sim_time()), Cause::Cpu);
    } catch (const sc_core::sc_unwind_exception&) {
      throw;  // abort(): the thread starts again
    } catch (...) {
      error_ = std::current_exception();
      if (error_hook_) error_hook_();
      else sc_core::sc_stop();
    }
    started_ = false;
    finished_ = true;
    finished_event_.notify(sc_core::SC_ZERO_TIME);
  }
}

void PeCpu::abort() {
  if (program_ || started_) finished_ = true;  // over, if not to its end
  program_ = nullptr;
  error_ = nullptr;
  fault_armed_ = false;
  alarm_.cancel();
  if (started_) thread_.reset();  // unwinds the program now; run() begins again
  if (pending_ == 0) drained_.notify(sc_core::SC_ZERO_TIME);
}

Command& PeCpu::issue(Command&& command) {
  if (std::exchange(fault_armed_, false)) throw std::runtime_error("an injected fault on " + self_.str());
  Command& c = commands_.take(std::move(command));
  c.issued = sim_time();
  path_.advance(ticks(c.issued), Cause::Cpu);
  c.path = path_;
  c.done = false;
  ++pending_;
  port.send(*command_payload(pool_, c));
  return c;
}

void PeCpu::completed(tlm::tlm_generic_payload& gp) {
  Command& c = CommandExtension::of(gp);
  c.done = true;
  last_done_.join(c.path);
  --pending_;
  gp.release();
  if (hook_) hook_(c);
  commands_.retire(c);
  if (&c == awaited_ || (awaiting_all_ && pending_ == 0)) completed_.notify(sc_core::SC_ZERO_TIME);
  if (pending_ == 0) drained_.notify(sc_core::SC_ZERO_TIME);
}

void PeCpu::wait(const Command& command) {
  awaited_ = &command;
  while (!command.done) sc_core::wait(completed_);
  awaited_ = nullptr;
  path_.join(command.path);
}

void PeCpu::wait_all() {
  awaiting_all_ = true;
  while (pending_ > 0) sc_core::wait(completed_);
  awaiting_all_ = false;
  path_.join(last_done_);
}

void PeCpu::spend(std::uint64_t cycles) {
  if (meter_ != nullptr) meter_->add(Act::CpuOp, 1, sim_time());
  if (cycles == 0) return;
  alarm_.sleep(cycle_ * static_cast<double>(cycles));
  path_.advance(ticks(sim_time()), Cause::Cpu);
}

}  // namespace kb
