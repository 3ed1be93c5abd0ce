#include "base/mesh.h"

#include <utility>

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

std::vector<std::uint32_t> ring_order(std::uint32_t w, std::uint32_t h) {
  if (w * h <= 2) {
    std::vector<std::uint32_t> r;
    for (std::uint32_t i = 0; i < w * h; ++i) r.push_back(i);
    return r;
  }
  // With an even number of rows: along row 0, snake back over columns 1.. of the other
  // rows, then up column 0. An even number of columns: the same, transposed.
  const bool transpose = h % 2 != 0;
  const std::uint32_t cols = transpose ? h : w, rows = transpose ? w : h;
  std::vector<std::pair<std::uint32_t, std::uint32_t>> path;  // (x, y) in the possibly transposed grid
  for (std::uint32_t x = 0; x < cols; ++x) path.emplace_back(x, 0);
  for (std::uint32_t y = 1; y < rows; ++y)
    for (std::uint32_t i = 0; i + 1 < cols; ++i) path.emplace_back(y % 2 == 1 ? cols - 1 - i : 1 + i, y);
  for (std::uint32_t y = rows - 1; y >= 1; --y) path.emplace_back(0, y);
  std::vector<std::uint32_t> order;
  for (const auto& [x, y] : path) order.push_back(transpose ? x * w + y : y * w + x);
  return order;
}


}  // namespace kb
