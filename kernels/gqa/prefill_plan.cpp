#include "kernels/gqa/prefill_plan.h"

#include <algorithm>

#include "kernels/tl/ctx.h"

namespace kb::gqa {

std::optional<RowLayout> parse_layout(const std::string& name) {
  if (name == "contiguous") return RowLayout::Contiguous;
  if (name == "zigzag") return RowLayout::Zigzag;
  if (name == "striped") return RowLayout::Striped;
  return std::nullopt;
}

const char* layout_name(RowLayout l) {
  switch (l) {
    case RowLayout::Contiguous: return "contiguous";
    case RowLayout::Zigzag: return "zigzag";
    case RowLayout::Striped: return "striped";
  }
  return "?";
}

std::vector<RowRange> query_rows(RowLayout layout, std::uint32_t t_q, std::uint32_t rank, std::uint32_t ranks,
                                 std::uint32_t stripe) {
  std::vector<RowRange> out;
  if (layout == RowLayout::Contiguous) {
    out.push_back(shard_rows(t_q, ranks, rank));
  } else if (layout == RowLayout::Striped) {
    // Round j deals its K stripes forward when j is even, backward when odd, so the
    // causal work balances like zigzag's; the positions left after the last full round
    // are shared evenly (one short stripe each).
    const std::uint64_t round = static_cast<std::uint64_t>(stripe) * ranks, full = t_q / round;
    for (std::uint64_t j = 0; j <= full; ++j) {
      const std::uint32_t k = j % 2 == 0 ? rank : ranks - 1 - rank;
      const RowRange r = j < full ? RowRange{static_cast<std::uint64_t>(k) * stripe, stripe}
                                  : shard_rows(t_q - full * round, ranks, k);
      if (r.count > 0) out.push_back({j * round + r.begin, r.count});
    }
  } else {
    out.push_back(shard_rows(t_q, 2 * ranks, rank));
    out.push_back(shard_rows(t_q, 2 * ranks, 2 * ranks - 1 - rank));
  }
  std::erase_if(out, [](const RowRange& r) { return r.count == 0; });
  return out;
}

std::optional<Ring> parse_ring(const std::string& name) {
  if (name == "kv") return Ring::KV;
  if (name == "q") return Ring::Q;
  return std::nullopt;
}

const char* ring_name(Ring r) { return r == Ring::Q ? "q" : "kv"; }

PrefillPlan PrefillPlan::geometry(const PrefillShape& shape) {
  PrefillPlan p;
  p.shape = shape;
  const std::uint64_t ranks = static_cast<std::uint64_t>(shape.replicas) * shape.cubes * shape.pes;
  const bool pass_q = shape.ring == Ring::Q;
  p.kv_split = !pass_q && shape.t_q < ranks;
  p.shared_slices = !pass_q && !p.kv_split && shape.layout == RowLayout::Striped;
  // A tile holds all G heads when they fit in two tiles' worth of rows (one GEMM pass
  // over more rows beats two half-empty ones), else the heads are cut into even blocks.
  // Pass-Q wants two tiles per rank, so that one tile's state travels while the other
  // computes.
  std::uint32_t m = std::max<std::uint32_t>(shape.q_tile, 1);
  const std::uint64_t rank_rows = (static_cast<std::uint64_t>(shape.t_q) * shape.g + ranks - 1) / ranks;
  while (pass_q && m > 16 && 2 * static_cast<std::uint64_t>(m) > rank_rows) m /= 2;
  p.tile_heads = shape.g <= 2 * m ? shape.g : (shape.g + (shape.g + m - 1) / m - 1) / ((shape.g + m - 1) / m);
  p.tile_positions = std::max<std::uint32_t>(1, m / p.tile_heads);
  return p;
}

PrefillPlan PrefillPlan::of(const PrefillShape& shape) {
  PrefillPlan p = geometry(shape);
  const std::uint32_t ranks = shape.replicas * shape.cubes * (p.kv_split ? 1 : shape.pes);
  p.ranks.resize(ranks);
  for (std::uint32_t k = 0; k < ranks; ++k) {
    std::uint64_t row = 0;
    for (const RowRange& run : query_rows(shape.layout, shape.t_q, k, ranks, p.tile_positions))
      for (std::uint64_t pos = run.begin; pos < run.end(); pos += p.tile_positions)
        for (std::uint32_t h = 0; h < shape.g; h += p.tile_heads) {
          PrefillTile t{h, std::min(p.tile_heads, shape.g - h), pos,
                        std::min<std::uint64_t>(p.tile_positions, run.end() - pos), row};
          row += t.rows();
          p.ranks[k].push_back(t);
        }
    p.stride = std::max(p.stride, row);
  }
  return p;
}

std::uint32_t PrefillPlan::rank_of(std::uint32_t replica, std::uint32_t cube, std::uint32_t pe) const {
  if (kv_split) return replica * shape.cubes + cube;
  return (replica * shape.pes + pe) * shape.cubes + cube;
}

std::uint64_t PrefillPlan::qo_base(std::uint32_t cube, std::uint32_t pe) const {
  return (static_cast<std::uint64_t>(cube) * shape.pes + (kv_split ? 0 : pe)) * stride;
}

std::uint64_t PrefillPlan::state_base(std::uint32_t cube, std::uint32_t pe) const {
  return (static_cast<std::uint64_t>(cube) * shape.pes + pe) * stride;
}

std::uint64_t PrefillPlan::tcm_bytes() const {
  const std::int64_t m = tile_rows(), d = shape.d, ch = shape.chunk_rows;
  const DType dt = shape.dtype;
  using tl::tcm_bytes;
  // Kernel buffers (gqa_prefill.cpp, prefill_ring_q.cpp, prefill_tiles.h): 4 K and 4 V
  // chunk buffers, 4 query-tile and state slots, 2 work sets of a pair, and one [m, d]
  // fp32 output. Fused: each work set has a P.V buffer, and pass-KV's output is the
  // first one; pipelined accumulates P.V into O.
  std::uint64_t b = 4 * (tcm_bytes({ch, d}, dt) * 2) + 4 * (tcm_bytes({m, d}, dt) + tcm_bytes({m, d + 2}, DType::fp32));
  const bool fused = shape.variant == Variant::Fused;
  const std::uint64_t md = tcm_bytes({m, d}, DType::fp32);
  b += 2 * (tcm_bytes({m * ch, 1}, DType::fp32) + tcm_bytes({m * ch, 1}, dt) + (fused ? md : 0) +
            3 * tcm_bytes({m, 1}, DType::fp32));
  if (!fused || shape.ring == Ring::Q) b += md;
  // A merge of the KV split: the received state and the merge's three columns.
  if (kv_split) b += tcm_bytes({m, d + 2}, DType::fp32) + 3 * tcm_bytes({m, 1}, DType::fp32);
  return b;
}

}  // namespace kb::gqa
