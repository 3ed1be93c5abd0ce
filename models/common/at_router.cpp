#include "models/common/at_router.h"
#include "models/common/sim_time.h"

namespace kb {

using sc_core::sc_time;
using sc_core::SC_ZERO_TIME;

// Internal peq phases: forward the request downstream / the response upstream / begin a
// response whose turn came after an annotated END_RESP.
static const tlm::tlm_phase& kForwardRequest = tlm::BEGIN_REQ;
static const tlm::tlm_phase& kForwardResponse = tlm::BEGIN_RESP;
static const tlm::tlm_phase& kResumeResponse = tlm::END_RESP;

AtRouter::AtRouter(const sc_core::sc_module_name& name, Cause cause)
    : sc_core::sc_module(name), peq_(this, &AtRouter::on_event), cause_(cause) {}

std::size_t AtRouter::add_target(const std::string& name) {
  const std::size_t i = targets_.size();
  targets_.push_back(std::make_unique<TargetSocket>(name.c_str()));
  auto& s = *targets_.back();
  s.register_nb_transport_fw(this, &AtRouter::nb_transport_fw, static_cast<int>(i));
  s.register_b_transport(this, &AtRouter::b_transport, static_cast<int>(i));
  s.register_transport_dbg(this, &AtRouter::transport_dbg, static_cast<int>(i));
  s.register_get_direct_mem_ptr(this, &AtRouter::get_direct_mem_ptr, static_cast<int>(i));
  in_gates_.emplace_back();
  return i;
}

std::size_t AtRouter::add_initiator(const std::string& name) {
  const std::size_t i = initiators_.size();
  initiators_.push_back(std::make_unique<InitiatorSocket>(name.c_str()));
  initiators_.back()->register_nb_transport_bw(this, &AtRouter::nb_transport_bw,
                                               static_cast<int>(i));
  initiators_.back()->register_invalidate_direct_mem_ptr(this, &AtRouter::invalidate_direct_mem_ptr,
                                                         static_cast<int>(i));
  out_queues_.emplace_back();
  return i;
}

tlm::tlm_sync_enum AtRouter::nb_transport_fw(int in, tlm::tlm_generic_payload& gp,
                                             tlm::tlm_phase& phase, sc_time& delay) {
  const auto port = static_cast<std::size_t>(in);
  if (phase == tlm::BEGIN_REQ) {
    auto hop = route(gp, port);
    if (!hop) {
      gp.set_response_status(tlm::TLM_ADDRESS_ERROR_RESPONSE);
      return tlm::TLM_COMPLETED;
    }
    gp.acquire();
    const sc_time now = sim_time();
    const sc_time start = reserve_path(hop->request_links, now + delay, request_bytes(gp));
    const sc_time deliver = start + hop->request_delay;
    account_until(gp, deliver, cause_);
    const std::size_t out = live_.insert(&gp, Transaction{port, std::move(*hop)}).hop.out;
    // A hop that adds no time passes the request straight on, like a wire.
    if (deliver == now) send_request(gp, out);
    else peq_.notify(gp, kForwardRequest, deliver - now);
    phase = tlm::END_REQ;  // accepted at once: the router buffers requests
    return tlm::TLM_UPDATED;
  }
  if (phase == tlm::END_RESP) {
    response_done(gp, delay);
    return tlm::TLM_COMPLETED;
  }
  SC_REPORT_ERROR(name(), "nb_transport_fw: unexpected phase from initiator");
  return tlm::TLM_COMPLETED;
}

tlm::tlm_sync_enum AtRouter::nb_transport_bw(int out, tlm::tlm_generic_payload& gp,
                                             tlm::tlm_phase& phase, sc_time& delay) {
  const auto port = static_cast<std::size_t>(out);
  if (phase == tlm::END_REQ) {
    request_accepted(port);
    return tlm::TLM_ACCEPTED;
  }
  if (phase == tlm::BEGIN_RESP) {
    if (out_queues_[port].busy) request_accepted(port);  // BEGIN_RESP implies END_REQ
    response_arrived(gp, delay, true);
    phase = tlm::END_RESP;
    return tlm::TLM_COMPLETED;
  }
  SC_REPORT_ERROR(name(), "nb_transport_bw: unexpected phase from target");
  return tlm::TLM_COMPLETED;
}

void AtRouter::on_event(tlm::tlm_generic_payload& gp, const tlm::tlm_phase& phase) {
  if (phase == kForwardRequest) send_request(gp, live_.at(&gp).hop.out);
  else if (phase == kForwardResponse) send_response(gp, live_.at(&gp));
  else begin_response(gp, live_.at(&gp));
}

void AtRouter::send_request(tlm::tlm_generic_payload& gp, std::size_t out) {
  PortQueue& q = out_queues_[out];
  if (q.busy) {
    q.waiting.push_back(&gp);
    return;
  }
  q.busy = true;
  tlm::tlm_phase phase = tlm::BEGIN_REQ;
  sc_time delay = SC_ZERO_TIME;
  const tlm::tlm_sync_enum status = (*initiators_[out])->nb_transport_fw(gp, phase, delay);
  if (status == tlm::TLM_ACCEPTED) return;  // END_REQ comes on the backward path
  if (status == tlm::TLM_UPDATED && phase == tlm::END_REQ) {
    request_accepted(out);
    return;
  }
  request_accepted(out);
  if (status == tlm::TLM_UPDATED && phase == tlm::BEGIN_RESP) {
    // The target answered at once; we owe it END_RESP.
    response_arrived(gp, delay, false);
    tlm::tlm_phase end = tlm::END_RESP;
    sc_time zero = SC_ZERO_TIME;
    (*initiators_[out])->nb_transport_fw(gp, end, zero);
    return;
  }
  response_arrived(gp, delay, false);  // TLM_COMPLETED
}

void AtRouter::request_accepted(std::size_t out) {
  PortQueue& q = out_queues_[out];
  q.busy = false;
  if (q.waiting.empty()) return;
  tlm::tlm_generic_payload* next = q.waiting.front();
  q.waiting.pop_front();
  peq_.notify(*next, kForwardRequest, SC_ZERO_TIME);  // never re-enter the target from its call
}

void AtRouter::response_arrived(tlm::tlm_generic_payload& gp, const sc_time& delay,
                                bool pass_through) {
  Transaction& t = live_.at(&gp);
  const Hop& hop = t.hop;
  const sc_time now = sim_time();
  const sc_time start = reserve_path(hop.response_links, now + delay, response_bytes(gp));
  const sc_time deliver = start + hop.response_delay;
  account_until(gp, deliver, cause_);
  if (pass_through && deliver == now) send_response(gp, t);
  else peq_.notify(gp, kForwardResponse, deliver - now);
}

void AtRouter::send_response(tlm::tlm_generic_payload& gp, const Transaction& t) {
  sc_time later;
  switch (in_gates_[t.in].offer(gp, later)) {
    case ResponseGate::Turn::Queued: return;
    case ResponseGate::Turn::Later: peq_.notify(gp, kResumeResponse, later); return;
    case ResponseGate::Turn::Now: begin_response(gp, t);
  }
}

void AtRouter::begin_response(tlm::tlm_generic_payload& gp, const Transaction& t) {
  tlm::tlm_phase phase = tlm::BEGIN_RESP;
  sc_time delay = SC_ZERO_TIME;
  const std::size_t in = t.in;  // the map may rehash in the call (the initiator's next request)
  const tlm::tlm_sync_enum status = (*targets_[in])->nb_transport_bw(gp, phase, delay);
  if (status == tlm::TLM_COMPLETED || (status == tlm::TLM_UPDATED && phase == tlm::END_RESP))
    response_done(gp, in, delay);
}

void AtRouter::response_done(tlm::tlm_generic_payload& gp, const sc_time& delay) {
  response_done(gp, live_.at(&gp).in, delay);
}

void AtRouter::response_done(tlm::tlm_generic_payload& gp, std::size_t in, const sc_time& delay) {
  live_.erase(&gp);
  if (tlm::tlm_generic_payload* next = in_gates_[in].end(delay)) peq_.notify(*next, kForwardResponse, SC_ZERO_TIME);
  gp.release();
}

void AtRouter::b_transport(int in, tlm::tlm_generic_payload& gp, sc_time& delay) {
  auto hop = route(gp, static_cast<std::size_t>(in));
  if (!hop) {
    gp.set_response_status(tlm::TLM_ADDRESS_ERROR_RESPONSE);
    return;
  }
  const sc_time now = sim_time();
  sc_time start = reserve_path(hop->request_links, now + delay, request_bytes(gp));
  delay = start + hop->request_delay - now;
  (*initiators_[hop->out])->b_transport(gp, delay);
  const sc_time back = sim_time();  // the target may have waited
  start = reserve_path(hop->response_links, back + delay, response_bytes(gp));
  delay = start + hop->response_delay - back;
}

unsigned int AtRouter::transport_dbg(int in, tlm::tlm_generic_payload& gp) {
  auto hop = route(gp, static_cast<std::size_t>(in));
  if (!hop) return 0;
  return (*initiators_[hop->out])->transport_dbg(gp);
}

bool AtRouter::get_direct_mem_ptr(int in, tlm::tlm_generic_payload& gp, tlm::tlm_dmi& dmi) {
  // A DMI region is found from the address alone and its latencies are per access:
  // what is routed on is a one-byte access of the same kind, whatever length was asked.
  tlm::tlm_generic_payload access;
  access.set_command(gp.get_command());
  access.set_address(gp.get_address());
  access.set_data_length(1);
  access.set_streaming_width(1);
  auto hop = route(access, static_cast<std::size_t>(in));
  if (!hop || !(*initiators_[hop->out])->get_direct_mem_ptr(access, dmi)) return false;
  dmi.set_read_latency(dmi.get_read_latency() + hop->request_delay + hop->response_delay);
  dmi.set_write_latency(dmi.get_write_latency() + hop->request_delay + hop->response_delay);
  return true;
}

void AtRouter::invalidate_direct_mem_ptr(int, sc_dt::uint64 start, sc_dt::uint64 end) {
  for (auto& t : targets_) (*t)->invalidate_direct_mem_ptr(start, end);
}

}  // namespace kb
