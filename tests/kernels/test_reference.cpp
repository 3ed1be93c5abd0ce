// The numeric oracle itself, on cases small enough to work out by hand.
#include <gtest/gtest.h>

#include <cmath>

#include "kernels/reference/attention.h"

namespace kb::reference {
namespace {

// Two keys at positions 0 and 1, d = 1, scale 1: q = 1, k = (0, 1), v = (0, 1).
AttentionShape two_keys(std::uint32_t t_q, bool causal) { return {1, 1, t_q, 1, 2, causal, 1.0}; }

TEST(Reference, TwoKeysByHand) {
  const double e = std::exp(1.0), both = e / (1 + e);  // softmax(0, 1) . (0, 1)
  // One query (position 1) sees both keys.
  EXPECT_NEAR(attention(two_keys(1, true), {1}, {0, 1}, {0, 1})[0], both, 1e-15);
  // Two queries, causal: position 0 sees key 0 alone (O = v0 = 0), position 1 both.
  const auto causal = attention(two_keys(2, true), {1, 1}, {0, 1}, {0, 1});
  EXPECT_EQ(causal[0], 0.0);
  EXPECT_NEAR(causal[1], both, 1e-15);
  // Not causal: both see both.
  const auto full = attention(two_keys(2, false), {1, 1}, {0, 1}, {0, 1});
  EXPECT_NEAR(full[0], both, 1e-15);
  EXPECT_NEAR(full[1], both, 1e-15);
}

TEST(Reference, GroupedHeadsUseTheirKvHead) {
  // h_q 4, h_kv 2 (G = 2), d 2, one query over 3 keys, not causal: query head h reads
  // KV head h / 2. Equal scores (q = 0) average the values: KV head 0's v rows are
  // (1, 2), (3, 4), (5, 6), KV head 1's the negatives.
  const AttentionShape sh{4, 2, 1, 2, 3, false, 0.5};
  const std::vector<float> q(8, 0.0f), k(12, 1.0f);
  const std::vector<float> v{1, 2, 3, 4, 5, 6, -1, -2, -3, -4, -5, -6};
  const auto o = attention(sh, q, k, v);
  const std::vector<double> want{3, 4, 3, 4, -3, -4, -3, -4};
  for (std::size_t i = 0; i < want.size(); ++i) EXPECT_NEAR(o[i], want[i], 1e-15) << i;
}

TEST(Reference, NaiveRoundsEveryStoredIntermediate) {
  // Equal scores: p = 1/2 exactly, v = (2, 4): O = 3 in every dtype.
  for (const DType dt : {DType::fp32, DType::bf16})
    EXPECT_EQ(attention_naive(two_keys(1, true), {1}, {0, 0}, {2, 4}, dt)[0], 3.0);
  // Scores 0 and 1: exp(0 - 1) = 0.36787944 is stored in the dtype, then p and O are.
  const auto round_bf16 = [](double x) { return static_cast<double>(bf16_to_fp32(fp32_to_bf16(static_cast<float>(x)))); };
  const double x = round_bf16(std::exp(-1.0)), sum = x + 1.0;
  const double want = round_bf16(round_bf16(1.0 / sum));  // p1 (p0 x v0 = 0)
  const double naive = attention_naive(two_keys(1, true), {1}, {0, 1}, {0, 1}, DType::bf16)[0];
  EXPECT_EQ(naive, want);
  EXPECT_NE(naive, attention(two_keys(1, true), {1}, {0, 1}, {0, 1})[0]);  // bf16 moved it
}

}  // namespace
}  // namespace kb::reference
