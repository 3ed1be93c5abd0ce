#pragma once
// Base of every forwarding block (cube fabric, NOC router, PE scheduler): target ports in,
// initiator ports out, the TLM-2.0 base protocol on both sides (approximately timed,
// 4 phases; blocking and debug transport and DMI forwarded too). A derived block only says where
// a payload goes and which links it holds on the way (route()); this class does the
// protocol, the request/response exclusion rules and the link reservations.
#include <deque>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <systemc>
#include <tlm>
#include <tlm_utils/simple_initiator_socket.h>
#include <tlm_utils/simple_target_socket.h>

#include "base/recycling_map.h"
#include "models/common/link.h"
#include "models/common/path_extension.h"
#include "models/common/payload_queue.h"
#include "models/common/response_gate.h"

namespace kb {

class AtRouter : public sc_core::sc_module {
 public:
  using TargetSocket = tlm_utils::simple_target_socket_tagged<AtRouter>;
  using InitiatorSocket = tlm_utils::simple_initiator_socket_tagged<AtRouter>;

  TargetSocket& target(std::size_t i) { return *targets_.at(i); }
  InitiatorSocket& initiator(std::size_t i) { return *initiators_.at(i); }
  std::size_t target_count() const { return targets_.size(); }
  std::size_t initiator_count() const { return initiators_.size(); }

 protected:
  // One forwarding step: the out port, the links each direction holds (for its payload
  // bytes) and the time from the start of that hold to delivery at the next block.
  struct Hop {
    std::size_t out = 0;
    LinkPath request_links, response_links;
    sc_core::sc_time request_delay = sc_core::SC_ZERO_TIME;
    sc_core::sc_time response_delay = sc_core::SC_ZERO_TIME;
  };

  // `cause`: what a payload's time here counts as on the critical path.
  AtRouter(const sc_core::sc_module_name& name, Cause cause);
  std::size_t add_target(const std::string& name);
  std::size_t add_initiator(const std::string& name);

  // nullopt: not routable from here; the payload completes with TLM_ADDRESS_ERROR_RESPONSE.
  virtual std::optional<Hop> route(const tlm::tlm_generic_payload& gp, std::size_t in) = 0;

 private:
  struct Transaction {
    std::size_t in;
    Hop hop;
  };
  struct PortQueue {
    bool busy = false;  // a request awaits its END_REQ
    std::deque<tlm::tlm_generic_payload*> waiting;
  };

  tlm::tlm_sync_enum nb_transport_fw(int in, tlm::tlm_generic_payload& gp, tlm::tlm_phase& phase,
                                     sc_core::sc_time& delay);
  tlm::tlm_sync_enum nb_transport_bw(int out, tlm::tlm_generic_payload& gp, tlm::tlm_phase& phase,
                                     sc_core::sc_time& delay);
  void b_transport(int in, tlm::tlm_generic_payload& gp, sc_core::sc_time& delay);
  unsigned int transport_dbg(int in, tlm::tlm_generic_payload& gp);
  // DMI requests go where a one-byte access at their address would; a granted region's
  // latencies include that access's hop. Invalidations go back to every target socket.
  bool get_direct_mem_ptr(int in, tlm::tlm_generic_payload& gp, tlm::tlm_dmi& dmi);
  void invalidate_direct_mem_ptr(int out, sc_dt::uint64 start, sc_dt::uint64 end);
  void on_event(tlm::tlm_generic_payload& gp, const tlm::tlm_phase& phase);

  // The response steps take the payload's Transaction, looked up once a step.
  void send_request(tlm::tlm_generic_payload& gp, std::size_t out);  // to out port `out`
  void send_response(tlm::tlm_generic_payload& gp, const Transaction& t);  // when its in port's turn comes
  void begin_response(tlm::tlm_generic_payload& gp, const Transaction& t);
  void request_accepted(std::size_t out);
  // `pass_through`: a response due now may go upstream within this call (not when the
  // upstream's request call has not yet returned).
  void response_arrived(tlm::tlm_generic_payload& gp, const sc_core::sc_time& delay,
                        bool pass_through);
  // The initiator took the response, its END_RESP `delay` after now; `in`: its in port.
  void response_done(tlm::tlm_generic_payload& gp, const sc_core::sc_time& delay);
  void response_done(tlm::tlm_generic_payload& gp, std::size_t in, const sc_core::sc_time& delay);

  std::vector<std::unique_ptr<TargetSocket>> targets_;
  std::vector<std::unique_ptr<InitiatorSocket>> initiators_;
  std::vector<PortQueue> out_queues_;
  std::vector<ResponseGate> in_gates_;
  RecyclingMap<tlm::tlm_generic_payload*, Transaction> live_;  // the payloads in transit here
  PayloadQueue<AtRouter> peq_;
  Cause cause_;
};

}  // namespace kb
