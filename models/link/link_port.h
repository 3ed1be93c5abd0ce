#pragma once
// A SIP's link port at one of its port cubes: the TLM target its cube's router hands
// messages for other SIPs to, and the TLM initiator that puts messages from the links
// into the mesh. A message for another SIP is a posted write: the port takes its bytes,
// and the sender's write completes once the last byte has left over the first link
// (LinkInterface::send); on the far side the destination port writes it to the
// destination mailbox over that SIP's mesh, as a message of its own.
#include <unordered_map>
#include <vector>

#include <systemc>
#include <tlm>
#include <tlm_utils/simple_target_socket.h>

#include "base/address_map.h"
#include "models/common/payload_pool.h"
#include "models/common/ports.h"
#include "models/link/link_interface.h"

namespace kb {

class LinkPort : public sc_core::sc_module {
 public:
  tlm_utils::simple_target_socket<LinkPort> from_mesh;  // messages leaving this SIP
  InitiatorPort to_mesh;                                // messages the links brought

  LinkPort(const sc_core::sc_module_name& name, LinkInterface& links, const AddressMap& map);

  // A message for a PE of this SIP, at this port now: into the mesh.
  void deliver(LinkPacket&& p);

 private:
  tlm::tlm_sync_enum nb_transport_fw(tlm::tlm_generic_payload& gp, tlm::tlm_phase& phase, sc_core::sc_time& delay);
  void b_transport(tlm::tlm_generic_payload& gp, sc_core::sc_time& delay);
  unsigned int transport_dbg(tlm::tlm_generic_payload&) { return 0; }  // no memory here
  // A write of a message for another SIP (else its error status set, and false).
  bool admit(tlm::tlm_generic_payload& gp) const;
  void on_arrival(tlm::tlm_generic_payload& gp, const tlm::tlm_phase& phase);
  // Sends the message gp carries; returns when its last byte has left this SIP.
  sc_core::sc_time send(tlm::tlm_generic_payload& gp);
  void delivered(tlm::tlm_generic_payload& gp);

  LinkInterface& links_;
  const AddressMap& map_;
  Responder responder_;
  PayloadQueue<LinkPort> arrivals_;
  PayloadPool data_pool_, timing_pool_{true};
  std::vector<std::uint8_t> timing_buffer_;
  std::unordered_map<const tlm::tlm_generic_payload*, LinkPacket> in_mesh_;  // delivering (their bytes)
};

}  // namespace kb
