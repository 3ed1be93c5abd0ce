#pragma once
// One router of the CUBE-mesh NOC (one per cube). XY routing: first along x, then y.
// Each router owns its outgoing mesh links. Cut-through: a payload holds each link of
// its path for bytes/bandwidth, its head moves on after the hop latency, and it is
// delivered when its tail leaves the mesh, so an uncontended transfer over h hops takes
// h * hop_latency + bytes / bandwidth. A router at a port cube (system.links.ports) also
// joins the SIP's link port: a message for another SIP goes XY to the port cube its
// address names and leaves the mesh there; one from the links enters the mesh there.
#include <array>
#include <memory>
#include <optional>

#include "models/common/at_router.h"
#include "base/ids.h"
#include "base/address_map.h"

namespace kb {

class NocRouter : public AtRouter {
 public:
  NocRouter(const sc_core::sc_module_name& name, const Topology& topo, const AddressMap& map,
            CubeId cube);

  TargetSocket& local_in() { return target(0); }
  InitiatorSocket& local_out() { return initiator(0); }
  // Ports toward a neighbour; only directions with a neighbour exist.
  TargetSocket& in(Direction d) { return target(*ports_[index(d)]); }
  InitiatorSocket& out(Direction d) { return initiator(*ports_[index(d)]); }
  bool has(Direction d) const { return ports_[index(d)].has_value(); }
  // The link port's sockets; only at a port cube.
  bool has_link_port() const { return link_port_.has_value(); }
  TargetSocket& link_in() { return target(*link_port_); }
  InitiatorSocket& link_out() { return initiator(*link_port_); }
  // The outgoing link toward a neighbour (nullptr at the mesh edge).
  const Link* link(Direction d) const { return links_[index(d)].get(); }
  void record_to(Waveform& wave);  // the busy intervals of its outgoing mesh links
  void count_into(ActivityMeter& meter);  // the bytes over its outgoing mesh links: a hop each

  // The first step from this router toward `dst` (nullopt: dst is here).
  std::optional<Direction> next_step(CubeId dst) const;

 private:
  static std::size_t index(Direction d) { return static_cast<std::size_t>(d); }
  std::optional<Hop> route(const tlm::tlm_generic_payload& gp, std::size_t in) override;

  const AddressMap& map_;
  CubeId cube_;
  Mesh mesh_;
  LinkParams params_;
  sc_core::sc_time cycle_;
  std::array<std::optional<std::size_t>, 4> ports_;  // socket index per direction
  std::optional<std::size_t> link_port_;              // socket index of the link port
  std::array<std::unique_ptr<Link>, 4> links_;
  std::array<std::optional<Direction>, 6> dir_of_port_;  // target index -> direction
};

}  // namespace kb
