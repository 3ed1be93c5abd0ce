#pragma once
// The geometry of a SIP's cube mesh, in one place: cube ids are row-major
// (id = y * width + x), and the NOC routes XY: along x first, then along y.
#include <cstdint>
#include <optional>
#include <vector>

#include "base/ids.h"

namespace kb {

enum class Direction : std::uint8_t { North, East, South, West };  // north: y - 1; east: x + 1
const char* direction_name(Direction d);

struct MeshPos {
  std::uint32_t x = 0, y = 0;
  bool operator==(const MeshPos& o) const { return x == o.x && y == o.y; }
  bool operator!=(const MeshPos& o) const { return !(*this == o); }
};

class Mesh {
 public:
  Mesh(std::uint32_t width, std::uint32_t height) : width_(width), height_(height) {}
  std::uint32_t width() const { return width_; }
  std::uint32_t height() const { return height_; }
  std::uint32_t cubes() const { return width_ * height_; }

  MeshPos pos(CubeId c) const { return {c.value % width_, c.value / width_}; }
  CubeId id(MeshPos p) const { return CubeId(p.y * width_ + p.x); }
  // The neighbour one hop away (nullopt past the mesh edge).
  std::optional<CubeId> neighbour(CubeId c, Direction d) const;
  // XY routing: the first step from `at` toward `dst` (nullopt: dst is at).
  std::optional<Direction> xy_step(CubeId at, CubeId dst) const;
  // The cubes that send over a mesh link on the way from src to dst, in order (empty
  // when src == dst); its length is the hop count.
  std::vector<CubeId> xy_path(CubeId src, CubeId dst) const;
  std::uint32_t hops(CubeId a, CubeId b) const;  // |dx| + |dy|

 private:
  std::uint32_t width_, height_;
};

// A Hamiltonian cycle of a w x h rectangle of cubes (row-major indices within it, every
// step one mesh hop): the prefill ring, a collective's ring across cubes. Exists for
// every even w * h (and trivially for one or two cubes).
std::vector<std::uint32_t> ring_order(std::uint32_t w, std::uint32_t h);

}  // namespace kb
