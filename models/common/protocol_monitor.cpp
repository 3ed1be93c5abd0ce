#include "models/common/protocol_monitor.h"

#include <algorithm>
#include <sstream>

#include "models/common/binding.h"

namespace kb {

using sc_core::sc_time;
using sc_core::sc_time_stamp;

namespace {
std::string phase_name(const tlm::tlm_phase& p) {
  std::ostringstream s;
  s << p;
  return s.str();
}
const char* sync_name(tlm::tlm_sync_enum s) {
  return s == tlm::TLM_ACCEPTED ? "TLM_ACCEPTED" : s == tlm::TLM_UPDATED ? "TLM_UPDATED" : "TLM_COMPLETED";
}
}  // namespace

ProtocolMonitor::Attributes ProtocolMonitor::Attributes::of(const tlm::tlm_generic_payload& gp) {
  return {gp.get_command(), gp.get_data_ptr(), gp.get_data_length(), gp.get_byte_enable_ptr(),
          gp.get_streaming_width()};
}

ProtocolMonitor::ProtocolMonitor(const sc_core::sc_module_name& name)
    : sc_core::sc_module(name), target("target"), initiator("initiator") {
  target.bind(*this);
  initiator.bind(*this);
}

void ProtocolMonitor::violation(const tlm::tlm_generic_payload& gp, const std::string& rule) {
  std::ostringstream s;
  s << name() << " at " << sc_time_stamp() << ": " << rule << " (payload " << static_cast<const void*>(&gp)
    << ", address 0x" << std::hex << gp.get_address() << ")";
  violations_.push_back(s.str());
}

void ProtocolMonitor::at(Open& t, const tlm::tlm_generic_payload& gp, const sc_time& delay) {
  const sc_time when = sc_time_stamp() + delay;
  if (when < t.last) violation(gp, "a phase annotated earlier than the transaction's previous phase");
  t.last = when;
}

void ProtocolMonitor::check_response(const tlm::tlm_generic_payload& gp, const Attributes& before) {
  if (gp.get_response_status() == tlm::TLM_INCOMPLETE_RESPONSE)
    violation(gp, "response given with status TLM_INCOMPLETE_RESPONSE");
  if (!(Attributes::of(gp) == before))
    violation(gp, "the target changed the command, data pointer, length, byte enables or streaming width");
}

void ProtocolMonitor::complete(tlm::tlm_generic_payload& gp) {
  if (request_ == &gp) request_ = nullptr;
  if (response_ == &gp) response_ = nullptr;
  open_.erase(&gp);
}

void ProtocolMonitor::begin_response(tlm::tlm_generic_payload& gp, Open& t, const sc_time& delay) {
  if (response_ != nullptr && response_ != &gp) violation(gp, "BEGIN_RESP before END_RESP of the previous response");
  if (t.state == State::Response) violation(gp, "BEGIN_RESP twice");
  if (request_ == &gp) request_ = nullptr;  // BEGIN_RESP implies END_REQ
  t.state = State::Response;
  response_ = &gp;
  at(t, gp, delay);
  check_response(gp, t.attributes);
}

tlm::tlm_sync_enum ProtocolMonitor::nb_transport_fw(tlm::tlm_generic_payload& gp, tlm::tlm_phase& phase,
                                                   sc_time& delay) {
  const auto it = open_.find(&gp);
  if (phase == tlm::BEGIN_REQ) {
    ++transactions_;
    if (it != open_.end()) violation(gp, "BEGIN_REQ for a transaction already in progress");
    if (request_ != nullptr) violation(gp, "BEGIN_REQ before END_REQ of the previous request");
    if (!gp.has_mm()) violation(gp, "nb_transport with a payload that has no memory manager");
    if (gp.get_response_status() != tlm::TLM_INCOMPLETE_RESPONSE)
      violation(gp, "BEGIN_REQ with a response status other than TLM_INCOMPLETE_RESPONSE");
    Open& t = open_[&gp] = Open{State::Request, Attributes::of(gp), sc_time_stamp() + delay};
    request_ = &gp;
    const tlm::tlm_sync_enum r = initiator->nb_transport_fw(gp, phase, delay);
    if (r == tlm::TLM_ACCEPTED) {
      if (phase != tlm::BEGIN_REQ) violation(gp, "TLM_ACCEPTED with the phase changed");
    } else if (r == tlm::TLM_UPDATED) {
      if (phase == tlm::END_REQ) {
        if (t.state != State::Request) violation(gp, "END_REQ after the request had ended");
        t.state = State::RequestEnded;
        request_ = nullptr;
        at(t, gp, delay);
      } else if (phase == tlm::BEGIN_RESP) {
        begin_response(gp, t, delay);
      } else {
        violation(gp, "BEGIN_REQ answered TLM_UPDATED with phase " + phase_name(phase));
      }
    } else {
      at(t, gp, delay);
      check_response(gp, t.attributes);
      complete(gp);
    }
    return r;
  }
  if (phase == tlm::END_RESP) {
    if (it == open_.end() || it->second.state != State::Response) {
      violation(gp, "END_RESP without a BEGIN_RESP");
      return initiator->nb_transport_fw(gp, phase, delay);
    }
    at(it->second, gp, delay);
    const tlm::tlm_sync_enum r = initiator->nb_transport_fw(gp, phase, delay);
    if (r == tlm::TLM_UPDATED) violation(gp, "END_RESP answered TLM_UPDATED");
    complete(gp);
    return r;
  }
  violation(gp, "the initiator sent " + phase_name(phase) + " on the forward path");
  return initiator->nb_transport_fw(gp, phase, delay);
}

tlm::tlm_sync_enum ProtocolMonitor::nb_transport_bw(tlm::tlm_generic_payload& gp, tlm::tlm_phase& phase,
                                                   sc_time& delay) {
  const auto it = open_.find(&gp);
  if (it == open_.end()) {
    violation(gp, "the target sent " + phase_name(phase) + " for a transaction not in progress");
    return target->nb_transport_bw(gp, phase, delay);
  }
  Open& t = it->second;
  if (phase == tlm::END_REQ) {
    if (t.state != State::Request) violation(gp, "END_REQ after the request had ended");
    t.state = State::RequestEnded;
    if (request_ == &gp) request_ = nullptr;
    at(t, gp, delay);
    const tlm::tlm_sync_enum r = target->nb_transport_bw(gp, phase, delay);
    if (r != tlm::TLM_ACCEPTED) violation(gp, std::string("END_REQ answered ") + sync_name(r));
    return r;
  }
  if (phase == tlm::BEGIN_RESP) {
    begin_response(gp, t, delay);
    const tlm::tlm_sync_enum r = target->nb_transport_bw(gp, phase, delay);
    if (r == tlm::TLM_COMPLETED || (r == tlm::TLM_UPDATED && phase == tlm::END_RESP)) {
      complete(gp);
    } else if (r == tlm::TLM_UPDATED) {
      violation(gp, "BEGIN_RESP answered TLM_UPDATED with phase " + phase_name(phase));
    } else if (phase != tlm::BEGIN_RESP) {
      violation(gp, "TLM_ACCEPTED with the phase changed");
    }
    return r;
  }
  violation(gp, "the target sent " + phase_name(phase) + " on the backward path");
  return target->nb_transport_bw(gp, phase, delay);
}

void ProtocolMonitor::b_transport(tlm::tlm_generic_payload& gp, sc_time& delay) {
  ++transactions_;
  if (open_.count(&gp) != 0) violation(gp, "b_transport of a payload in an nb_transport transaction");
  if (gp.get_response_status() != tlm::TLM_INCOMPLETE_RESPONSE)
    violation(gp, "b_transport with a response status other than TLM_INCOMPLETE_RESPONSE");
  const Attributes before = Attributes::of(gp);
  initiator->b_transport(gp, delay);
  check_response(gp, before);
}

bool ProtocolMonitor::get_direct_mem_ptr(tlm::tlm_generic_payload& gp, tlm::tlm_dmi& dmi) {
  const bool granted = initiator->get_direct_mem_ptr(gp, dmi);
  if (granted && (gp.get_address() < dmi.get_start_address() || gp.get_address() > dmi.get_end_address()))
    violation(gp, "DMI granted for a range that does not hold the requested address");
  return granted;
}

unsigned int ProtocolMonitor::transport_dbg(tlm::tlm_generic_payload& gp) {
  const unsigned int n = initiator->transport_dbg(gp);
  if (n > gp.get_data_length()) violation(gp, "transport_dbg reported more bytes than asked for");
  return n;
}

void ProtocolMonitor::invalidate_direct_mem_ptr(sc_dt::uint64 start, sc_dt::uint64 end) {
  target->invalidate_direct_mem_ptr(start, end);
}

MonitorInterposer::MonitorInterposer(std::vector<std::string> prefixes) : prefixes_(std::move(prefixes)) {
  set_interposer([this](InitiatorSocketBase& init, TargetSocketBase& target) {
    const std::string from = init.get_base_port().name(), to = target.get_base_export().name();
    const bool watched = prefixes_.empty() || std::any_of(prefixes_.begin(), prefixes_.end(), [&](const std::string& p) {
      return from.rfind(p + ".", 0) == 0 || to.rfind(p + ".", 0) == 0;
    });
    if (!watched) return false;
    std::string name = "monitor_" + from;
    std::replace(name.begin(), name.end(), '.', '_');
    auto& m = monitors_.emplace_back(std::make_unique<ProtocolMonitor>(name.c_str()));
    bind_sockets(init, m->target);
    bind_sockets(m->initiator, target);
    return true;
  });
}

MonitorInterposer::~MonitorInterposer() { set_interposer({}); }

std::vector<std::string> MonitorInterposer::violations() const {
  std::vector<std::string> all;
  for (const auto& m : monitors_) all.insert(all.end(), m->violations().begin(), m->violations().end());
  return all;
}

std::uint64_t MonitorInterposer::transactions() const {
  std::uint64_t n = 0;
  for (const auto& m : monitors_) n += m->transactions();
  return n;
}

std::size_t MonitorInterposer::open_transactions() const {
  std::size_t n = 0;
  for (const auto& m : monitors_) n += m->open_transactions();
  return n;
}

}  // namespace kb
