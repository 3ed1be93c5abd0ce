#include "kernels/gqa/prefill_tiles.h"

namespace kb::gqa {

std::array<FlashWork, 2> FlashWork::make(tl::Ctx& tl, std::uint32_t rows, std::uint32_t keys, std::uint32_t d,
                                         DType dtype) {
  std::array<FlashWork, 2> work;
  for (FlashWork& w : work)
    w = {tl.persistent({rows * keys, 1}, DType::fp32, "S"), tl.persistent({rows * keys, 1}, dtype, "P"),
         tl.persistent({rows, d}, DType::fp32, "PV"), tl.persistent({rows, 1}, DType::fp32, "m_new"),
         tl.persistent({rows, 1}, DType::fp32, "alpha"), tl.persistent({rows, 1}, DType::fp32, "rowsum")};
  return work;
}

bool visible(const AttentionParams& p, RowRange keys, const PrefillTile& t) {
  const std::uint64_t last_query = p.s - p.t_q + t.pos0 + t.positions - 1;
  return !p.causal || keys.begin <= last_query;
}

void flash_pair(tl::Ctx& tl, const AttentionParams& p, const PrefillTile& t, RowRange keys, const tl::Tensor& q,
                const tl::Tensor& k, const tl::Tensor& v, const SoftmaxState& st, const FlashWork& w) {
  const auto first_query = static_cast<std::int64_t>(p.s - p.t_q + t.pos0);
  tl::FlashTile f;
  f.q = &q;
  f.k = &k;
  f.v = &v;
  f.m = &st.m;
  f.l = &st.l;
  f.o = &st.o;
  f.scale = p.scale;
  // Masked only where the diagonal crosses the pair.
  f.causal = p.causal && static_cast<std::int64_t>(keys.end()) - 1 > first_query;
  f.q_pos0 = first_query;
  f.q_period = static_cast<std::uint32_t>(t.positions);
  f.k_pos0 = static_cast<std::int64_t>(keys.begin);
  f.s = &w.s;
  f.p = &w.p;
  f.pv = &w.pv;
  f.m_new = &w.m_new;
  f.alpha = &w.alpha;
  f.rowsum = &w.rowsum;
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
