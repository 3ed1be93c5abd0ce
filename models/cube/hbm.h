#pragma once
// One HBM channel (one per PE): a TLM-2.0 memory target. Each access holds the
// channel's wire for bytes/bandwidth, then answers after the access latency, so
// back-to-back bursts pipeline: N bursts of B bytes take latency + N*B/bw.
// Serves the 4-phase base protocol, blocking b_transport, transport_dbg and DMI (a
// page of the store at a time, read and write, at the channel's latency).
#include <cstdint>

#include <systemc>
#include <tlm>
#include <tlm_utils/simple_target_socket.h>

#include "models/common/link.h"
#include "models/common/ports.h"
#include "base/memory_store.h"
#include "base/topology.h"

namespace kb {

class Hbm : public sc_core::sc_module {
 public:
  tlm_utils::simple_target_socket<Hbm> socket;

  // `base`: the address of byte 0 of this channel in the SIP's address map.
  Hbm(const sc_core::sc_module_name& name, const Topology& topo, std::uint64_t base);

  const Link& wire() const { return wire_; }
  Link& wire() { return wire_; }
  std::uint64_t bytes_read() const { return bytes_read_; }
  std::uint64_t bytes_written() const { return bytes_written_; }
  MemoryStore& store() { return store_; }
  // Counts the bytes read and written (timed accesses; DMI and debug access are untimed) into
  // `meter`.
  void count_into(ActivityMeter& meter) { meter_ = &meter; }

 private:
  tlm::tlm_sync_enum nb_transport_fw(tlm::tlm_generic_payload& gp, tlm::tlm_phase& phase,
                                     sc_core::sc_time& delay);
  void b_transport(tlm::tlm_generic_payload& gp, sc_core::sc_time& delay);
  unsigned int transport_dbg(tlm::tlm_generic_payload& gp);
  bool get_direct_mem_ptr(tlm::tlm_generic_payload& gp, tlm::tlm_dmi& dmi);

  // Checks the payload; sets an error response status and returns false if it is refused.
  bool admit(tlm::tlm_generic_payload& gp) const;
  // Performs the access (data moves unless the payload is timing-only).
  void access(tlm::tlm_generic_payload& gp);
  // Reserves the wire for an access arriving at `arrival`; returns its completion time.
  sc_core::sc_time schedule(const tlm::tlm_generic_payload& gp, sc_core::sc_time arrival);

  std::uint64_t base_;
  Link wire_;
  MemoryStore store_;
  Responder responder_;
  std::uint64_t bytes_read_ = 0, bytes_written_ = 0;
  ActivityMeter* meter_ = nullptr;
};

}  // namespace kb
