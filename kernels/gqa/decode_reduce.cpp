#include "kernels/gqa/decode_reduce.h"

namespace kb::gqa {

StoredRows StoredRows::of(tl::Ctx& tl, const tl::Tensor& state, RowRange rows, DType dtype) {
  const auto n = static_cast<std::uint32_t>(rows.count), d = state.cols() - 2;
  const tl::Tensor mine = tl.rows(state, static_cast<std::uint32_t>(rows.begin), n);
  return {rows, tl.cols(mine, 0, d), tl.cols(mine, d, 1), tl.empty({n, d}, dtype, "O")};
}

std::vector<StoredRows> reduce_to_root(tl::Ctx& tl, const DecodeParams& p, const GroupGeometry& geo,
                                       std::uint32_t cube_index, const tl::Tensor& state, ReduceTags tags) {
  const auto m_rows = state.rows();
  auto state_rows = [&](RowRange rows) {
    return tl.rows(state, static_cast<std::uint32_t>(rows.begin), static_cast<std::uint32_t>(rows.count));
  };
  // Level 1: even owners' parts reduce on the row-first tree, odd owners' on the
  // column-first one, so the mesh links far from the root carry half the state each.
  const TreeNode cube_node = tl.pe().value % 2 == 0 ? center_node(cube_index, geo.w, geo.h)
                                                    : center_node_yx(cube_index, geo.w, geo.h);
  const std::uint32_t me = tl.pe().value;
  auto span = [&](std::uint32_t lo, std::uint32_t hi) {  // the rows of parts [lo, hi)
    const std::uint64_t begin = shard_rows(m_rows, p.pes, lo).begin;
    return RowRange{begin, shard_rows(m_rows, p.pes, hi - 1).end() - begin};
  };
  auto on_pe = [&](std::uint32_t pe) { return PeCoord{tl.sip(), tl.cube(), PeId(pe)}; };
  tl.phase("reduce level 2");
  if ((p.pes & (p.pes - 1)) == 0) {
    // Recursive halving: in round `half` = P/2, ..., 1, PE p keeps the half of its
    // parts on its side of bit `half`, sends the other half to p ^ half and merges
    // that PE's copy of its own: log2 P messages of 1/2, 1/4, ... of the rows.
    std::uint32_t lo = 0, hi = p.pes;
    for (std::uint32_t half = p.pes / 2; half >= 1; half /= 2) {
      const bool upper = (me & half) != 0;
      const std::uint32_t mid = lo + half;
      const RowRange give = upper ? span(lo, mid) : span(mid, hi), keep = upper ? span(mid, hi) : span(lo, mid);
      if (give.count > 0) tl.send(on_pe(me ^ half), state_rows(give), tags.level2);
      if (keep.count > 0) recv_merge(tl, state_rows(keep), on_pe(me ^ half), tags.level2, p.variant);
      (upper ? lo : hi) = mid;
    }
  } else {
    // Every PE sends each owner its part, rotated so no owner is everyone's first.
    for (std::uint32_t k = 1; k < p.pes; ++k)
      if (const RowRange part = span((me + k) % p.pes, (me + k) % p.pes + 1); part.count > 0)
        tl.send(on_pe((me + k) % p.pes), state_rows(part), tags.level2);
    if (span(me, me + 1).count > 0)
      for (std::uint32_t k = 1; k < p.pes; ++k)
        recv_merge(tl, state_rows(span(me, me + 1)), on_pe((me + p.pes - k) % p.pes), tags.level2, p.variant);
  }
  const RowRange own = span(me, me + 1);
  if (own.count == 0) return {};
  // Level 1 in segments (DecodeParams::segment_rows): a parent passes a segment on
  // once its children's copies are merged, while the next ones are still on their way.
  // With one cube there is no Level 1: the rows are all merged at once, one store.
  const std::vector<RowRange> own_segments = segments(own, p.cubes > 1 ? p.segment_rows : 0);
  std::vector<tl::Tensor> seg_states;
  for (const RowRange& seg : own_segments) seg_states.push_back(state_rows(seg));
  std::vector<StoredRows> stored;  // the root's owners store their segments
  if (!cube_node.parent)
    for (const RowRange& seg : own_segments) stored.push_back(StoredRows::of(tl, state, seg, p.dtype));
  tl.phase("reduce level 1");
  for (const tl::Tensor& seg : seg_states) {
    for (const std::uint32_t child : cube_node.children)
      recv_merge(tl, seg, PeCoord{tl.sip(), geo.cube_at(child), PeId(me)}, tags.level1, p.variant);
    if (cube_node.parent) tl.send(PeCoord{tl.sip(), geo.cube_at(*cube_node.parent), PeId(me)}, seg, tags.level1);
  }
  return stored;
}

void store_state(tl::Ctx& tl, const StoredRows& s, const DeviceTensor& o, std::uint64_t first) {
  tl.div(s.o, s.l, &s.out);
  store_rows(tl, o, {first + s.rows.begin, s.rows.count}, s.out);
}

}  // namespace kb::gqa
