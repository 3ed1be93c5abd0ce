// GQA prefill (ring attention): numeric parity with the fp64 reference and the levers
// read from the op log.
#include <gtest/gtest.h>

#include <map>
#include <set>

#include "kernels/gqa/helpers.h"
#include "kernels/gqa/prefill_run.h"
#include "tests/kernels/tl_support.h"

namespace kb {
namespace {

using gqa::PrefillConfig;
using gqa::RowLayout;
using test::Machine;

Machine one_sip(bool data) { return Machine("llama70b_4sip", data, {"system.sips=1"}); }

PrefillConfig small(std::uint64_t s, std::uint32_t t_q, RowLayout layout, bool causal, DType dt) {
  PrefillConfig c;
  c.h_kv = 2;
  c.h_q = 16;  // G = 8: a group of 8 cubes, two groups in one SIP
  c.s = s;
  c.t_q = t_q;
  c.layout = layout;
  c.causal = causal;
  c.dtype = dt;
  c.chunk_rows = 32;
  c.q_tile = 32;
  return c;
}

void expect_parity(const PrefillConfig& cfg, const gqa::AttentionInputs& in, const HostTensor& o) {
  const auto shape = gqa::reference_shape(cfg.as_attention());
  const auto exact = reference::attention(shape, in.q.data, in.k.data, in.v.data);
  const auto naive = reference::attention_naive(shape, in.q.data, in.k.data, in.v.data, cfg.dtype);
  const double err = reference::max_abs_error(o.data, exact);
  const double naive_err = reference::max_abs_error(std::vector<float>(naive.begin(), naive.end()), exact);
  EXPECT_LE(err, 2 * naive_err + 1e-5) << "kernel error " << err << ", naive error " << naive_err;
  for (const float v : o.data) ASSERT_TRUE(std::isfinite(v));
}

using ParityParam = std::tuple<std::uint64_t, std::uint32_t, RowLayout, bool, DType>;
class PrefillParity : public ::testing::TestWithParam<ParityParam> {};

TEST_P(PrefillParity, MatchesFp64Reference) {
  const auto [s, t_q, layout, causal, dt] = GetParam();
  Machine m = one_sip(true);
  const PrefillConfig cfg = small(s, t_q, layout, causal, dt);
  const auto in = gqa::AttentionInputs::random(cfg.as_attention(), 3);
  const gqa::PrefillResult r = gqa::run_prefill(m.rt, cfg, &in);
  ASSERT_TRUE(r.o.has_value());
  expect_parity(cfg, in, *r.o);
}

INSTANTIATE_TEST_SUITE_P(
    Shapes, PrefillParity,
    ::testing::Values(ParityParam{512, 0, RowLayout::Zigzag, true, DType::bf16},
                      ParityParam{512, 0, RowLayout::Contiguous, true, DType::fp32},
                      ParityParam{500, 0, RowLayout::Zigzag, true, DType::fp32},        // ragged S
                      ParityParam{500, 0, RowLayout::Contiguous, false, DType::bf16},   // not causal
                      ParityParam{600, 72, RowLayout::Zigzag, true, DType::bf16},       // chunked, prefix 528
                      ParityParam{300, 5, RowLayout::Contiguous, true, DType::fp32},    // T_q < P: KV split
                      ParityParam{300, 3, RowLayout::Zigzag, false, DType::bf16}));

}  // namespace
}  // namespace kb
