#include "kernels/gqa/prefill_tiles.h"

namespace kb::gqa {

bool visible(const AttentionParams& p, RowRange keys, const PrefillTile& t) {
  const std::uint64_t last_query = p.s - p.t_q + t.pos0 + t.positions - 1;
  return !p.causal || keys.begin <= last_query;
}

void flash_pair(tl::Ctx& tl, const AttentionParams& p, const PrefillTile& t, RowRange keys, const tl::Tensor& q,
                const tl::Tensor& k, const tl::Tensor& v, const SoftmaxState& st, const FlashWork& w) {
  const auto first_query = static_cast<std::int64_t>(p.s - p.t_q + t.pos0);
  tl::FlashTile f = flash_args(q, k, v, st, w, p.scale);
  // Masked only where the diagonal crosses the pair.
  f.causal = p.causal && static_cast<std::int64_t>(keys.end()) - 1 > first_query;
  f.q_pos0 = first_query;
  f.q_period = static_cast<std::uint32_t>(t.positions);
  f.k_pos0 = static_cast<std::int64_t>(keys.begin);
  tl.flash_tile(f);
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
  for (FlashWork& w : work) w = FlashWork::make(tl, plan.tile_rows(), plan.shape.chunk_rows, plan.shape.d, dtype);
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
