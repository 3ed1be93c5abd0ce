#include "models/noc/mesh.h"

#include "models/common/binding.h"

namespace kb {

Noc::Noc(const sc_core::sc_module_name& name, const Topology& topo, const AddressMap& map)
    : sc_core::sc_module(name), mesh_(topo.mesh()) {
  const std::uint32_t n = topo.cubes_per_sip();
  routers_.reserve(n);
  for (std::uint32_t c = 0; c < n; ++c)
    routers_.push_back(
        std::make_unique<NocRouter>(("router" + std::to_string(c)).c_str(), topo, map, CubeId(c)));
  // East/west and north/south neighbours, both ways.
  for (std::uint32_t c = 0; c < n; ++c) {
    NocRouter& r = *routers_[c];
    if (r.has(Direction::East)) {
      NocRouter& e = *routers_[mesh_.neighbour(CubeId(c), Direction::East)->value];
      connect(r.out(Direction::East), e.in(Direction::West));
      connect(e.out(Direction::West), r.in(Direction::East));
    }
    if (r.has(Direction::South)) {
      NocRouter& s = *routers_[mesh_.neighbour(CubeId(c), Direction::South)->value];
      connect(r.out(Direction::South), s.in(Direction::North));
      connect(s.out(Direction::North), r.in(Direction::South));
    }
  }
}

std::vector<const Link*> Noc::xy_links(CubeId src, CubeId dst) const {
  std::vector<const Link*> links;
  for (const CubeId c : mesh_.xy_path(src, dst))
    links.push_back(routers_.at(c.value)->link(*routers_.at(c.value)->next_step(dst)));
  return links;
}

}  // namespace kb
