#include "base/mesh.h"

namespace kb {

const char* direction_name(Direction d) {
  switch (d) {
    case Direction::North: return "north";
    case Direction::East: return "east";
    case Direction::South: return "south";
    case Direction::West: return "west";
  }
  return "?";
}

std::optional<CubeId> Mesh::neighbour(CubeId c, Direction d) const {
  const MeshPos p = pos(c);
  switch (d) {
    case Direction::North: return p.y > 0 ? std::optional(id({p.x, p.y - 1})) : std::nullopt;
    case Direction::East: return p.x + 1 < width_ ? std::optional(id({p.x + 1, p.y})) : std::nullopt;
    case Direction::South: return p.y + 1 < height_ ? std::optional(id({p.x, p.y + 1})) : std::nullopt;
    case Direction::West: return p.x > 0 ? std::optional(id({p.x - 1, p.y})) : std::nullopt;
  }
  return std::nullopt;
}

std::optional<Direction> Mesh::xy_step(CubeId at, CubeId dst) const {
  const MeshPos a = pos(at), d = pos(dst);
  if (d.x > a.x) return Direction::East;
  if (d.x < a.x) return Direction::West;
  if (d.y > a.y) return Direction::South;
  if (d.y < a.y) return Direction::North;
  return std::nullopt;
}

std::vector<CubeId> Mesh::xy_path(CubeId src, CubeId dst) const {
  std::vector<CubeId> path;
  for (CubeId at = src; const auto step = xy_step(at, dst);) {
    path.push_back(at);
    at = *neighbour(at, *step);
  }
  return path;
}

std::uint32_t Mesh::hops(CubeId a, CubeId b) const {
  const MeshPos p = pos(a), q = pos(b);
  return (p.x > q.x ? p.x - q.x : q.x - p.x) + (p.y > q.y ? p.y - q.y : q.y - p.y);
}

}  // namespace kb
