#include "models/link/link_port.h"

#include <algorithm>

#include "models/common/path_extension.h"
#include "models/common/sim_time.h"
#include "models/noc/route_record.h"

namespace kb {

LinkPort::LinkPort(const sc_core::sc_module_name& name, LinkInterface& links, const AddressMap& map)
    : sc_core::sc_module(name),
      from_mesh("from_mesh"),
      to_mesh("to_mesh", [this](tlm::tlm_generic_payload& gp) { delivered(gp); }),
      links_(links),
      map_(map),
      responder_([this] { return from_mesh.operator->(); }),
      arrivals_(this, &LinkPort::on_arrival) {
  from_mesh.register_nb_transport_fw(this, &LinkPort::nb_transport_fw);
  from_mesh.register_b_transport(this, &LinkPort::b_transport);
  from_mesh.register_transport_dbg(this, &LinkPort::transport_dbg);
}

bool LinkPort::admit(tlm::tlm_generic_payload& gp) const {
  const auto dst = map_.decode(gp.get_address(), gp.get_data_length());
  if (!dst || dst->region != DecodedAddress::Region::Remote || gp.get_extension<MessageExtension>() == nullptr)
    gp.set_response_status(tlm::TLM_ADDRESS_ERROR_RESPONSE);
  else if (!gp.is_write()) gp.set_response_status(tlm::TLM_COMMAND_ERROR_RESPONSE);
  else if (gp.get_byte_enable_ptr() != nullptr) gp.set_response_status(tlm::TLM_BYTE_ENABLE_ERROR_RESPONSE);
  else if (gp.get_streaming_width() != 0 && gp.get_streaming_width() < gp.get_data_length())
    gp.set_response_status(tlm::TLM_BURST_ERROR_RESPONSE);
  else return true;
  return false;
}

tlm::tlm_sync_enum LinkPort::nb_transport_fw(tlm::tlm_generic_payload& gp, tlm::tlm_phase& phase,
                                             sc_core::sc_time& delay) {
  return responder_.forward(name(), gp, phase, delay, [this](tlm::tlm_generic_payload& msg, const sc_core::sc_time& d) {
    if (!admit(msg)) return false;
    if (msg.has_mm()) msg.acquire();
    arrivals_.notify(msg, tlm::BEGIN_REQ, d);
    return true;
  });
}

void LinkPort::on_arrival(tlm::tlm_generic_payload& gp, const tlm::tlm_phase&) {
  const sc_core::sc_time left = send(gp);
  responder_.respond(gp, left - sim_time());
}

void LinkPort::b_transport(tlm::tlm_generic_payload& gp, sc_core::sc_time& delay) {
  if (!admit(gp)) return;
  if (delay > sc_core::SC_ZERO_TIME) {
    ThreadAlarm alarm(links_.timed());
    alarm.sleep(delay);
  }
  delay = send(gp) - sim_time();
}

sc_core::sc_time LinkPort::send(tlm::tlm_generic_payload& gp) {
  const auto dst = map_.decode(gp.get_address(), gp.get_data_length());
  const auto& who = *gp.get_extension<MessageExtension>();
  LinkPacket p;
  p.dst_sip = dst->sip;
  p.dst_cube = dst->cube;
  p.dst_pe = dst->pe;
  p.src_sip = who.src_sip;
  p.src_cube = who.src_cube;
  p.src_pe = who.src_pe;
  p.tag = who.tag;
  p.bytes = gp.get_data_length();
  p.timing_only = gp.get_extension<TimingOnly>() != nullptr;
  if (!p.timing_only) p.data.assign(gp.get_data_ptr(), gp.get_data_ptr() + gp.get_data_length());
  if (const auto* record = gp.get_extension<RouteRecord>()) p.route = record->cubes;
  if (const auto* trail = gp.get_extension<LinkTrail>()) p.crossings = trail->crossings;
  if (const auto* path = gp.get_extension<PathExtension>()) p.account = path->account;
  const sc_core::sc_time left = links_.send(std::move(p));
  account_until(gp, left, Cause::Link);  // the sender waits for its last byte to leave
  gp.set_response_status(tlm::TLM_OK_RESPONSE);
  return left;
}

void LinkPort::deliver(LinkPacket&& p) {
  tlm::tlm_generic_payload* gp = p.timing_only ? timing_pool_.allocate() : data_pool_.allocate();
  LinkPacket& k = in_mesh_.insert_or_assign(gp, std::move(p)).first->second;
  gp->set_command(tlm::TLM_WRITE_COMMAND);
  gp->set_address(AddressMap::remote_mailbox(k.dst_sip, 0, k.dst_cube, k.dst_pe));
  gp->set_data_length(static_cast<unsigned int>(k.bytes));
  gp->set_streaming_width(static_cast<unsigned int>(k.bytes));
  gp->set_response_status(tlm::TLM_INCOMPLETE_RESPONSE);
  if (k.timing_only) {
    if (timing_buffer_.size() < std::max<std::uint64_t>(k.bytes, 1)) timing_buffer_.resize(std::max<std::uint64_t>(k.bytes, 1));
    gp->set_data_ptr(timing_buffer_.data());
  } else {
    gp->set_data_ptr(k.data.data());
  }
  auto& who = kept_extension<MessageExtension>(*gp);
  who.src_sip = k.src_sip;
  who.src_cube = k.src_cube;
  who.src_pe = k.src_pe;
  who.tag = k.tag;
  kept_extension<RouteRecord>(*gp).cubes = k.route;
  kept_extension<LinkTrail>(*gp).crossings = k.crossings;
  kept_extension<PathExtension>(*gp).account = k.account;
  to_mesh.send(*gp);
}

void LinkPort::delivered(tlm::tlm_generic_payload& gp) {
  if (!gp.is_response_ok())
    SC_REPORT_ERROR(name(), ("message delivery failed: " + gp.get_response_string()).c_str());
  in_mesh_.erase(&gp);
  gp.release();
}

}  // namespace kb
