#include "kernels/gqa/decode_reduce.h"

namespace kb::gqa {

StoredRows StoredRows::of(tl::Ctx& tl, const tl::Tensor& state, RowRange rows, DType dtype) {
  const auto n = static_cast<std::uint32_t>(rows.count), d = state.cols() - 2;
  const tl::Tensor mine = tl.rows(state, static_cast<std::uint32_t>(rows.begin), n);
  return {rows, tl.cols(mine, 0, d), tl.cols(mine, d, 1), tl.empty({n, d}, dtype, "O")};
}

RootReduce::RootReduce(tl::Ctx& tl, const DecodeParams& p, const GroupGeometry& geo, std::uint32_t cube_index,
                       const tl::Tensor& state, ReduceTags tags)
    : tl_(tl), variant_(p.variant), state_(state) {
  const auto m_rows = state.rows();
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
  steps_.push_back([this](bool) {
    tl_.phase("reduce level 2");
    return true;
  });
  if ((p.pes & (p.pes - 1)) == 0) {
    // Recursive halving: in round `half` = P/2, ..., 1, PE p keeps the half of its
    // parts on its side of bit `half`, sends the other half to p ^ half and merges
    // that PE's copy of its own: log2 P messages of 1/2, 1/4, ... of the rows.
    std::uint32_t lo = 0, hi = p.pes;
    for (std::uint32_t half = p.pes / 2; half >= 1; half /= 2) {
      const bool upper = (me & half) != 0;
      const std::uint32_t mid = lo + half;
      const RowRange give = upper ? span(lo, mid) : span(mid, hi), keep = upper ? span(mid, hi) : span(lo, mid);
      if (give.count > 0) send(on_pe(me ^ half), give, tags.level2);
      if (keep.count > 0) merge(on_pe(me ^ half), keep, tags.level2);
      (upper ? lo : hi) = mid;
    }
  } else {
    // Every PE sends each owner its part, rotated so no owner is everyone's first.
    for (std::uint32_t k = 1; k < p.pes; ++k)
      if (const RowRange part = span((me + k) % p.pes, (me + k) % p.pes + 1); part.count > 0)
        send(on_pe((me + k) % p.pes), part, tags.level2);
    if (span(me, me + 1).count > 0)
      for (std::uint32_t k = 1; k < p.pes; ++k) merge(on_pe((me + p.pes - k) % p.pes), span(me, me + 1), tags.level2);
  }
  const RowRange own = span(me, me + 1);
  if (own.count == 0) return;
  // Level 1 in segments (DecodeParams::segment_rows): a parent passes a segment on
  // once its children's copies are merged, while the next ones are still on their way.
  // With one cube there is no Level 1: the rows are all merged at once, one store.
  const std::vector<RowRange> own_segments = segments(own, p.cubes > 1 ? p.segment_rows : 0);
  const bool root = !cube_node.parent;
  steps_.push_back([this, own_segments, root, dtype = p.dtype](bool) {
    for (const RowRange& seg : own_segments) segments_.push_back(rows(seg));
    if (root)  // the root's owners store their segments: their views made while messages travel
      for (const RowRange& seg : own_segments) stored_.push_back(StoredRows::of(tl_, state_, seg, dtype));
    tl_.phase("reduce level 1");
    return true;
  });
  for (std::size_t i = 0; i < own_segments.size(); ++i) {
    for (const std::uint32_t child : cube_node.children)
      merge(PeCoord{tl.sip(), geo.cube_at(child), PeId(me)}, i, tags.level1);
    if (cube_node.parent) send(PeCoord{tl.sip(), geo.cube_at(*cube_node.parent), PeId(me)}, i, tags.level1);
  }
}

tl::Tensor RootReduce::rows(RowRange r) {
  return tl_.rows(state_, static_cast<std::uint32_t>(r.begin), static_cast<std::uint32_t>(r.count));
}

tl::Tensor RootReduce::target(const std::variant<RowRange, std::size_t>& rows_or_segment) {
  if (const auto* r = std::get_if<RowRange>(&rows_or_segment)) return rows(*r);
  return segments_.at(std::get<std::size_t>(rows_or_segment));
}

void RootReduce::send(const PeCoord& to, std::variant<RowRange, std::size_t> what, std::uint32_t tag) {
  steps_.push_back([this, to, what, tag](bool) {
    tl_.send(to, target(what), tag);
    return true;
  });
}

void RootReduce::merge(const PeCoord& from, std::variant<RowRange, std::size_t> into, std::uint32_t tag) {
  // Posted when the step is first taken; merged once its message is in (or at once when
  // the reduce must finish: the merge's first op then waits).
  steps_.push_back([this, from, into, tag, state = tl::Tensor(), got = tl::Tensor()](bool wait) mutable {
    if (!got.valid()) {
      state = target(into);
      got = tl_.recv_async(from, state.shape(), DType::fp32, tag);
    }
    if (!wait && variant_ != Variant::Fused && !tl_.ready(got)) return false;
    if (variant_ == Variant::Fused) merge_state(tl_, state, got);
    else merge_into(tl_, state, got);
    return true;
  });
}

void RootReduce::run(bool wait) {
  while (next_ < steps_.size() && steps_[next_](wait)) ++next_;
}

std::vector<StoredRows> RootReduce::finish() {
  run(true);
  return std::move(stored_);
}

std::vector<StoredRows> reduce_to_root(tl::Ctx& tl, const DecodeParams& p, const GroupGeometry& geo,
                                       std::uint32_t cube_index, const tl::Tensor& state, ReduceTags tags) {
  return RootReduce(tl, p, geo, cube_index, state, tags).finish();
}

void store_state(tl::Ctx& tl, const StoredRows& s, const DeviceTensor& o, std::uint64_t first) {
  tl.div(s.o, s.l, &s.out);
  store_rows(tl, o, {first + s.rows.begin, s.rows.count}, s.out);
}

}  // namespace kb::gqa
