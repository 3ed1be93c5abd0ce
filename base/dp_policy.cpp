#include "base/dp_policy.h"

#include <stdexcept>

namespace kb {

DPPolicy DPPolicy::shard2d(std::uint32_t c, std::uint32_t p, std::uint32_t cube_start) {
  return {Placement::RowWise, Placement::RowWise, cube_start, c, p};
}
DPPolicy DPPolicy::replicate(std::uint32_t c, std::uint32_t p, std::uint32_t cube_start) {
  return {Placement::Replicate, Placement::Replicate, cube_start, c, p};
}
DPPolicy DPPolicy::cube_rows(std::uint32_t c, std::uint32_t p, std::uint32_t cube_start) {
  return {Placement::RowWise, Placement::Replicate, cube_start, c, p};
}

std::uint32_t DPPolicy::shards() const {
  return (cube_axis == Placement::RowWise ? cubes : 1) * (pe_axis == Placement::RowWise ? pes : 1);
}

std::uint32_t DPPolicy::shard_of(std::uint32_t cube_in_group, std::uint32_t pe) const {
  const std::uint32_t per_cube = pe_axis == Placement::RowWise ? pes : 1;
  return (cube_axis == Placement::RowWise ? cube_in_group : 0) * per_cube +
         (pe_axis == Placement::RowWise ? pe : 0);
}

std::string DPPolicy::describe() const {
  auto axis = [](Placement p) { return p == Placement::RowWise ? "row_wise" : "replicate"; };
  return "cubes " + std::to_string(cubes) + " from cube " + std::to_string(cube_start) + " (" +
         axis(cube_axis) + ") x pes " + std::to_string(pes) + " (" + axis(pe_axis) + ")";
}

GroupShape group_shape(std::uint32_t cubes) {
  std::uint32_t h = 1;
  for (std::uint32_t d = 1; d * d <= cubes; ++d)
    if (cubes % d == 0) h = d;
  return {cubes / h, h};
}

std::vector<CubeId> group_cubes(const Topology& topo, std::uint32_t cube_start, std::uint32_t cubes) {
  if (cubes == 0) throw std::invalid_argument("a CUBE Group needs at least one cube");
  const GroupShape g = group_shape(cubes);
  const Mesh mesh = topo.mesh();
  const std::uint32_t mx = mesh.width(), my = mesh.height();
  const MeshPos p0 = mesh.pos(CubeId(cube_start));
  if (cube_start >= mesh.cubes() || p0.x + g.w > mx || p0.y + g.h > my)
    throw std::invalid_argument("a group of " + std::to_string(cubes) + " cubes is a " +
                                std::to_string(g.w) + "x" + std::to_string(g.h) +
                                " rectangle; from cube " + std::to_string(cube_start) +
                                " it does not fit the " + std::to_string(mx) + "x" +
                                std::to_string(my) + " mesh");
  std::vector<CubeId> out;
  for (std::uint32_t y = 0; y < g.h; ++y)
    for (std::uint32_t x = 0; x < g.w; ++x) out.push_back(mesh.id({p0.x + x, p0.y + y}));
  return out;
}

RowRange shard_rows(std::uint64_t rows, std::uint32_t shards, std::uint32_t s) {
  const std::uint64_t block = (rows + shards - 1) / shards;
  const std::uint64_t begin = std::min<std::uint64_t>(rows, block * s);
  return {begin, std::min<std::uint64_t>(rows, begin + block) - begin};
}

}  // namespace kb
