#include "models/noc/noc_router.h"
#include "models/common/clock.h"

#include "models/noc/route_record.h"

#include <algorithm>

namespace kb {

NocRouter::NocRouter(const sc_core::sc_module_name& name, const Topology& topo,
                     const AddressMap& map, CubeId cube)
    : AtRouter(name, Cause::Noc),
      map_(map),
      cube_(cube),
      mesh_(topo.mesh()),
      params_(topo.sip.noc),
      cycle_(cycle_time(topo)) {
  add_target("local_in");
  add_initiator("local_out");
  for (std::size_t d = 0; d < 4; ++d) {
    if (!mesh_.neighbour(cube, static_cast<Direction>(d))) continue;
    const std::string dir = direction_name(static_cast<Direction>(d));
    const std::size_t t = add_target(dir + "_in");
    add_initiator(dir + "_out");
    ports_[d] = t;
    dir_of_port_[t] = static_cast<Direction>(d);
    links_[d] = std::make_unique<Link>(std::string(this->name()) + "." + dir, params_, cycle_);
  }
  const auto& ports = topo.system.links.ports;
  if (topo.system.links.kind != Topology::SystemSpec::Links::Kind::None &&
      std::find(ports.begin(), ports.end(), cube.value) != ports.end()) {
    link_port_ = add_target("link_in");
    add_initiator("link_out");
  }
}

void NocRouter::record_to(Waveform& wave) {
  for (auto& l : links_)
    if (l) l->record_to(wave);
}

void NocRouter::count_into(ActivityMeter& meter) {
  for (auto& l : links_)
    if (l) l->count_into(meter, Act::Noc);
}

std::optional<Direction> NocRouter::next_step(CubeId dst) const {
  return mesh_.xy_step(cube_, dst);
}

std::optional<AtRouter::Hop> NocRouter::route(const tlm::tlm_generic_payload& gp, std::size_t in) {
  const auto dst = map_.decode(gp.get_address(), gp.get_data_length());
  if (!dst) return std::nullopt;
  const std::optional<Direction> from = dir_of_port_[in];  // nullopt: from the local cube
  Hop hop;
  // The response retraces the request: back over our link toward where it came from,
  // or, at the router where it entered the mesh, out to the cube once its tail arrives.
  if (from) {
    hop.response_links = {links_[index(*from)].get()};
    hop.response_delay = links_[index(*from)]->latency();
  } else {
    hop.response_delay = serialisation(params_, cycle_, response_bytes(gp));
  }
  // A message for another SIP leaves the mesh at the port cube its address names.
  const bool remote = dst->region == DecodedAddress::Region::Remote;
  if (remote && !link_port_ && dst->via == cube_.value) return std::nullopt;  // no port here
  const std::optional<Direction> step = next_step(CubeId(remote ? dst->via : dst->cube));
  if (!step) {
    hop.out = remote ? *link_port_ : 0;
    if (from) hop.request_delay = serialisation(params_, cycle_, request_bytes(gp));
    return hop;
  }
  Link* link = links_[index(*step)].get();
  hop.out = *ports_[index(*step)];
  hop.request_links = {link};
  hop.request_delay = link->latency();
  if (auto* record = gp.get_extension<RouteRecord>()) record->cubes.push_back(cube_.value);
  return hop;
}

}  // namespace kb
