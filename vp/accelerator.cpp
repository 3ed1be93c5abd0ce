#include "vp/accelerator.h"
#include "models/common/clock.h"

#include <array>
#include <cstring>
#include <stdexcept>

#include "base/units.h"

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
  fetch_.bind(system_.sip(SipId(0)).controller());
  control.register_b_transport(this, &Accelerator::b_transport);
  control.register_transport_dbg(this, &Accelerator::transport_dbg);
  // A kernel error ends the job, not the platform's simulation.
  system_.for_each_pe([this](Pe& pe) { pe.cpu.on_error([this] { pe_error_.notify(sc_core::SC_ZERO_TIME); }); });
  SC_HAS_PROCESS(Accelerator);
  SC_THREAD(run_jobs);
  SC_METHOD(drive_irq);
  sensitive << irq_changed_;
  dont_initialize();
}

void Accelerator::before_end_of_elaboration() {
  if (irq.bind_count() == 0) irq.bind(irq_line_);
  irq.initialize(false);
}

void Accelerator::drive_irq() { irq.write(irq_level_); }

std::uint32_t Accelerator::read(std::uint64_t offset) const {
  switch (offset) {
    case reg::kId: return reg::kIdValue;
    case reg::kDescLo: return static_cast<std::uint32_t>(desc_);
    case reg::kDescHi: return static_cast<std::uint32_t>(desc_ >> 32);
    case reg::kQueued: return static_cast<std::uint32_t>(queue_.size());
    case reg::kCompleted: return completed_;
    case reg::kStatus: return reset_ ? reg::kResetting : status_;
    case reg::kError: return static_cast<std::uint32_t>(error_code_);
    case reg::kCyclesLo: return static_cast<std::uint32_t>(cycles_);
    case reg::kCyclesHi: return static_cast<std::uint32_t>(cycles_ >> 32);
    default: return 0;  // kDoorbell and kIrqAck read as zero
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
    // A doorbell is refused when the queue is full or the accelerator halted after a fault.
    const bool ring = v == reg::kRing;
    if (offset == reg::kDescLo) {
      desc_ = (desc_ & ~std::uint64_t{0xFFFFFFFF}) | v;
    } else if (offset == reg::kDescHi) {
      desc_ = (desc_ & std::uint64_t{0xFFFFFFFF}) | std::uint64_t{v} << 32;
    } else if (offset == reg::kDoorbell && ring && !halted_ && !reset_ && queue_.size() < topology().sip.job_queue) {
      queue_.push_back(desc_);
      doorbell_.notify(sc_core::SC_ZERO_TIME);
    } else if (offset == reg::kIrqAck && ring) {
      irq_level_ = false;
      irq_changed_.notify(sc_core::SC_ZERO_TIME);
    } else if (offset == reg::kInjectFault && ring) {
      system_.sip(SipId(0)).cube(CubeId(0)).pe(PeId(0)).cpu.inject_fault();
    } else if (offset == reg::kReset && ring) {
      reset_ = true;
      reset_asked_.notify(sc_core::SC_ZERO_TIME);
    } else {
      gp.set_response_status(tlm::TLM_COMMAND_ERROR_RESPONSE);
      return;
    }
  }
  gp.set_response_status(tlm::TLM_OK_RESPONSE);
}

void Accelerator::b_transport(tlm::tlm_generic_payload& gp, sc_core::sc_time&) { access(gp); }

unsigned int Accelerator::transport_dbg(tlm::tlm_generic_payload& gp) {
  if (!gp.is_read() || gp.get_data_length() != 4 || gp.get_address() % 4 != 0 || gp.get_address() >= reg::kBlockBytes)
    return 0;  // debug reads only: a debug write must not queue a job
  const std::uint32_t v = read(gp.get_address());
  std::memcpy(gp.get_data_ptr(), &v, 4);
  return 4;
}

void Accelerator::transfer(tlm::tlm_command command, std::uint64_t address, std::uint8_t* data, std::uint64_t bytes) {
  tlm::tlm_generic_payload gp;
  gp.set_command(command);
  gp.set_address(address);
  gp.set_data_ptr(data);
  gp.set_data_length(static_cast<unsigned>(bytes));
  gp.set_streaming_width(static_cast<unsigned>(bytes));
  gp.set_response_status(tlm::TLM_INCOMPLETE_RESPONSE);
  sc_core::sc_time delay = sc_core::SC_ZERO_TIME;
  fetch_->b_transport(gp, delay);
  sc_core::wait(delay);
  if (!gp.is_response_ok())  // the callers check their addresses first
    SC_REPORT_ERROR(name(), ("the job controller's access to " + units::format_hex(address) + " failed: " +
                             gp.get_response_string())
                                .c_str());
}

void Accelerator::launch_and_wait(const PlannedJob& job) {
  job.launch(runtime_);
  const std::vector<PeCpu*> cpus = runtime_.start();
  sc_core::sc_event_or_list any;
  any |= pe_error_;
  any |= reset_asked_;
  for (PeCpu* cpu : cpus) any |= cpu->finished_event();
  for (;;) {
    if (reset_) throw JobError(ErrorCode::Reset, job.kernel + ": stopped by a reset");
    for (PeCpu* cpu : cpus)
      if (cpu->error()) {
        halted_ = true;
        try {
          std::rethrow_exception(cpu->error());
        } catch (const std::exception& e) {
          throw JobError(ErrorCode::Fault, job.kernel + ": " + e.what());
        }
      }
    bool done = true;
    for (PeCpu* cpu : cpus) done = done && cpu->finished();
    if (done) return;
    sc_core::wait(any);
  }
}

TakenBytes Accelerator::read_lens(JobDescriptor& d) {
  auto refuse = [&](const std::string& why) {
    throw JobError(ErrorCode::LensAddress, "the length list at " + units::format_hex(d.lens_at) + " " + why);
  };
  const auto head = address_map().decode(d.lens_at, 8);
  if (d.lens_at % 8 != 0 || !head || head->region != DecodedAddress::Region::Hbm)
    refuse("is not 8-byte aligned inside one HBM channel");
  const PeCoord channel{SipId(0), CubeId(head->cube), PeId(head->pe)};
  std::uint64_t count = 0;
  transfer(tlm::TLM_READ_COMMAND, d.lens_at, reinterpret_cast<std::uint8_t*>(&count), 8);
  if (count == 0 || count > desc::kMaxRequests)
    throw JobError(ErrorCode::Shape, "the length list holds " + std::to_string(count) + " requests; a batch has 1 to " +
                                         std::to_string(desc::kMaxRequests));
  const std::uint64_t bytes = 8 + 8 * count;
  if (!address_map().decode(d.lens_at, bytes)) refuse("runs past its channel's end with " + std::to_string(count) + " lengths");
  d.lens.resize(count);
  transfer(tlm::TLM_READ_COMMAND, d.lens_at + 8, reinterpret_cast<std::uint8_t*>(d.lens.data()), 8 * count);
  return {"the length list", channel, head->offset, head->offset + bytes};
}

std::optional<DecodedAddress> Accelerator::descriptor_at(std::uint64_t address) {
  const auto at = address_map().decode(address, desc::kBytes);
  if (address % desc::kAlign != 0 || !at || at->region != DecodedAddress::Region::Hbm) return std::nullopt;
  return at;
}

void Accelerator::run_job(std::uint64_t address) {
  if (halted_) throw JobError(ErrorCode::Halted, "queued behind a kernel fault; the accelerator takes no further job");
  const auto at = descriptor_at(address);
  if (!at)
    throw JobError(ErrorCode::DescriptorAddress, "descriptor address " + units::format_hex(address) +
                                                     " is not 64-byte aligned inside one HBM channel");
  const PeCoord channel{SipId(0), CubeId(at->cube), PeId(at->pe)};
  std::array<std::uint8_t, desc::kBytes> bytes{};
  transfer(tlm::TLM_READ_COMMAND, address, bytes.data(), bytes.size());
  JobDescriptor d = decode_descriptor(bytes);
  std::vector<TakenBytes> taken = {{"the descriptor", channel, at->offset, at->offset + desc::kBytes}};
  if (d.kernel == Kernel::GqaDecodeBatch) taken.push_back(read_lens(d));
  std::optional<DecodedAddress> table;
  if (d.layout_only) {
    table = address_map().decode(d.table, std::max<std::uint64_t>(d.table_bytes, 1));
    if (d.table % 8 != 0 || d.table_bytes < kTableHeaderBytes || !table || table->region != DecodedAddress::Region::Hbm)
      throw JobError(ErrorCode::TableAddress, "layout table at " + units::format_hex(d.table) + " of " +
                                                  std::to_string(d.table_bytes) +
                                                  " bytes is not 8-byte aligned inside one HBM channel, or has no room for its 16-byte header");
    taken.push_back({"the layout table", PeCoord{SipId(0), CubeId(table->cube), PeId(table->pe)}, table->offset,
                     table->offset + d.table_bytes});
  }
  const PlannedJob job = plan_job(runtime_, d, taken);
  if (!d.layout_only) return launch_and_wait(job);
  std::vector<std::uint8_t> out = layout_table(job.layout);
  const std::uint64_t need = out.size();
  if (need > d.table_bytes) out.resize(kTableHeaderBytes);  // the header says how many bytes it needs
  transfer(tlm::TLM_WRITE_COMMAND, d.table, out.data(), out.size());
  if (need > d.table_bytes)
    throw JobError(ErrorCode::TableRoom, "the layout table needs " + std::to_string(need) + " bytes; the descriptor gives " +
                                             std::to_string(d.table_bytes));
}

void Accelerator::run_jobs() {
  for (;;) {
    while (queue_.empty() && !reset_) sc_core::wait(doorbell_ | reset_asked_);
    if (reset_) {
      reset_machine();
      continue;
    }
    const std::uint64_t address = queue_.front();
    queue_.pop_front();
    status_ = reg::kRunning;
    started_.notify(sc_core::SC_ZERO_TIME);
    const sc_core::sc_time begin = sc_core::sc_time_stamp();
    ErrorCode code = ErrorCode::None;
    std::string error;
    try {
      run_job(address);
    } catch (const JobError& e) {
      code = e.code();
      error = e.what();
    }
    end_job(address, code, std::move(error),
            static_cast<std::uint64_t>((sc_core::sc_time_stamp() - begin) / cycle_time(topology()) + 0.5));
  }
}

void Accelerator::end_job(std::uint64_t address, ErrorCode code, std::string error, std::uint64_t cycles) {
  const reg::Status status = code == ErrorCode::None ? reg::kDone : reg::kFailed;
  // The result words, when the descriptor lies in HBM, written before the irq rises.
  if (descriptor_at(address)) {
    std::array<std::uint8_t, 16> result{};
    const auto status_word = static_cast<std::uint32_t>(status), code_word = static_cast<std::uint32_t>(code);
    std::memcpy(result.data(), &status_word, 4);
    std::memcpy(result.data() + 4, &code_word, 4);
    std::memcpy(result.data() + 8, &cycles, 8);
    transfer(tlm::TLM_WRITE_COMMAND, address + desc::kStatusAt, result.data(), result.size());
  }
  status_ = status;
  error_code_ = code;
  error_ = std::move(error);
  cycles_ = cycles;
  ++completed_;
  irq_level_ = true;
  irq_changed_.notify(sc_core::SC_ZERO_TIME);
  finished_.notify(sc_core::SC_ZERO_TIME);
}

void Accelerator::reset_machine() {
  queue_.clear();
  system_.for_each_pe([](Pe& pe) {
    pe.cpu.abort();
    pe.scheduler.drop_held();
  });
  // What the engines still run goes to its end; then no message is in flight.
  system_.for_each_pe([](Pe& pe) {
    while (pe.cpu.pending() > 0) sc_core::wait(pe.cpu.drained_event());
  });
  system_.for_each_pe([](Pe& pe) { pe.ipcq.discard_received(); });
  halted_ = reset_ = false;
  status_ = reg::kIdle;
}

}  // namespace kb::vp
