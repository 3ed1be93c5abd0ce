#pragma once
// A SIP's link interface: its link ports (one at each port cube, system.links.ports) and
// its ends of the links between SIPs. A message that leaves the SIP at a port goes over
// the first link of its route; one that a link brings is handed to the port nearest its
// destination cube, or sent on over the next link when it only passes through. A switch
// is no block of its own: its output toward a SIP is that SIP's link to it, which the
// destination SIP's interface holds for each message in turn (docs/topology.md, Links).
#include <functional>
#include <map>
#include <vector>

#include "base/sip_graph.h"
#include "models/link/chip_link.h"
#include "models/link/inbound.h"

namespace kb {

class LinkPort;

class LinkInterface {
 public:
  // Delivers a packet to the Inbound of SIP `sip` (where it goes next).
  using Courier = std::function<void(std::uint32_t sip, LinkPacket&&)>;

  // Made while its SIP is built: its Inbound runs in the SIP's dispatch domain.
  LinkInterface(const Topology& topo, SipId sip);
  LinkInterface(const LinkInterface&) = delete;
  LinkInterface& operator=(const LinkInterface&) = delete;

  void add_port(CubeId cube, LinkPort& port) { ports_[cube.value] = &port; }
  // Joins the system's links (indexed as graph.links()); packets for other SIPs go to `courier`.
  void join(const SipGraph& graph, std::vector<ChipLink*> links, Courier courier);

  // A message from this SIP's mesh, now at a port, for another SIP: it crosses the first
  // link of its route. Returns when its last byte has left (what the sender waits for).
  sc_core::sc_time send(LinkPacket&& p);
  Inbound& inbound() { return inbound_; }
  TimedDispatch& timed() { return timed_; }  // its SIP's
  SipId sip() const { return sip_; }
  // Counts the bytes this SIP puts on a link (a switch's egress counts at the receiver,
  // whose interface sends it on) into `meter`.
  void count_into(ActivityMeter& meter) { meter_ = &meter; }

 private:
  void arrive(LinkPacket&& p);
  // Holds `link`'s direction for p from now (or when it is free), and passes p on to the far end.
  sc_core::sc_time cross(LinkPacket&& p, std::uint32_t link, bool forward);

  const Topology& topo_;
  SipId sip_;
  TimedDispatch& timed_;
  const SipGraph* graph_ = nullptr;
  std::vector<ChipLink*> links_;
  Courier courier_;
  ActivityMeter* meter_ = nullptr;
  std::map<std::uint32_t, LinkPort*> ports_;  // by cube
  Inbound inbound_;
};

}  // namespace kb
