#include "workloads/gqa_prefill/prefill_model.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "base/dp_policy.h"
#include "kernels/gqa/prefill_tiles.h"

namespace kb::gqa {

namespace {

// Keys [begin, begin + count) cut into chunks of at most `rows`.
void cut(RowRange keys, std::uint64_t rows, std::vector<RowRange>& out) {
  for (std::uint64_t r = keys.begin; r < keys.end(); r += rows) out.push_back({r, std::min(rows, keys.end() - r)});
}

}  // namespace

PrefillModel prefill_model(const PrefillShape& shape, bool causal, const Topology& topo) {
  const PrefillPlan plan = PrefillPlan::of(shape);
  const double d = shape.d, esz = static_cast<double>(dtype_bytes(shape.dtype));
  const double gr = topo.pe.gemm.rows, gc = topo.pe.gemm.cols;
  const double fabric_bw = static_cast<double>(topo.cube.fabric.bytes_per_cycle);
  const double hbm_bw = static_cast<double>(topo.cube.hbm.bytes_per_cycle);
  const double noc_bw = static_cast<double>(topo.sip.noc.bytes_per_cycle);
  const double hbm_lat = static_cast<double>(topo.cube.hbm.latency_cycles);
  const double fabric_lat = static_cast<double>(topo.cube.fabric.latency_cycles);
  // A pair of m query rows and n keys: Q.K^T and P.V in passes of the GEMM array,
  // each GEMM filling and draining it once.
  auto flash = [&](double m, double n) {
    return std::ceil(m / gr) * (std::ceil(n / gc) * d + std::ceil(d / gc) * n) + 2 * (gr + gc);
  };
  auto visible = [&](const PrefillTile& t, const RowRange& keys) {
    return !causal || keys.begin <= shape.s - shape.t_q + t.pos0 + t.positions - 1;
  };
  const std::uint32_t c = shape.cubes, p = shape.pes, n = c * p;
  const double kv_row = 2 * d * esz, q_row = d * esz, state_row = (d + 2) * 4;
  double rows = 0;  // query rows of a replica's group
  for (std::uint32_t k = 0; k < n; ++k)
    for (const PrefillTile& t : plan.ranks[plan.rank_of(0, k % c, k / c)]) rows += static_cast<double>(t.rows());

  PrefillModel m;
  if (shape.ring == Ring::Q) {
    // Every tile of the group visits every PE, which applies its own shard of K and V.
    const double tiles = static_cast<double>(rows) / plan.tile_rows();
    for (std::uint32_t j = 0; j < n; ++j) {
      std::vector<RowRange> chunks;
      cut(shard_rows(shape.s, n, j), shape.chunk_rows, chunks);
      double gemm = 0;
      for (std::uint32_t k = 0; k < n; ++k)  // the tiles of one replica's group
        for (const PrefillTile& t : plan.ranks[plan.rank_of(0, k % c, k / c)])
          for (const RowRange& ch : chunks)
            if (visible(t, ch)) gemm += flash(static_cast<double>(t.rows()), static_cast<double>(ch.count));
      m.gemm = std::max(m.gemm, gemm);
      const double keys = static_cast<double>(shard_rows(shape.s, n, j).count);
      const bool resident = chunks.size() <= PrefillBuffers::kChunks;
      m.hbm = std::max(m.hbm, (resident ? keys * kv_row : tiles * keys * kv_row) / hbm_bw);
    }
    // Every row into every PE and out of it, on the port's two directions at once: four
    // messages per visit, each crossing the fabric latency twice.
    m.fabric = rows * (q_row + state_row) / fabric_bw + tiles * 4 * 2 * fabric_lat;
    m.noc = rows * (q_row + state_row) / noc_bw;             // and once over every ring link
    m.fill = hbm_lat + std::min<double>(shape.chunk_rows, static_cast<double>(shape.s) / n) * d * esz / hbm_bw;
    // With one tile per rank a tile's state travels while its next PE has nothing else.
    if (tiles <= n) m.exposed = (n - 1) * (plan.tile_rows() * state_row / fabric_bw + 2 * fabric_lat);
  } else {
    // Every PE of a cube sees every chunk of every block, with its own tiles.
    std::vector<RowRange> chunks;
    for (std::uint32_t b = 0; b < c; ++b) {
      const RowRange first = shard_rows(shape.s, n, b * p), last = shard_rows(shape.s, n, b * p + p - 1);
      cut({first.begin, last.end() - first.begin}, shape.chunk_rows, chunks);
    }
    const double share = plan.kv_split ? 1.0 / p : 1.0;  // the KV split deals chunks to PEs
    double windows = 0;
    for (const auto& rank : plan.ranks) {
      double gemm = 0;
      for (const PrefillTile& t : rank)
        for (const RowRange& ch : chunks)
          if (visible(t, ch)) gemm += share * flash(static_cast<double>(t.rows()), static_cast<double>(ch.count));
      m.gemm = std::max(m.gemm, gemm);
      windows = std::max(windows, static_cast<double>(rank.size()) * std::ceil(chunks.size() / 2.0));
    }
    const double s = static_cast<double>(shape.s), block = s / c;
    // A PE's port, each direction (they run at once): shared slices, its slice in on the
    // ring and the other P - 1 in (out: its slice on the ring and to the P - 1 PEs);
    // whole chunks, every chunk in (and out).
    const double messages = 2.0 * chunks.size() * (plan.shared_slices ? 2 + 2 * (p - 1) : 2);  // K and V each
    m.fabric = (plan.shared_slices ? c * block : s) * kv_row / fabric_bw + messages * 2 * fabric_lat;
    m.noc = (plan.shared_slices || plan.kv_split ? s : s * p) * kv_row / noc_bw;
    // Each tile's query rows and state come in once per window of two chunks and go back.
    m.hbm = windows * plan.tile_rows() * (q_row + 2 * state_row) / hbm_bw;
    m.fill = hbm_lat + shape.chunk_rows * d * esz / (plan.shared_slices ? p : 1) / hbm_bw;
  }
  m.drain = hbm_lat + plan.tile_rows() * d * esz / hbm_bw + flash(plan.tile_rows(), shape.chunk_rows) -
            std::ceil(plan.tile_rows() / gr) * std::ceil(shape.chunk_rows / gc) * d;
  m.bound = "gemm";
  double top = m.gemm;
  for (const auto& [name, v] : {std::pair<const char*, double>{"fabric", m.fabric}, {"hbm", m.hbm}, {"noc", m.noc}})
    if (v > top) {
      top = v;
      m.bound = name;
    }
  m.cycles = m.fill + top + m.exposed + m.drain;
  return m;
}

}  // namespace kb::gqa
