// Tensor-parallel placement (workloads/models/tp_plan.h): the SIPs' shares hold every
// weight of a layer once (the norms, and KV heads fewer than the SIPs, on each), a PE's
// channel holds its rows of every layer and of the vocabulary, and a model whose heads
// do not split or whose weights do not fit is refused saying why and what it needs.
#include <gtest/gtest.h>

#include <utility>
#include <vector>

#include "tests/support.h"
#include "workloads/models/tp_plan.h"
#include "workloads/workload.h"

namespace kb::workloads {
namespace {

Topology machine() { return test::topology("llama70b_4sip"); }

TEST(TpPlan, TheSipsSharesHoldEveryWeightOfALayerOnce) {
  const Topology topo = machine();
  const std::vector<std::pair<const char*, std::vector<std::uint32_t>>> runs = {
      {"llama3-70b", {2, 4}}, {"llama3-8b", {1, 2, 4}}, {"qwen2.5-72b", {2, 4}}, {"tiny", {1, 2}}};
  for (const auto& [name, all] : runs)
    for (const std::uint32_t sips : all) {
      const ModelPreset m = model_preset(name);
      const TpPlan p = plan_tensor_parallel(m, topo, sips);
      const std::uint64_t norms = 2ull * m.hidden;  // RMSNorm before attention and before the MLP
      EXPECT_EQ(sips * p.layer_bytes_per_sip, 2 * (m.layer_parameters() + (sips - 1) * norms)) << name << " " << sips;
      EXPECT_EQ(p.share.heads_q * sips, m.heads_q);
      EXPECT_EQ(p.share.heads_kv * sips, m.heads_kv);
    }
}

TEST(TpPlan, Llama70bOnFourSipsSplitsHeadsAndTheMlp) {
  const TpPlan p = plan_tensor_parallel(model_preset("llama3-70b"), machine(), 4);
  EXPECT_EQ(p.share.heads_q, 16u);
  EXPECT_EQ(p.share.heads_kv, 2u);
  EXPECT_EQ(p.share.qkv_rows, (16u + 2 * 2) * 128);
  EXPECT_EQ(p.share.o_cols, 16u * 128);
  EXPECT_EQ(p.share.mlp, 28672u / 4);
  EXPECT_EQ(p.pes, 128u);
  EXPECT_EQ(p.vocab_rows_per_pe, (128256u + 511) / 512);
  // A PE's channel: per layer ceil(2560/128) QKV rows, 16 of W_o's 2048 columns, 56 rows
  // each of W_gate and W_up, 56 of W_down's 7168 columns (of 8192 each), and two norms;
  // then its 251 rows of the embedding table and of the LM head, and the final norm.
  const std::uint64_t layer = (20 * 8192 + 16 * 8192 + 2 * 56 * 8192 + 56 * 8192 + 2 * 8192) * 2;
  EXPECT_EQ(p.weight_bytes_per_channel, 80 * layer + (2 * 251 * 8192 + 8192) * 2);
  EXPECT_LT(p.weight_bytes_per_channel, p.channel_capacity);
  EXPECT_EQ(p.kv_bytes_per_token, 2u * 80 * 2 * 128 * 2);
}

// Llama-3-70B on 4 SIPs: 80 KiB of KV a token on a SIP (2 of its 8 KV heads, K and V, 80
// layers, bf16), spread over 128 channels beside their weights.
TEST(TpPlan, TheKvCacheFitsBesideTheWeightsUpToItsCapacity) {
  const ModelPreset m = model_preset("llama3-70b");
  const TpPlan p = plan_tensor_parallel(m, machine(), 4);
  const std::uint64_t capacity = (p.channel_capacity - p.weight_bytes_per_channel) * 128 / (80 * 1024);
  EXPECT_EQ(p.kv_token_capacity(), capacity);
  EXPECT_GT(capacity, 500'000u) << "a 64-request batch at 8K context is 524,288 tokens";
  EXPECT_NO_THROW(check_kv_fits(m, p, capacity));
  try {
    check_kv_fits(m, p, capacity + 1);
    FAIL() << "one token too many was accepted";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("model llama3-70b on 4 SIP(s): " + std::to_string(capacity + 1) +
                                         " tokens of KV cache"),
              std::string::npos)
        << e.what();
    EXPECT_NE(std::string(e.what()).find("; " + std::to_string(capacity) + " do"), std::string::npos) << e.what();
  }
}

TEST(TpPlan, FewerKvHeadsThanSipsAreReplicated) {
  ModelPreset m = model_preset("tiny");  // 2 KV heads
  const TpPlan p = plan_tensor_parallel(m, machine(), 4);
  EXPECT_EQ(p.share.heads_q, 1u);
  EXPECT_EQ(p.share.heads_kv, 1u) << "each SIP holds one of the 2, twice over";
  EXPECT_EQ(p.share.qkv_rows, 3u * 64);
}

std::string refusal(const std::string& name, std::uint32_t sips) {
  try {
    plan_tensor_parallel(model_preset(name), machine(), sips);
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "accepted";
}

TEST(TpPlan, WhatDoesNotSplitOrFitIsRefusedSayingWhy) {
  EXPECT_EQ(refusal("falcon-7b", 4),
            "model falcon-7b: 71 query heads do not split evenly over 4 SIPs (tensor parallelism splits heads by SIP)");
  EXPECT_EQ(refusal("falcon-7b", 1), "accepted");
  const std::string big = refusal("llama3.1-405b", 4);
  EXPECT_NE(big.find("model llama3.1-405b: its weights need "), std::string::npos) << big;
  EXPECT_NE(big.find("which holds 1GiB; it needs 8 SIPs for its weights"), std::string::npos) << big;
  EXPECT_EQ(min_sips(model_preset("llama3.1-405b"), machine()), 8u) << "6 do not split 128 query heads, 7 neither";
  EXPECT_EQ(min_sips(model_preset("llama3-70b"), machine()), 2u);
  EXPECT_EQ(min_sips(model_preset("llama3-8b"), machine()), 1u);
}

}  // namespace
}  // namespace kb::workloads
