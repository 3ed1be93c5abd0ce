#pragma once
// GQA prefill with head-parallel ring attention (docs/gqa_prefill.md). A group of C = G cubes
// owns one KV head; cube i computes query head i. K and V keep decode's contiguous
// C x P placement, so cube i starts with KV block i (its P PEs' shards). The blocks
// rotate around a ring (a Hamiltonian cycle of the group, every hop one mesh hop) in P
// parallel lanes: PE p of a cube forwards each KV chunk to PE p of the next cube, C - 1
// times per chunk, receiving into ping-pong buffers posted ahead. Each PE owns a set of
// query rows (contiguous or zigzag) and applies every KV chunk to all of them, one query
// tile at a time, the tile's (m, l, O) state streaming between HBM and TCM - so TCM use
// is bounded for any S. Pairs (query tile, KV chunk) wholly in the future are skipped;
// diagonal ones are masked. If T_q < P the PEs split the KV chunks instead and merge
// their states inside the cube at the end. No (m, l, O) crosses cubes.
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "kernels/gqa/helpers.h"
#include "kernels/tl/ctx.h"

namespace kb::gqa {

enum class RowLayout : std::uint8_t {
  Contiguous,  // PE p: rows [p*T/P, (p+1)*T/P)
  Zigzag,      // rows cut into 2P chunks; PE p takes chunks p and 2P-1-p
};
std::optional<RowLayout> parse_layout(const std::string& name);
const char* layout_name(RowLayout l);

struct PrefillGroup {
  std::uint32_t cube_start = 0;
  DeviceTensor k, v;               // [S, d], shard2d(C, P)
  DeviceTensor state;              // [C * P * rows_per_pe, d + 2] fp32: query-tile states
  std::vector<DeviceTensor> q, o;  // per cube of the group: [T_q, d] row-wise over its P PEs
};

struct PrefillParams : AttentionParams {
  std::uint32_t cubes = 8;  // C = G
  RowLayout layout = RowLayout::Zigzag;
  std::uint32_t chunk_rows = 256;  // KV rows per ring chunk
  std::uint32_t q_tile = 64;       // query rows per tile
  std::vector<PrefillGroup> groups;
};

// Message tags: a chunk's K travels with kTagRingK, its V with kTagRingV.
inline constexpr std::uint32_t kTagRingK = 0x300, kTagRingV = 0x301, kTagPrefillMerge = 0x310;

// The query rows PE `pe` of `pes` owns, as row ranges of [0, t_q).
std::vector<RowRange> query_rows(RowLayout layout, std::uint32_t t_q, std::uint32_t pe, std::uint32_t pes);

void gqa_prefill(tl::Ctx& tl, std::shared_ptr<const PrefillParams> params);

}  // namespace kb::gqa
