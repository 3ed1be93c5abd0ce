#include "models/pe/pe_cpu.h"

namespace kb {

PeCpu::PeCpu(const sc_core::sc_module_name& name, PeCoord self)
    : sc_core::sc_module(name),
      port("port", [this](tlm::tlm_generic_payload& gp) { completed(gp); }),
      self_(self) {
  SC_HAS_PROCESS(PeCpu);
  SC_THREAD(run);
}

void PeCpu::load(Program program) {
  program_ = std::move(program);
  finished_ = false;
  program_loaded_.notify(sc_core::SC_ZERO_TIME);
}

void PeCpu::run() {
  for (;;) {
    if (!program_) sc_core::wait(program_loaded_);
    Program program = std::move(program_);
    program_ = nullptr;
    program(*this);
    wait_all();
    finished_ = true;
    finished_event_.notify(sc_core::SC_ZERO_TIME);
  }
}

Command& PeCpu::issue(const Command& command) {
  commands_.push_back(command);
  Command& c = commands_.back();
  c.issued = sc_core::sc_time_stamp();
  c.done = false;
  ++pending_;
  tlm::tlm_generic_payload* gp = pool_.allocate();
  gp->set_command(tlm::TLM_IGNORE_COMMAND);
  gp->set_data_ptr(nullptr);
  gp->set_data_length(0);
  gp->set_auto_extension(new CommandExtension(&c));
  port.send(*gp);
  return c;
}

void PeCpu::completed(tlm::tlm_generic_payload& gp) {
  Command& c = CommandExtension::of(gp);
  c.done = true;
  --pending_;
  gp.release();
  completed_.notify(sc_core::SC_ZERO_TIME);
}

void PeCpu::wait(const Command& command) {
  while (!command.done) sc_core::wait(completed_);
}

void PeCpu::wait_all() {
  while (pending_ > 0) sc_core::wait(completed_);
}

}  // namespace kb
