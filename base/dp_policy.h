#pragma once
// Placement of device tensors over a CUBE Group (docs/tl.md, Placement).
// A group of C cubes is a rectangle of the SIP mesh, as square as possible with
// width >= height (1 -> 1x1, 2 -> 2x1, 4 -> 2x2, 8 -> 4x2, 16 -> 4x4); cube_start is its
// top-left cube and its cubes are enumerated row-major inside the rectangle. Along each
// axis (cube, pe) a tensor is replicated or sharded row-wise; row-wise over both gives
// rank r = cube_in_group * P + pe the contiguous rows [r*B, (r+1)*B), B = ceil(rows/ranks),
// the last ranks holding fewer rows, possibly none.
#include <cstdint>
#include <string>
#include <vector>

#include "base/ids.h"
#include "base/topology.h"

namespace kb {

enum class Placement : std::uint8_t { Replicate, RowWise };

struct DPPolicy {
  Placement cube_axis = Placement::Replicate;
  Placement pe_axis = Placement::Replicate;
  std::uint32_t cube_start = 0;  // top-left cube of the group (row-major id in the SIP)
  std::uint32_t cubes = 1;       // C
  std::uint32_t pes = 1;         // P: PEs 0..P-1 of each cube

  static DPPolicy shard2d(std::uint32_t c, std::uint32_t p, std::uint32_t cube_start = 0);
  static DPPolicy replicate(std::uint32_t c, std::uint32_t p, std::uint32_t cube_start = 0);
  // Row-wise over the cubes, each cube's slice replicated on its P PEs.
  static DPPolicy cube_rows(std::uint32_t c, std::uint32_t p, std::uint32_t cube_start = 0);

  std::uint32_t shards() const;  // distinct row blocks
  std::uint32_t shard_of(std::uint32_t cube_in_group, std::uint32_t pe) const;
  std::string describe() const;
};

struct GroupShape {
  std::uint32_t w = 0, h = 0;
};
GroupShape group_shape(std::uint32_t cubes);

// The cubes of a group, in group order. Throws std::invalid_argument if it does not fit.
std::vector<CubeId> group_cubes(const Topology& topo, std::uint32_t cube_start, std::uint32_t cubes);

struct RowRange {
  std::uint64_t begin = 0, count = 0;
  std::uint64_t end() const { return begin + count; }
};
// Contiguous block s of `shards` over `rows` rows.
RowRange shard_rows(std::uint64_t rows, std::uint32_t shards, std::uint32_t s);

}  // namespace kb
