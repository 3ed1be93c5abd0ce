#include "models/cube/cube.h"

#include "models/common/binding.h"

namespace kb {

Cube::Cube(const sc_core::sc_module_name& name, const Topology& topo, const AddressMap& map,
           SipId sip, CubeId cube, bool host_port)
    : sc_core::sc_module(name), fabric("fabric", topo, map, cube, host_port), id_(cube) {
  for (std::uint32_t p = 0; p < topo.cube.pes; ++p) {
    const std::string n = std::to_string(p);
    channels_.push_back(
        std::make_unique<Hbm>(("hbm" + n).c_str(), topo, map.hbm(cube.value, p, 0)));
    pes_.push_back(
        std::make_unique<Pe>(("pe" + n).c_str(), topo, map, PeCoord{sip, cube, PeId(p)}));
    Pe& pe = *pes_.back();
    connect(pe.dma.memory, fabric.from_dma(PeId(p)));
    connect(pe.ipcq.network, fabric.from_ipcq(PeId(p)));
    connect(fabric.to_hbm(PeId(p)), channels_.back()->socket);
    connect(fabric.to_mailbox(PeId(p)), pe.ipcq.mailbox);
  }
}

}  // namespace kb
