#include "models/sip/sip.h"

namespace kb {

Sip::Sip(const sc_core::sc_module_name& name, const Topology& topo, SipId id)
    : sc_core::sc_module(name), id_(id), map_(topo), noc("noc", topo, map_) {
  for (std::uint32_t c = 0; c < topo.cubes_per_sip(); ++c) {
    cubes_.push_back(
        std::make_unique<Cube>(("cube" + std::to_string(c)).c_str(), topo, map_, id, CubeId(c)));
    Cube& cube = *cubes_.back();
    cube.fabric.to_noc().bind(noc.router(CubeId(c)).local_in());
    noc.router(CubeId(c)).local_out().bind(cube.fabric.from_noc());
  }
}

}  // namespace kb
