#include "models/pe/pe_ipcq.h"

#include <algorithm>

#include "models/common/sim_time.h"
#include "models/common/dispatch.h"
#include "models/noc/route_record.h"
#include "base/sip_graph.h"

namespace kb {

using sc_core::sc_time;

PeIpcq::PeIpcq(const sc_core::sc_module_name& name, const Topology& topo, const AddressMap& map,
               PeCoord self)
    : PeEngine(name, topo, 1, Cause::Fabric),
      network("network", [this](tlm::tlm_generic_payload& gp) { sent(gp); }),
      mailbox("mailbox"),
      map_(map),
      self_(self),
      exit_port_(topo.system.links.ports.empty() ? self.cube : nearest_port(topo, self.cube)),
      timed_(TimedDispatch::get()),
      mailbox_responder_([this] { return mailbox.operator->(); }),
      arrivals_(this, &PeIpcq::on_arrival) {
  mailbox.register_nb_transport_fw(this, &PeIpcq::mailbox_fw);
  mailbox.register_b_transport(this, &PeIpcq::mailbox_b_transport);
}

void PeIpcq::start(tlm::tlm_generic_payload& gp, Command& cmd) {
  sending_ = &gp;
  tally(Act::TcmRead, cmd.bytes);
  tlm::tlm_generic_payload* msg = cmd.tcm != nullptr ? data_pool_.allocate() : timing_pool_.allocate();
  msg->set_command(tlm::TLM_WRITE_COMMAND);
  msg->set_address(cmd.dst_sip == self_.sip.value
                       ? map_.mailbox(cmd.dst_cube, cmd.dst_pe)
                       : AddressMap::remote_mailbox(cmd.dst_sip, exit_port_.value, cmd.dst_cube, cmd.dst_pe));
  msg->set_data_length(static_cast<unsigned int>(cmd.bytes));
  msg->set_streaming_width(static_cast<unsigned int>(cmd.bytes));
  msg->set_response_status(tlm::TLM_INCOMPLETE_RESPONSE);
  if (cmd.tcm != nullptr) {
    msg->set_data_ptr(cmd.tcm);
  } else {
    if (timing_buffer_.size() < std::max<std::uint64_t>(cmd.bytes, 1))
      timing_buffer_.resize(std::max<std::uint64_t>(cmd.bytes, 1));
    msg->set_data_ptr(timing_buffer_.data());
  }
  // Every message of the pools carries these three, set afresh for each send.
  auto& who = kept_extension<MessageExtension>(*msg);
  who.src_sip = self_.sip.value;
  who.src_cube = self_.cube.value;
  who.src_pe = self_.pe.value;
  who.tag = cmd.tag;
  kept_extension<RouteRecord>(*msg).cubes.clear();
  kept_extension<PathExtension>(*msg).account = cmd.path;
  network.send(*msg);
}

void PeIpcq::sent(tlm::tlm_generic_payload& msg) {
  if (!msg.is_response_ok())
    SC_REPORT_ERROR(name(), ("message delivery failed: " + msg.get_response_string()).c_str());
  bytes_sent_ += msg.get_data_length();
  add_work(msg.get_data_length(), 0);
  tlm::tlm_generic_payload* cmd = sending_;
  sending_ = nullptr;
  if (const auto* path = msg.get_extension<PathExtension>()) CommandExtension::of(*cmd).path.join(path->account);
  msg.release();
  finish(*cmd);
}

namespace {
bool from(const Message& m, const PeCoord& src, std::uint32_t tag) {
  return m.src_sip == src.sip.value && m.src_cube == src.cube.value && m.src_pe == src.pe.value && m.tag == tag;
}
}  // namespace

std::optional<Message> PeIpcq::take(const PeCoord& src, std::uint32_t tag) {
  for (auto it = received_.begin(); it != received_.end(); ++it)
    if (from(*it, src, tag)) {
      Message m = std::move(*it);
      received_.erase(it);
      return m;
    }
  return std::nullopt;
}

std::size_t PeIpcq::count(const PeCoord& src, std::uint32_t tag) const {
  return static_cast<std::size_t>(
      std::count_if(received_.begin(), received_.end(), [&](const Message& m) { return from(m, src, tag); }));
}

// A message counts as arrived (takeable) only from its arrival time on.
void PeIpcq::on_arrival(tlm::tlm_generic_payload& gp, const tlm::tlm_phase&) {
  deliver(gp);
  mailbox_responder_.respond(gp, sc_core::SC_ZERO_TIME);
}

void PeIpcq::deliver(tlm::tlm_generic_payload& gp) {
  const sc_time arrival = sim_time();
  Message m;
  if (const auto* who = gp.get_extension<MessageExtension>()) {
    m.src_sip = who->src_sip;
    m.src_cube = who->src_cube;
    m.src_pe = who->src_pe;
    m.tag = who->tag;
  }
  if (const auto* record = gp.get_extension<RouteRecord>()) m.path = record->cubes;
  if (const auto* trail = gp.get_extension<LinkTrail>()) m.crossings = trail->crossings;
  m.bytes = gp.get_data_length();
  m.arrival = arrival;
  tally(Act::TcmWrite, m.bytes);  // the mailbox is in the TCM
  if (const auto* path = gp.get_extension<PathExtension>()) {
    m.account = path->account;
    m.account.advance(ticks(arrival), Cause::Fabric);
  }
  if (gp.get_extension<TimingOnly>() == nullptr)
    m.data.assign(gp.get_data_ptr(), gp.get_data_ptr() + gp.get_data_length());
  received_.push_back(std::move(m));
  gp.set_response_status(tlm::TLM_OK_RESPONSE);
  arrived_.notify(sc_core::SC_ZERO_TIME);
  if (on_message_) on_message_();
}

namespace {
// A mailbox takes whole messages: writes, every byte (no byte enables, no streaming).
bool admit_message(tlm::tlm_generic_payload& msg) {
  if (!msg.is_write()) msg.set_response_status(tlm::TLM_COMMAND_ERROR_RESPONSE);
  else if (msg.get_byte_enable_ptr() != nullptr) msg.set_response_status(tlm::TLM_BYTE_ENABLE_ERROR_RESPONSE);
  else if (msg.get_streaming_width() != 0 && msg.get_streaming_width() < msg.get_data_length())
    msg.set_response_status(tlm::TLM_BURST_ERROR_RESPONSE);
  else return true;
  return false;
}
}  // namespace

tlm::tlm_sync_enum PeIpcq::mailbox_fw(tlm::tlm_generic_payload& gp, tlm::tlm_phase& phase,
                                      sc_time& delay) {
  return mailbox_responder_.forward(name(), gp, phase, delay, [this](tlm::tlm_generic_payload& msg, const sc_time& d) {
    if (!admit_message(msg)) return false;
    if (msg.has_mm()) msg.acquire();
    arrivals_.notify(msg, tlm::BEGIN_REQ, d);
    return true;
  });
}

void PeIpcq::mailbox_b_transport(tlm::tlm_generic_payload& gp, sc_time& delay) {
  if (!admit_message(gp)) return;
  // b_transport may wait: the message arrives at the annotated time
  if (delay == sc_core::SC_ZERO_TIME) {
    sc_core::wait(delay);
  } else {
    ThreadAlarm alarm(timed_);  // in the caller's thread, through this SIP's TimedDispatch
    alarm.sleep(delay);
  }
  delay = sc_core::SC_ZERO_TIME;
  deliver(gp);
}

}  // namespace kb
