#pragma once
// Socket-side halves of the TLM-2.0 base protocol that every block needs:
//  - InitiatorPort: an initiator socket that sends BEGIN_REQ one at a time (request
//    exclusion) and hands each completed response to a callback;
//  - Responder: sends BEGIN_RESP on a target socket one at a time (response exclusion,
//    honouring the time each END_RESP was annotated for) and releases the payload when
//    the initiator has taken the response.
// Both defer through a payload event queue, so no block re-enters its peer's call.
#include <deque>
#include <functional>

#include <systemc>
#include <tlm>
#include <tlm_utils/simple_initiator_socket.h>

#include "models/common/payload_queue.h"
#include "models/common/response_gate.h"

namespace kb {

class InitiatorPort : public tlm_utils::simple_initiator_socket<InitiatorPort> {
 public:
  using Callback = std::function<void(tlm::tlm_generic_payload&)>;
  InitiatorPort(const char* name, Callback on_response);
  // Sends the request now, or as soon as the one in flight on this socket is accepted.
  void send(tlm::tlm_generic_payload& gp);

 private:
  tlm::tlm_sync_enum nb_transport_bw(tlm::tlm_generic_payload& gp, tlm::tlm_phase& phase,
                                     sc_core::sc_time& delay);
  void on_event(tlm::tlm_generic_payload& gp, const tlm::tlm_phase& phase);
  void request_accepted();

  Callback on_response_;
  PayloadQueue<InitiatorPort> peq_;
  bool request_busy_ = false;
  std::deque<tlm::tlm_generic_payload*> waiting_;
};

class Responder {
 public:
  using Backward = std::function<tlm::tlm_bw_transport_if<>*()>;
  using Hook = std::function<void(tlm::tlm_generic_payload&)>;
  // `before_send` runs just before BEGIN_RESP goes out (e.g. a memory does its access).
  explicit Responder(Backward backward, Hook before_send = {});
  // BEGIN_RESP after `delay` (later if a response is still being taken).
  void respond(tlm::tlm_generic_payload& gp, const sc_core::sc_time& delay);
  // The initiator's END_RESP for the response in flight, `delay` after now.
  void end_response(tlm::tlm_generic_payload& gp, const sc_core::sc_time& delay);

  // The whole target side of nb_transport_fw: BEGIN_REQ goes to `on_request(gp, delay)`,
  // which returns false (after setting an error status) to refuse it, and is otherwise
  // accepted at once (END_REQ); END_RESP completes the response in flight.
  template <class OnRequest>
  tlm::tlm_sync_enum forward(const char* who, tlm::tlm_generic_payload& gp, tlm::tlm_phase& phase,
                             const sc_core::sc_time& delay, OnRequest on_request) {
    if (phase == tlm::BEGIN_REQ) {
      if (!on_request(gp, delay)) return tlm::TLM_COMPLETED;
      phase = tlm::END_REQ;
      return tlm::TLM_UPDATED;
    }
    if (phase == tlm::END_RESP) {
      end_response(gp, delay);
      return tlm::TLM_COMPLETED;
    }
    SC_REPORT_ERROR(who, "nb_transport_fw: unexpected phase");
    return tlm::TLM_COMPLETED;
  }

 private:
  void on_event(tlm::tlm_generic_payload& gp, const tlm::tlm_phase& phase);
  void begin(tlm::tlm_generic_payload& gp);

  Backward backward_;
  Hook before_send_;
  PayloadQueue<Responder> peq_;
  ResponseGate gate_;
};

}  // namespace kb
