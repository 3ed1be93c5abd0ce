#include "vp/accelerator.h"
#include "models/common/clock.h"

#include <cstring>
#include <stdexcept>

namespace kb::vp {

namespace {
const Topology& one_sip(const Topology& topo) {
  if (topo.system.sips != 1)
    throw std::invalid_argument("vp::Accelerator is one SIP; the topology has system.sips = " +
                                std::to_string(topo.system.sips) + " (override system.sips to 1, or use a topology of one SIP)");
  return topo;
}
}  // namespace

Accelerator::Accelerator(const sc_core::sc_module_name& name, const Topology& topo)
    : sc_core::sc_module(name),
      hbm("hbm"),
      control("control"),
      irq("irq"),
      system_("system", one_sip(topo), true),
      runtime_(system_, RunOptions{.data = true, .op_log = RunOptions::OpLogKept::Nothing}) {
  hbm.bind(system_.sip(SipId(0)).host());
  control.register_b_transport(this, &Accelerator::b_transport);
  control.register_transport_dbg(this, &Accelerator::transport_dbg);
  // A kernel error ends the job, not the platform's simulation.
  system_.for_each_pe([this](Pe& pe) { pe.cpu.on_error([this] { pe_error_.notify(sc_core::SC_ZERO_TIME); }); });
  SC_HAS_PROCESS(Accelerator);
  SC_THREAD(run_jobs);
}

void Accelerator::before_end_of_elaboration() {
  if (irq.bind_count() == 0) irq.bind(irq_line_);
  irq.initialize(false);
}

std::uint32_t Accelerator::add_job(std::string name, Job job) {
  jobs_.push_back({std::move(name), std::move(job)});
  return static_cast<std::uint32_t>(jobs_.size() - 1);
}

std::uint32_t Accelerator::read(std::uint64_t offset) const {
  switch (offset) {
    case reg::kId: return reg::kIdValue;
    case reg::kJob: return job_;
    case reg::kStatus: return status_;
    case reg::kCyclesLo: return static_cast<std::uint32_t>(cycles_);
    case reg::kCyclesHi: return static_cast<std::uint32_t>(cycles_ >> 32);
    default: return 0;  // kControl reads as zero
  }
}

void Accelerator::access(tlm::tlm_generic_payload& gp) {
  const std::uint64_t offset = gp.get_address();
  if (gp.get_data_length() != 4 || offset % 4 != 0 || offset >= reg::kBlockBytes) {
    gp.set_response_status(tlm::TLM_ADDRESS_ERROR_RESPONSE);
    return;
  }
  if (gp.get_byte_enable_ptr() != nullptr) {
    gp.set_response_status(tlm::TLM_BYTE_ENABLE_ERROR_RESPONSE);
    return;
  }
  if (gp.get_streaming_width() != 0 && gp.get_streaming_width() < 4) {
    gp.set_response_status(tlm::TLM_BURST_ERROR_RESPONSE);
    return;
  }
  if (gp.is_read()) {
    const std::uint32_t v = read(offset);
    std::memcpy(gp.get_data_ptr(), &v, 4);
  } else if (gp.is_write()) {
    std::uint32_t v = 0;
    std::memcpy(&v, gp.get_data_ptr(), 4);
    const bool writable = offset == reg::kJob || offset == reg::kControl;
    const bool busy = status_ == reg::kRunning || (status_ == reg::kError && offset == reg::kControl);
    if (!writable || busy || (offset == reg::kControl && (v != reg::kStart || job_ >= jobs_.size()))) {
      gp.set_response_status(tlm::TLM_COMMAND_ERROR_RESPONSE);
      return;
    }
    if (offset == reg::kJob) {
      job_ = v;
    } else {
      status_ = reg::kRunning;
      start_.notify(sc_core::SC_ZERO_TIME);
    }
  }
  gp.set_response_status(tlm::TLM_OK_RESPONSE);
}

void Accelerator::b_transport(tlm::tlm_generic_payload& gp, sc_core::sc_time&) { access(gp); }

unsigned int Accelerator::transport_dbg(tlm::tlm_generic_payload& gp) {
  if (!gp.is_read() || gp.get_data_length() != 4 || gp.get_address() % 4 != 0 || gp.get_address() >= reg::kBlockBytes)
    return 0;  // debug reads only: a debug write must not start a job
  const std::uint32_t v = read(gp.get_address());
  std::memcpy(gp.get_data_ptr(), &v, 4);
  return 4;
}

void Accelerator::run_jobs() {
  for (;;) {
    sc_core::wait(start_);
    irq.write(false);
    const sc_core::sc_time begin = sc_core::sc_time_stamp();
    error_.clear();
    std::vector<PeCpu*> cpus;
    try {
      jobs_.at(job_).job(runtime_);
      cpus = runtime_.start();
    } catch (const std::exception& e) {
      error_ = "job '" + jobs_.at(job_).name + "': " + e.what();
    }
    sc_core::sc_event_or_list any;
    any |= pe_error_;
    for (PeCpu* cpu : cpus) any |= cpu->finished_event();
    auto ended = [&] {
      for (PeCpu* cpu : cpus)
        if (cpu->error()) return true;
      for (PeCpu* cpu : cpus)
        if (!cpu->finished()) return false;
      return true;
    };
    while (error_.empty() && !ended()) sc_core::wait(any);
    for (PeCpu* cpu : cpus)
      if (error_.empty() && cpu->error()) {
        try {
          std::rethrow_exception(cpu->error());
        } catch (const std::exception& e) {
          error_ = e.what();
        }
      }
    cycles_ = static_cast<std::uint64_t>((sc_core::sc_time_stamp() - begin) / cycle_time(topology()) + 0.5);
    status_ = error_.empty() ? reg::kDone : reg::kError;
    irq.write(true);
    finished_.notify(sc_core::SC_ZERO_TIME);
  }
}

}  // namespace kb::vp
