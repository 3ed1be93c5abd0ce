#pragma once
// An AHBM SIP for someone else's SystemC virtual platform. It elaborates one SIP
// (a topology with system.sips = 1; a mesh of 1 x 1 is a single CUBE) and offers:
//  - `hbm`: a TLM-2.0 target socket onto every HBM channel of the SIP, at the SIP's
//    address map (AddressMap::hbm(cube, pe, offset)). It serves the 4-phase base
//    protocol, b_transport, transport_dbg and DMI; host traffic holds the channel's
//    fabric port and wire like the PEs' own.
//  - `control`: the register block of vp/registers.h. A job (a kernel launch prepared
//    on the C++ side with add_job, e.g. vp::add_decode_job) is started by writing its
//    number to kJob and kStart to kControl; kStatus and kCycles tell how it ended.
//  - `irq`: an sc_out<bool> that rises when a job ends (done or error) and falls when
//    the next one starts; bind it to the platform's interrupt line. Left unbound, it
//    drives a signal of the accelerator's own. job_finished() is the same as an event.
// The register block takes no simulated time; the platform's bus models its cost.
// A job whose PEs deadlock stays kRunning; after a kernel error (kError, error())
// the accelerator takes no further jobs.
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include <systemc>
#include <tlm>
#include <tlm_utils/simple_target_socket.h>

#include "models/sip/system.h"
#include "platform/runtime_context.h"
#include "vp/registers.h"

namespace kb::vp {

class Accelerator : public sc_core::sc_module {
 public:
  tlm::tlm_target_socket<> hbm;
  tlm_utils::simple_target_socket<Accelerator> control;
  sc_core::sc_out<bool> irq;

  // Throws std::invalid_argument if the topology has more than one SIP.
  Accelerator(const sc_core::sc_module_name& name, const Topology& topo);

  // Launches kernels on runtime() (e.g. runtime().launch(...)) when the job starts.
  using Job = std::function<void(RuntimeContext&)>;
  std::uint32_t add_job(std::string name, Job job);

  const Topology& topology() const { return system_.topology(); }
  const AddressMap& address_map() { return system_.sip(SipId(0)).address_map(); }
  System& system() { return system_; }
  RuntimeContext& runtime() { return runtime_; }
  const sc_core::sc_event& job_finished() const { return finished_; }
  reg::Status status() const { return status_; }
  const std::string& error() const { return error_; }  // of the last job, if it failed

 private:
  void b_transport(tlm::tlm_generic_payload& gp, sc_core::sc_time& delay);
  unsigned int transport_dbg(tlm::tlm_generic_payload& gp);
  // A register access; sets the response status.
  void access(tlm::tlm_generic_payload& gp);
  std::uint32_t read(std::uint64_t offset) const;
  void run_jobs();  // SC_THREAD: one job at a time
  void before_end_of_elaboration() override;  // an unbound irq gets irq_line_

  System system_;
  RuntimeContext runtime_;
  struct NamedJob {
    std::string name;
    Job job;
  };
  std::vector<NamedJob> jobs_;
  std::uint32_t job_ = 0;
  reg::Status status_ = reg::kIdle;
  std::uint64_t cycles_ = 0;
  std::string error_;
  sc_core::sc_event start_, finished_, pe_error_;
  sc_core::sc_signal<bool> irq_line_{"irq_line", false};
};

}  // namespace kb::vp
