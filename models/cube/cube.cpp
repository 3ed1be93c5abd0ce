#include "models/cube/cube.h"

namespace kb {

Cube::Cube(const sc_core::sc_module_name& name, const Topology& topo, const AddressMap& map,
           SipId sip, CubeId cube)
    : sc_core::sc_module(name), fabric("fabric", topo, map, cube), id_(cube) {
  for (std::uint32_t p = 0; p < topo.cube.pes; ++p) {
    const std::string n = std::to_string(p);
    channels_.push_back(
        std::make_unique<Hbm>(("hbm" + n).c_str(), topo, map.hbm(cube.value, p, 0)));
    pes_.push_back(
        std::make_unique<Pe>(("pe" + n).c_str(), topo, map, PeCoord{sip, cube, PeId(p)}));
    Pe& pe = *pes_.back();
    pe.dma.memory.bind(fabric.from_dma(PeId(p)));
    pe.ipcq.network.bind(fabric.from_ipcq(PeId(p)));
    fabric.to_hbm(PeId(p)).bind(channels_.back()->socket);
    fabric.to_mailbox(PeId(p)).bind(pe.ipcq.mailbox);
  }
}

}  // namespace kb
