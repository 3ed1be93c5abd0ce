#include "kernels/gqa/prefill_tiles.h"

namespace kb::gqa {

bool visible(const AttentionParams& p, RowRange keys, const PrefillTile& t) {
  const std::uint64_t last_query = p.s - p.t_q + t.pos0 + t.positions - 1;
  return !p.causal || keys.begin <= last_query;
}

FlashPairs::FlashPairs(tl::Ctx& tl, const AttentionParams& p, Variant variant, const std::array<FlashWork, 2>& work)
    : tl_(tl), p_(p), variant_(variant), work_(work) {}

std::int64_t FlashPairs::first_query(const FlashPair& pair) const {
  return static_cast<std::int64_t>(p_.s - p_.t_q + pair.tile->pos0);
}

bool FlashPairs::masked(const FlashPair& pair) const {
  return p_.causal && static_cast<std::int64_t>(pair.keys.end()) - 1 > first_query(pair);
}

void FlashPairs::run(std::size_t i, const FlashPair& pair, const FlashPair* next) {
  if (!pipelined()) {
    FlashTile f = flash_args(pair.q, pair.k, pair.v, pair.st, work_[i % 2], p_.scale);
    f.causal = masked(pair);  // only where the diagonal crosses the pair
    f.q_pos0 = first_query(pair);
    f.q_period = static_cast<std::uint32_t>(pair.tile->positions);
    f.k_pos0 = static_cast<std::int64_t>(pair.keys.begin);
    flash_tile(tl_, f);
    return;
  }
  if (qk_issued_ <= i) qk(i, pair);
  if (next) qk(i + 1, *next);
  softmax_pv(i, pair);
}

const FlashPairs::Views& FlashPairs::views(std::size_t set, std::uint32_t m, std::uint32_t n) {
  auto it = views_.find({set, m, n});
  if (it == views_.end()) {
    const FlashWork& w = work_[set];
    auto block = [&](const tl::Tensor& flat) { return tl_.view(tl_.rows(flat, 0, m * n), {m, n}); };
    Views v{block(w.s), block(w.p), tl_.rows(w.m_new, 0, m), tl_.rows(w.alpha, 0, m), tl_.rows(w.rowsum, 0, m)};
    it = views_.emplace(std::make_tuple(set, m, n), std::move(v)).first;
  }
  return it->second;
}

void FlashPairs::qk(std::size_t i, const FlashPair& pair) {
  const Views& w = views(i % 2, pair.q.rows(), pair.k.rows());
  tl::CompositeOpts o;
  o.trans_b = true;
  o.out = &w.s;
  tl_.composite(pair.q, pair.k, o);
  qk_issued_ = i + 1;
}

// Scale and mask S, the online-softmax update of (m, l) and the rescale of O, P in the
// storage dtype, and P.V accumulated into O. Ordered so the program waits as little as
// it can: the rescale of O, which waits for the previous pair's P.V of the same tile,
// comes last before this pair's P.V.
void FlashPairs::softmax_pv(std::size_t i, const FlashPair& pair) {
  const Views& w = views(i % 2, pair.q.rows(), pair.k.rows());
  const SoftmaxState& st = pair.st;
  tl_.mul(w.s, p_.scale, &w.s);
  if (masked(pair))
    tl_.causal_mask(w.s, first_query(pair), static_cast<std::uint32_t>(pair.tile->positions),
                    static_cast<std::int64_t>(pair.keys.begin));
  tl_.max(w.s, 1, &w.m_new);
  tl_.maximum(st.m, w.m_new, &w.m_new);
  tl_.exp_diff(w.s, w.m_new, &w.s);
  tl_.exp_diff(st.m, w.m_new, &w.alpha);
  tl_.sum(w.s, 1, &w.rowsum);
  tl_.copy(w.s, w.p);
  tl_.copy(w.m_new, st.m);
  tl_.fma(st.l, w.alpha, w.rowsum, &st.l);
  tl_.mul(st.o, w.alpha, &st.o);
  tl::CompositeOpts pv;
  pv.out = &st.o;
  pv.accumulate = true;
  tl_.composite(w.p, pair.v, pv);
}

TileSlots::TileSlots(tl::Ctx& tl, std::uint32_t rows, std::uint32_t d, DType dtype) : tl_(tl) {
  for (std::size_t i = 0; i < kSlots; ++i) {
    q_[i] = tl.persistent({rows, d}, dtype, "q_tile");
    s_[i] = tl.persistent({rows, d + 2}, DType::fp32, "state_tile");
  }
}

const TileSlots::Views& TileSlots::at(std::size_t slot, std::uint64_t rows) {
  auto it = views_.find({slot, rows});
  if (it == views_.end()) {
    const auto n = static_cast<std::uint32_t>(rows);
    const tl::Tensor q = tl_.rows(q_[slot], 0, n), s = tl_.rows(s_[slot], 0, n);
    it = views_.emplace(std::make_pair(slot, rows), Views{q, s, SoftmaxState::of(tl_, s)}).first;
  }
  return it->second;
}

namespace {

PrefillBuffers::Chunks chunk_buffers(tl::Ctx& tl, const PrefillPlan& plan, DType dtype) {
  PrefillBuffers::Chunks c;
  for (std::size_t i = 0; i < PrefillBuffers::kChunks; ++i) {
    c.k[i] = tl.persistent({plan.shape.chunk_rows, plan.shape.d}, dtype, "kv_k");
    c.v[i] = tl.persistent({plan.shape.chunk_rows, plan.shape.d}, dtype, "kv_v");
  }
  return c;
}

}  // namespace

PrefillBuffers::PrefillBuffers(tl::Ctx& tl, const PrefillPlan& plan, DType dtype)
    : chunks(chunk_buffers(tl, plan, dtype)), slots(tl, plan.tile_rows(), plan.shape.d, dtype) {
  const bool fused = plan.shape.variant == Variant::Fused;
  for (FlashWork& w : work)
    w = FlashWork::make(tl, plan.tile_rows(), plan.shape.chunk_rows, plan.shape.d, dtype, 0, fused);
  out = fused ? work[0].pv : tl.persistent({plan.tile_rows(), plan.shape.d}, DType::fp32, "out");
}

void store_output(tl::Ctx& tl, const SoftmaxState& st, const tl::Tensor& out, const tl::Tensor& cast_buffer,
                  DType dtype, const DeviceTensor& o, RowRange rows) {
  tl.div(st.o, st.l, &out);
  if (dtype == DType::fp32) {
    store_rows(tl, o, rows, out);
    return;
  }
  const tl::Tensor cast = tl.rows(cast_buffer, 0, static_cast<std::uint32_t>(rows.count));
  tl.copy(out, cast);
  store_rows(tl, o, rows, cast);
}

}  // namespace kb::gqa
