#include "models/noc/mesh.h"

#include "models/common/binding.h"

namespace kb {

Noc::Noc(const sc_core::sc_module_name& name, const Topology& topo, const AddressMap& map)
    : sc_core::sc_module(name), mesh_x_(topo.sip.mesh_x) {
  const std::uint32_t n = topo.cubes_per_sip();
  routers_.reserve(n);
  for (std::uint32_t c = 0; c < n; ++c)
    routers_.push_back(
        std::make_unique<NocRouter>(("router" + std::to_string(c)).c_str(), topo, map, CubeId(c)));
  // East/west and north/south neighbours, both ways.
  for (std::uint32_t c = 0; c < n; ++c) {
    NocRouter& r = *routers_[c];
    if (r.has(Direction::East)) {
      NocRouter& e = *routers_[c + 1];
      connect(r.out(Direction::East), e.in(Direction::West));
      connect(e.out(Direction::West), r.in(Direction::East));
    }
    if (r.has(Direction::South)) {
      NocRouter& s = *routers_[c + mesh_x_];
      connect(r.out(Direction::South), s.in(Direction::North));
      connect(s.out(Direction::North), r.in(Direction::South));
    }
  }
}

std::vector<CubeId> Noc::xy_path(CubeId src, CubeId dst) const {
  std::vector<CubeId> path;
  CubeId at = src;
  while (const auto step = routers_.at(at.value)->next_step(dst)) {
    path.push_back(at);
    switch (*step) {
      case Direction::East: at = CubeId(at.value + 1); break;
      case Direction::West: at = CubeId(at.value - 1); break;
      case Direction::South: at = CubeId(at.value + mesh_x_); break;
      case Direction::North: at = CubeId(at.value - mesh_x_); break;
    }
  }
  return path;
}

std::vector<const Link*> Noc::xy_links(CubeId src, CubeId dst) const {
  std::vector<const Link*> links;
  for (const CubeId c : xy_path(src, dst))
    links.push_back(routers_.at(c.value)->link(*routers_.at(c.value)->next_step(dst)));
  return links;
}

}  // namespace kb
