#include "models/sip/sip.h"

#include "models/common/binding.h"

namespace kb {

Sip::Sip(const sc_core::sc_module_name& name, const Topology& topo, SipId id, bool host_port)
    : sc_core::sc_module(name), id_(id), map_(topo), noc("noc", topo, map_) {
  if (host_port) host_ = std::make_unique<HostBridge>("host", map_, topo.cubes_per_sip());
  for (std::uint32_t c = 0; c < topo.cubes_per_sip(); ++c) {
    cubes_.push_back(
        std::make_unique<Cube>(("cube" + std::to_string(c)).c_str(), topo, map_, id, CubeId(c), host_port));
    Cube& cube = *cubes_.back();
    connect(cube.fabric.to_noc(), noc.router(CubeId(c)).local_in());
    connect(noc.router(CubeId(c)).local_out(), cube.fabric.from_noc());
    if (host_) connect(host_->to_cube(CubeId(c)), cube.fabric.from_host());
  }
}

}  // namespace kb
