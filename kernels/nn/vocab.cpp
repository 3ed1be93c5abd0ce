#include "kernels/nn/vocab.h"

#include "kernels/nn/linear.h"

namespace kb::nn {

tl::Tensor embed(tl::Ctx& tl, const DeviceTensor& table, const std::vector<std::uint64_t>& ids) {
  const tl::Tensor out =
      tl.empty({static_cast<std::int64_t>(ids.size()), static_cast<std::int64_t>(table.cols())}, table.dtype(), "embed");
  for (std::size_t t = 0; t < ids.size(); ++t) {
    const tl::Tensor row = tl.rows(out, static_cast<std::uint32_t>(t), 1);
    tl.load(table, {ids[t], 1}, &row);
  }
  return out;
}

tl::Tensor lm_head_pick(tl::Ctx& tl, const tl::Tensor& x, const tl::Tensor& w_t, std::uint64_t first_id,
                        std::uint32_t tile_rows) {
  const tl::Tensor logits = linear(tl, x, w_t, nullptr, tile_rows);
  const tl::Tensor pick = tl.empty({x.rows(), 2}, DType::fp32, "pick");
  const tl::Tensor best = tl.cols(pick, 0, 1), id = tl.cols(pick, 1, 1);
  tl.max(logits, 1, &best);
  tl.argmax(logits, 1, &id);
  tl.add(id, tl.full({1, 1}, static_cast<float>(first_id)), &id);  // the slice's first token id
  return pick;
}

}  // namespace kb::nn
