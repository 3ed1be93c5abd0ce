#include "models/sip/sip.h"

#include "models/common/binding.h"

namespace kb {

Sip::Sip(const sc_core::sc_module_name& name, const Topology& topo, SipId id, bool host_port)
    : sc_core::sc_module(name), id_(id), map_(topo, id), noc("noc", topo, map_) {
  if (host_port) host_ = std::make_unique<HostBridge>("host", map_, topo.cubes_per_sip());
  for (std::uint32_t c = 0; c < topo.cubes_per_sip(); ++c) {
    cubes_.push_back(
        std::make_unique<Cube>(("cube" + std::to_string(c)).c_str(), topo, map_, id, CubeId(c), host_port));
    Cube& cube = *cubes_.back();
    connect(cube.fabric.to_noc(), noc.router(CubeId(c)).local_in());
    connect(noc.router(CubeId(c)).local_out(), cube.fabric.from_noc());
    if (host_) connect(host_->to_cube(CubeId(c)), cube.fabric.from_host());
  }
  if (topo.system.links.kind == Topology::SystemSpec::Links::Kind::None) return;
  links_ = std::make_unique<LinkInterface>(topo, id);
  for (const std::uint32_t c : topo.system.links.ports) {
    ports_.push_back(std::make_unique<LinkPort>(("link_port" + std::to_string(c)).c_str(), *links_, map_));
    LinkPort& port = *ports_.back();
    links_->add_port(CubeId(c), port);
    connect(noc.router(CubeId(c)).link_out(), port.from_mesh);
    connect(port.to_mesh, noc.router(CubeId(c)).link_in());
  }
}

}  // namespace kb
