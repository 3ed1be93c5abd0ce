#include "models/link/link_interface.h"

#include <algorithm>

#include "models/common/path_extension.h"
#include "models/common/sim_time.h"
#include "models/link/link_port.h"

namespace kb {

LinkInterface::LinkInterface(const Topology& topo, SipId sip)
    : topo_(topo),
      sip_(sip),
      timed_(TimedDispatch::get()),
      inbound_(timed_, [this](LinkPacket&& p) { arrive(std::move(p)); }) {}

void LinkInterface::join(const SipGraph& graph, std::vector<ChipLink*> links, Courier courier) {
  graph_ = &graph;
  links_ = std::move(links);
  courier_ = std::move(courier);
}

sc_core::sc_time LinkInterface::send(LinkPacket&& p) {
  const auto step = graph_->next(sip_.value, p.dst_sip);
  if (!step) SC_REPORT_FATAL("link", ("no route from sip" + std::to_string(sip_.value) + " to sip" + std::to_string(p.dst_sip)).c_str());
  return cross(std::move(p), step->link, step->forward);
}

sc_core::sc_time LinkInterface::cross(LinkPacket&& p, std::uint32_t link, bool forward) {
  ChipLink& l = *links_.at(link);
  Link& d = l.direction(forward);
  const sc_core::sc_time start = std::max(sim_time(), d.free_at());
  d.hold(start, p.bytes);
  if (meter_ != nullptr && p.bytes > 0) meter_->add(Act::Link, p.bytes, start);
  const sc_core::sc_time busy_end = start + d.serialisation(p.bytes), arrive = busy_end + d.latency();
  p.crossings.push_back({l.direction_name(forward), start.value(), busy_end.value(), arrive.value()});
  p.account.advance(ticks(arrive), Cause::Link);
  p.at = arrive.value();
  p.link = link;
  p.forward = forward;
  p.seq = l.next_seq(forward);
  const std::uint32_t far = forward ? l.ends().b : l.ends().a;
  // At a switch the message waits for the link to its destination, in that SIP's order.
  p.stage = far == SipGraph::kSwitch ? LinkPacket::Stage::SwitchEgress : LinkPacket::Stage::Arrive;
  courier_(far == SipGraph::kSwitch ? p.dst_sip : far, std::move(p));
  return busy_end;
}

void LinkInterface::arrive(LinkPacket&& p) {
  if (p.stage == LinkPacket::Stage::SwitchEgress) {
    const auto down = graph_->next(SipGraph::kSwitch, sip_.value);
    cross(std::move(p), down->link, down->forward);
    return;
  }
  if (p.dst_sip != sip_.value) {  // passing through: on over the next link, not over the mesh
    send(std::move(p));
    return;
  }
  ports_.at(nearest_port(topo_, CubeId(p.dst_cube)).value)->deliver(std::move(p));
}

}  // namespace kb
