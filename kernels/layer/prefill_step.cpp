#include "kernels/layer/prefill_step.h"

#include <algorithm>

namespace kb::layer {

namespace {

std::uint32_t u32(std::uint64_t v) {
  return static_cast<std::uint32_t>(v);
}

// x of the lane's rows: the embedding rows this cube holds, zeros elsewhere, summed over
// the lane.
void embed(tl::Ctx& tl, const PrefillPlan& s, const PrefillEnds& e) {
  const PrefillForm& f = s.form;
  const std::uint32_t sip = tl.sip().value, c = f.chunk_cols();
  const DeviceTensor &x = s.x.at(sip), &table = e.embed.at(sip);
  const std::vector<std::uint64_t>& tokens = e.tokens.at(tl.pe().value);
  const RowRange held = tl.shard_rows(table);
  const std::uint64_t first = (e.first_cube.at(sip) + tl.cube().value) * e.cube_vocab_rows;
  tl.phase("embed");
  {
    const auto scope = tl.scratch_scope();
    // Zeros a block of rows at a time (an eighth of the TCM).
    const std::uint64_t fit =
        std::max<std::uint64_t>(1, tl.tcm_capacity() / 8 / (4 * std::uint64_t{c}));
    const auto block = u32(std::min<std::uint64_t>(std::max<std::size_t>(tokens.size(), 1), fit));
    const tl::Tensor zeros = tl.full({block, c}, 0.0f);
    for (std::uint64_t r0 = 0; r0 < tokens.size(); r0 += block) {
      const auto n = u32(std::min<std::uint64_t>(block, tokens.size() - r0));
      for (std::uint32_t k = 0; k < f.chunks; ++k)
        tl.store(x, chunk_rows(tl, f, x, k, r0, n), tl.rows(zeros, 0, n));
    }
    for (std::size_t i = 0; i < tokens.size(); ++i) {
      if (tokens[i] < first || tokens[i] >= first + e.cube_vocab_rows) continue;
      const auto inner = tl.scratch_scope();
      const tl::Tensor row =
          tl.cast(tl.load(table, {held.begin + tokens[i] - first, 1}), DType::fp32);
      for (std::uint32_t k = 0; k < f.chunks; ++k) {
        const tl::Tensor part = tl.empty({1, c});  // one op a statement: arguments have no order
        tl.copy(tl.cols(row, k * c, c), part);
        tl.store(x, chunk_rows(tl, f, x, k, i, 1), part);
      }
    }
  }
  tl.phase("embed_all_reduce");
  collectives::run(tl, s.all_reduce, s.x);
}

// The prompts' last rows of x, [B, h] on every PE.
tl::Tensor last_rows(tl::Ctx& tl, const PrefillPlan& s, const PrefillEnds& e) {
  const PrefillForm& f = s.form;
  const std::uint32_t sip = tl.sip().value, c = f.chunk_cols(), b = u32(e.last.size());
  const DeviceTensor& x = s.x.at(sip);
  const collectives::Plan& cube_sum = e.cube_sum.at(e.first_cube.at(sip) + tl.cube().value);
  const tl::Tensor last = tl.persistent({b, f.hidden}, DType::fp32, "x_last");
  tl.phase("last_tokens");
  tl.fill(last, 0.0f);
  for (std::uint32_t r = 0; r < b; ++r) {
    if (e.last[r].first != tl.pe().value) continue;
    for (std::uint32_t k = 0; k < f.chunks; ++k) {
      const auto scope = tl.scratch_scope();
      const tl::Tensor part = tl.load(x, chunk_rows(tl, f, x, k, e.last[r].second, 1));
      tl.copy(part, tl.cols(tl.rows(last, r, 1), k * c, c));
    }
  }
  const auto scope = tl.scratch_scope();
  collectives::run_in_tcm(tl, cube_sum, tl.view(last, {b * f.hidden / cube_sum.cols, cube_sum.cols}));
  return last;
}

}  // namespace

void prefill_step(tl::Ctx& tl, const PrefillPlan& s, const PrefillEnds& e,
                  const std::vector<std::vector<PrefillWeights>>& layers) {
  embed(tl, s, e);
  for (const std::vector<PrefillWeights>& layer : layers)
    prefill_layer(tl, s, layer.at(tl.sip().value));
  const tl::Tensor last = last_rows(tl, s, e);
  LayerForm form;  // what the final norm needs of a layer's form
  form.hidden = s.form.hidden;
  static_cast<Block&>(form) = s.form;
  next_tokens(tl, e.head, form, last);
}

}  // namespace kb::layer
