#include "kernels/layer/model_step.h"

#include "kernels/nn/vocab.h"

namespace kb::layer {

namespace {

// Every PE's pick after the all-gather, [ranks * B, 2] rank-major, to the best token id
// per request, [B, 1]: the first rank with the largest logit, whose id is picked out by
// a one-hot row, 1 - min((index - best)^2, 1), exact in fp32 (control flow never depends
// on values in this machine).
tl::Tensor best_of(tl::Ctx& tl, const tl::Tensor& picks, const tl::Tensor& rank_index, std::uint32_t b) {
  const auto ranks = static_cast<std::int64_t>(picks.rows() / b);
  const tl::Tensor both = tl.trans(picks);  // [2, ranks * B]: the logits, then the ids
  const tl::Tensor logits = tl.trans(tl.view(tl.rows(both, 0, 1), {ranks, b}));  // [B, ranks]
  const tl::Tensor ids = tl.trans(tl.view(tl.rows(both, 1, 1), {ranks, b}));
  const tl::Tensor best = tl.argmax(logits, 1);
  const tl::Tensor diff = tl.sub(rank_index, best);
  const tl::Tensor minus_square = tl.mul(tl.mul(diff, diff), -1.0f);  // one op a statement
  const tl::Tensor far = tl.maximum(minus_square, tl.full({1, 1}, -1.0f));
  const tl::Tensor one_hot = tl.add(far, tl.full({1, 1}, 1.0f));
  return tl.sum(tl.mul(one_hot, ids), 1);
}

}  // namespace

void model_step(tl::Ctx& tl, const StepPlan& s, const Ends& e, const std::vector<std::vector<LayerWeights>>& layers) {
  const LayerForm& f = s.form;
  const std::uint32_t sip = tl.sip().value, b = f.batch;
  const DeviceTensor& table = e.embed.at(sip);
  const RowRange held = tl.shard_rows(table);
  const std::uint64_t me = e.first_pe.at(sip) + held.begin / e.vocab_rows, first = me * e.vocab_rows;
  const tl::Tensor x = tl.persistent({b, f.hidden}, DType::fp32, "x");
  tl.phase("embed");
  tl.fill(x, 0.0f);
  for (std::uint32_t t = 0; t < b; ++t)
    if (e.tokens[t] >= first && e.tokens[t] < first + e.vocab_rows) {
      const auto scope = tl.scratch_scope();
      const tl::Tensor row = tl.load(table, {held.begin + e.tokens[t] - first, 1});
      const tl::Tensor widened = tl.cast(row, DType::fp32);  // one op a statement
      tl.copy(widened, tl.rows(x, t, 1));
    }
  tl.phase("embed_all_reduce");
  {
    const auto scope = tl.scratch_scope();
    collectives::run_in_tcm(tl, s.all_reduce, tl.view(x, {b * f.hidden / s.all_reduce.cols, s.all_reduce.cols}));
  }
  decoder_layers(tl, s, layers, x);
  next_tokens(tl, e, f, x);
}

void next_tokens(tl::Ctx& tl, const Ends& e, const LayerForm& f, const tl::Tensor& x) {
  const std::uint32_t sip = tl.sip().value;
  const auto b = static_cast<std::uint32_t>(x.rows());
  const DeviceTensor& head = e.head_t.at(sip);
  const std::uint64_t me = e.first_pe.at(sip) + tl.shard_rows(head).begin / f.hidden;
  const auto scope = tl.scratch_scope();
  tl.phase("final_norm");
  const tl::Tensor n = normalized(tl, x, e.final_norm.at(sip), f, head.dtype());
  tl.phase("lm_head");
  const tl::Tensor pick = nn::lm_head_pick(tl, n, tl.ref(head, tl.shard_rows(head)), me * e.vocab_rows);
  tl.phase("pick_gather");
  const DeviceTensor& picks = e.picks.at(sip);
  const RowRange all = tl.shard_rows(picks);
  tl.store(picks, {all.begin + me * b, b}, pick);
  collectives::run(tl, e.gather_picks, e.picks);
  tl.phase("pick");
  const tl::Tensor gathered = tl.load(picks, all);
  const DeviceTensor& index = e.rank_index.at(sip);
  const tl::Tensor ranks = tl.load(index, tl.shard_rows(index));
  const DeviceTensor& next = e.next.at(sip);
  tl.store(next, tl.shard_rows(next), best_of(tl, gathered, ranks, b));
}

}  // namespace kb::layer
