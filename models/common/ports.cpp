#include "models/common/ports.h"

namespace kb {

using sc_core::sc_time;
using sc_core::SC_ZERO_TIME;

InitiatorPort::InitiatorPort(const char* name, Callback on_response)
    : tlm_utils::simple_initiator_socket<InitiatorPort>(name),
      on_response_(std::move(on_response)),
      peq_(this, &InitiatorPort::on_event) {
  register_nb_transport_bw(this, &InitiatorPort::nb_transport_bw);
}

void InitiatorPort::send(tlm::tlm_generic_payload& gp) {
  if (request_busy_) {
    waiting_.push_back(&gp);
    return;
  }
  request_busy_ = true;
  tlm::tlm_phase phase = tlm::BEGIN_REQ;
  sc_time delay = SC_ZERO_TIME;
  const tlm::tlm_sync_enum status = (*this)->nb_transport_fw(gp, phase, delay);
  if (status == tlm::TLM_ACCEPTED) return;
  request_accepted();
  if (status == tlm::TLM_UPDATED && phase == tlm::BEGIN_RESP) {
    tlm::tlm_phase end = tlm::END_RESP;
    sc_time zero = SC_ZERO_TIME;
    (*this)->nb_transport_fw(gp, end, zero);
    peq_.notify(gp, tlm::BEGIN_RESP, delay);
  } else if (status == tlm::TLM_COMPLETED) {
    peq_.notify(gp, tlm::BEGIN_RESP, delay);
  }
}

void InitiatorPort::request_accepted() {
  request_busy_ = false;
  if (waiting_.empty()) return;
  tlm::tlm_generic_payload* next = waiting_.front();
  waiting_.pop_front();
  peq_.notify(*next, tlm::BEGIN_REQ, SC_ZERO_TIME);
}

tlm::tlm_sync_enum InitiatorPort::nb_transport_bw(tlm::tlm_generic_payload& gp,
                                                  tlm::tlm_phase& phase, sc_time& delay) {
  if (phase == tlm::END_REQ) {
    request_accepted();
    return tlm::TLM_ACCEPTED;
  }
  if (phase == tlm::BEGIN_RESP) {
    if (request_busy_) request_accepted();  // BEGIN_RESP implies END_REQ
    peq_.notify(gp, tlm::BEGIN_RESP, delay);
    phase = tlm::END_RESP;
    return tlm::TLM_COMPLETED;
  }
  SC_REPORT_ERROR(name(), "nb_transport_bw: unexpected phase");
  return tlm::TLM_COMPLETED;
}

void InitiatorPort::on_event(tlm::tlm_generic_payload& gp, const tlm::tlm_phase& phase) {
  if (phase == tlm::BEGIN_REQ) send(gp);
  else on_response_(gp);
}

Responder::Responder(Backward backward, Hook before_send)
    : backward_(std::move(backward)),
      before_send_(std::move(before_send)),
      peq_(this, &Responder::on_event) {}

void Responder::respond(tlm::tlm_generic_payload& gp, const sc_time& delay) {
  peq_.notify(gp, tlm::BEGIN_RESP, delay);
}

// BEGIN_RESP: a response is ready; END_RESP (internal): its turn has come after waiting
// for an annotated END_RESP.
void Responder::on_event(tlm::tlm_generic_payload& gp, const tlm::tlm_phase& phase) {
  sc_time later;
  if (phase == tlm::BEGIN_RESP) switch (gate_.offer(gp, later)) {
      case ResponseGate::Turn::Queued: return;
      case ResponseGate::Turn::Later: peq_.notify(gp, tlm::END_RESP, later); return;
      case ResponseGate::Turn::Now: break;
    }
  begin(gp);
}

void Responder::begin(tlm::tlm_generic_payload& gp) {
  if (before_send_) before_send_(gp);
  tlm::tlm_phase phase = tlm::BEGIN_RESP;
  sc_time delay = SC_ZERO_TIME;
  const tlm::tlm_sync_enum status = backward_()->nb_transport_bw(gp, phase, delay);
  if (status == tlm::TLM_COMPLETED || (status == tlm::TLM_UPDATED && phase == tlm::END_RESP))
    end_response(gp, delay);
  // otherwise END_RESP will come on the forward path
}

void Responder::end_response(tlm::tlm_generic_payload& gp, const sc_time& delay) {
  if (gp.has_mm()) gp.release();
  if (tlm::tlm_generic_payload* next = gate_.end(delay)) peq_.notify(*next, tlm::BEGIN_RESP, SC_ZERO_TIME);
}

}  // namespace kb
