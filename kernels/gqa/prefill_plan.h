#pragma once
// The work of one KV head's prefill, cut before the run (docs/gqa_prefill.md). The G query
// heads of the head are folded into the rows of each tile, so a KV chunk serves all of
// them at once and the work does not depend on G: the query positions are split over
// the head's position ranks (replica x cube x PE), each rank's positions cut into tiles
// of a block of heads x a run of positions. The host lays Q out and reads O back by the
// plan, the kernel walks it, and the validator checks its TCM need before the run.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "base/dp_policy.h"
#include "base/dtype.h"
#include "kernels/gqa/variant.h"

namespace kb::gqa {

enum class RowLayout : std::uint8_t {
  Contiguous,  // rank k of K: positions [k*T/K, (k+1)*T/K)
  Zigzag,      // positions cut into 2K runs; rank k takes runs k and 2K-1-k
  Striped,     // runs of `stripe` positions dealt in rounds of K, alternately forward and backward
};
std::optional<RowLayout> parse_layout(const std::string& name);
const char* layout_name(RowLayout l);

// What travels the ring (docs/gqa_prefill.md): the KV blocks, the query tiles staying
// home (pass-KV), or the query tiles with their (m, l, O) state, K and V staying in
// place (pass-Q).
enum class Ring : std::uint8_t { KV, Q };
std::optional<Ring> parse_ring(const std::string& name);
const char* ring_name(Ring r);

// The query positions rank `rank` of `ranks` owns, as ranges of [0, t_q).
std::vector<RowRange> query_rows(RowLayout layout, std::uint32_t t_q, std::uint32_t rank, std::uint32_t ranks,
                                 std::uint32_t stripe);

// Heads [head0, head0 + heads) of the group at positions [pos0, pos0 + positions): its rows
// are head-major (row r is head head0 + r / positions at position pos0 + r % positions) and
// start at `row` of its rank's region of Q, O and the state.
struct PrefillTile {
  std::uint32_t head0 = 0, heads = 0;
  std::uint64_t pos0 = 0, positions = 0;
  std::uint64_t row = 0;
  std::uint64_t rows() const { return heads * positions; }
};

struct PrefillShape {
  std::uint32_t g = 8, d = 128, t_q = 1;
  std::uint64_t s = 0;
  DType dtype = DType::bf16;
  std::uint32_t cubes = 8, pes = 8, replicas = 1;  // C, P, R: a head's ring groups
  RowLayout layout = RowLayout::Striped;
  Ring ring = Ring::KV;
  std::uint32_t q_tile = 64;       // rows a tile aims at (pass-Q: at most; halved down to 16 until a rank has two)
  std::uint32_t chunk_rows = 256;  // KV rows per ring chunk
  Variant variant = Variant::Pipelined;  // pipelined (tl ops) or fused (sequences)
};

struct PrefillPlan {
  PrefillShape shape;
  // Pass-KV with fewer positions than ranks: the positions go to cubes, whose PEs share
  // the tiles and split the KV chunks, merging their states at the end.
  bool kv_split = false;
  // Without the KV split: the ring carries one slice of each chunk per lane and the
  // cube shares the slices (each block crosses each link once), which locks a cube's
  // PEs together chunk by chunk; only a layout that gives every rank the same work per
  // KV block (striped) does that without waiting. Otherwise every lane carries every
  // chunk whole and the lanes run apart.
  bool shared_slices = false;
  std::uint32_t tile_heads = 1, tile_positions = 1;
  std::uint64_t stride = 0;                     // rows of Q, O and state per PE shard (of())
  std::vector<std::vector<PrefillTile>> ranks;  // per position rank, replica-major

  static PrefillPlan of(const PrefillShape& shape);
  // The plan without its tiles: the tile shape, the split and the TCM need.
  static PrefillPlan geometry(const PrefillShape& shape);
  std::uint32_t tile_rows() const { return tile_heads * tile_positions; }
  // The position rank of a PE of a replica's group (its cube's rank when kv_split).
  std::uint32_t rank_of(std::uint32_t replica, std::uint32_t cube, std::uint32_t pe) const;
  // Where a PE's tiles start in its group's Q and O (kv_split: its cube's, in PE 0's shard)
  // and in the state (each PE its own).
  std::uint64_t qo_base(std::uint32_t cube, std::uint32_t pe) const;
  std::uint64_t state_base(std::uint32_t cube, std::uint32_t pe) const;
  // The TCM a PE of the kernel needs at most, bytes.
  std::uint64_t tcm_bytes() const;
};

}  // namespace kb::gqa
