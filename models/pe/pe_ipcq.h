#pragma once
// PeIpcq: PE-to-PE messages. A send is one TLM write to the destination PE's mailbox
// address: inside the cube it crosses the fabric, to another cube it crosses the NOC, to
// another SIP it leaves the mesh at the link port nearest this PE's cube and crosses the
// links (docs/topology.md, Links). The mailbox target socket receives messages and keeps
// them until taken.
#include <deque>
#include <functional>
#include <optional>
#include <vector>

#include <tlm_utils/simple_target_socket.h>

#include "base/ids.h"
#include "models/common/message.h"
#include "models/common/payload_pool.h"
#include "models/common/ports.h"
#include "models/pe/pe_engine.h"
#include "base/address_map.h"

namespace kb {

struct Message {
  std::uint32_t src_sip = 0, src_cube = 0, src_pe = 0, tag = 0;
  std::uint64_t bytes = 0;
  sc_core::sc_time arrival;
  std::vector<std::uint32_t> path;  // cubes whose routers sent it over a mesh link
  std::vector<LinkCrossing> crossings;  // the links it crossed, from another SIP
  std::vector<std::uint8_t> data;   // empty for timing-only messages
  PathAccount account;              // its critical-path account at arrival
};

class PeIpcq : public PeEngine {
 public:
  InitiatorPort network;                               // sends, to the cube fabric
  tlm_utils::simple_target_socket<PeIpcq> mailbox;     // receives, from the cube fabric

  PeIpcq(const sc_core::sc_module_name& name, const Topology& topo, const AddressMap& map,
         PeCoord self);

  // Messages that have arrived and not been taken, in arrival order.
  const std::deque<Message>& received() const { return received_; }
  // Takes the first arrived message from PE `src` with `tag`.
  std::optional<Message> take(const PeCoord& src, std::uint32_t tag);
  // How many arrived messages from PE `src` with `tag` wait to be taken.
  std::size_t count(const PeCoord& src, std::uint32_t tag) const;
  const sc_core::sc_event& message_event() const { return arrived_; }
  // Discards the messages no program took (a platform's reset, once nothing is in flight).
  void discard_received() { received_.clear(); }
  // Called the moment a message arrives (the scheduler's held receives take theirs).
  void on_message(std::function<void()> hook) { on_message_ = std::move(hook); }
  std::uint64_t bytes_sent() const { return bytes_sent_; }

 private:
  void start(tlm::tlm_generic_payload& gp, Command& cmd) override;
  void sent(tlm::tlm_generic_payload& msg);
  tlm::tlm_sync_enum mailbox_fw(tlm::tlm_generic_payload& gp, tlm::tlm_phase& phase,
                                sc_core::sc_time& delay);
  void deliver(tlm::tlm_generic_payload& gp);
  void on_arrival(tlm::tlm_generic_payload& gp, const tlm::tlm_phase& phase);
  void mailbox_b_transport(tlm::tlm_generic_payload& gp, sc_core::sc_time& delay);

  const AddressMap& map_;
  PeCoord self_;
  CubeId exit_port_;  // where its messages for other SIPs leave the mesh
  PayloadPool data_pool_, timing_pool_{true};  // messages with bytes / timing only
  tlm::tlm_generic_payload* sending_ = nullptr;  // the Send command in service
  std::vector<std::uint8_t> timing_buffer_;
  TimedDispatch& timed_;  // its SIP's (a b_transport delivery waits there)
  Responder mailbox_responder_;
  PayloadQueue<PeIpcq> arrivals_;
  std::deque<Message> received_;
  sc_core::sc_event arrived_;
  std::function<void()> on_message_;
  std::uint64_t bytes_sent_ = 0;
};

}  // namespace kb
