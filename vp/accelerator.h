#pragma once
// An AHBM SIP for someone else's SystemC virtual platform. It elaborates one SIP
// (a topology with system.sips = 1; a mesh of 1 x 1 is a single CUBE) and offers:
//  - `hbm`: a TLM-2.0 target socket onto every HBM channel of the SIP, at the SIP's
//    address map (AddressMap::hbm(cube, pe, offset)). It serves the 4-phase base
//    protocol, b_transport, transport_dbg and DMI; host traffic holds the channel's
//    fabric port and wire like the PEs' own.
//  - `control`: the register block of vp/registers.h. Software writes a job descriptor
//    (vp/job_descriptor.h) into HBM, its address to kDescLo/kDescHi, and kRing to
//    kDoorbell; up to sip.job_queue descriptors wait their turn. Jobs run one at a time,
//    in order; each ends done or failed, with its status, error code and cycles written
//    into its descriptor and the registers, and kCompleted counting it.
//  - `irq`: an sc_out<bool> that rises when a job ends and stays high until software
//    writes kRing to kIrqAck; bind it to the platform's interrupt line. Left unbound, it
//    drives a signal of the accelerator's own. job_finished() is the same as an event.
// The job controller reads a job's descriptor (and a batch's length list) and writes its
// layout table and result words through the SIP's own port onto HBM: modelled time,
// contended with the PEs' and the host's traffic, counted in the job's cycles. The
// register block takes none (the platform's bus models register accesses). A job whose
// PEs deadlock stays kRunning; after a kernel fault the accelerator takes no further
// job until a reset (kReset), which also ends a job that hangs.
#include <cstdint>
#include <deque>
#include <optional>
#include <string>

#include <systemc>
#include <tlm>
#include <tlm_utils/simple_initiator_socket.h>
#include <tlm_utils/simple_target_socket.h>

#include "models/sip/system.h"
#include "platform/runtime_context.h"
#include "vp/job.h"
#include "vp/registers.h"

namespace kb::vp {

class Accelerator : public sc_core::sc_module {
 public:
  tlm::tlm_target_socket<> hbm;
  tlm_utils::simple_target_socket<Accelerator> control;
  sc_core::sc_out<bool> irq;

  // Throws std::invalid_argument if the topology has more than one SIP.
  Accelerator(const sc_core::sc_module_name& name, const Topology& topo);

  // Where a descriptor's tensors go, as the job will place them (a C++ convenience for
  // what a layout-only job writes). Throws JobError as the job would fail.
  JobLayout layout(const JobDescriptor& d) { return plan_job(runtime_, d).layout; }

  const Topology& topology() const { return system_.topology(); }
  const AddressMap& address_map() { return system_.sip(SipId(0)).address_map(); }
  System& system() { return system_; }
  const sc_core::sc_event& job_started() const { return started_; }    // a job leaves the queue
  const sc_core::sc_event& job_finished() const { return finished_; }  // a job ended (the irq rises)
  reg::Status status() const { return reset_ ? reg::kResetting : status_; }
  ErrorCode error_code() const { return error_code_; }
  const std::string& error() const { return error_; }  // of the last job, if it failed

 private:
  void b_transport(tlm::tlm_generic_payload& gp, sc_core::sc_time& delay);
  unsigned int transport_dbg(tlm::tlm_generic_payload& gp);
  // A register access; sets the response status.
  void access(tlm::tlm_generic_payload& gp);
  std::uint32_t read(std::uint64_t offset) const;
  void run_jobs();  // SC_THREAD: the queue's jobs, one at a time
  // One job: fetch, validate, plan, run (or write the layout table). Throws JobError.
  void run_job(std::uint64_t address);
  // Where a descriptor lies: 64-byte aligned inside one HBM channel, else nullopt.
  std::optional<DecodedAddress> descriptor_at(std::uint64_t address);
  void launch_and_wait(const PlannedJob& job);
  // A batched decode's length list, from HBM into d.lens; the bytes it takes.
  TakenBytes read_lens(JobDescriptor& d);
  // `bytes` at `address` of HBM read into `data` (or, writing, written from it) through
  // the controller's port, in simulated time.
  void transfer(tlm::tlm_command command, std::uint64_t address, std::uint8_t* data, std::uint64_t bytes);
  // The job's end: its result words in its descriptor, the registers, the irq.
  void end_job(std::uint64_t address, ErrorCode code, std::string error, std::uint64_t cycles);
  // kReset: stops every PE's program, drains what is in flight, clears the halt.
  void reset_machine();
  void drive_irq();  // SC_METHOD: the one writer of irq
  void before_end_of_elaboration() override;  // an unbound irq gets irq_line_

  System system_;
  RuntimeContext runtime_;
  tlm_utils::simple_initiator_socket<Accelerator> fetch_{"fetch"};  // the controller's port onto HBM
  std::deque<std::uint64_t> queue_;  // descriptor addresses
  std::uint64_t desc_ = 0;           // kDescHi:kDescLo
  std::uint32_t completed_ = 0;
  bool halted_ = false;  // after a fault
  bool reset_ = false;   // a reset is asked for or under way
  reg::Status status_ = reg::kIdle;
  // The last ended job's (kError, kCycles, error()): a running job changes them at its end.
  ErrorCode error_code_ = ErrorCode::None;
  std::uint64_t cycles_ = 0;
  std::string error_;
  bool irq_level_ = false;
  sc_core::sc_event doorbell_, started_, finished_, pe_error_, irq_changed_, reset_asked_;
  sc_core::sc_signal<bool> irq_line_{"irq_line", false};
};

}  // namespace kb::vp
