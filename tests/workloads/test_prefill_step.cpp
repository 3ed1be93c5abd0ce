// A model's prefill step (docs/models.md, Prefill): a prefill layer matches fp64 in data
// mode, over a whole prompt, several prompts and a chunk after a cached prefix, in Llama's
// and Falcon's forms; the check sees a wrong prefix; the roofline is the FLOPs over the GEMM
// peak; the GEMMs move with the GEMM array; the PEs stream their siblings' shards in turn; the
// residual rides the all-reduces; placements a prefill cannot use are refused.
#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <map>

#include "tests/kernels/tl_support.h"
#include "tests/sc_main/cli_support.h"
#include "tests/workloads/step_support.h"
#include "workloads/models/layer_check.h"
#include "workloads/workload.h"

namespace kb::workloads {
namespace {

StepConfig tiny_prompts(std::vector<std::uint64_t> lens, std::uint64_t q_len = 0) {
  StepConfig c;
  c.model = model_preset("tiny");
  c.lens = std::move(lens);
  c.prefill = true;
  c.q_len = q_len;
  c.devices = {SipId(0)};
  return c;
}

Numerics checked(const StepConfig& c, std::uint32_t seed) {
  test::Machine m("llama70b_4sip", true, {}, RunOptions::OpLogKept::Nothing);
  const StepValues v = StepValues::random(c, seed);
  const StepResult got = run_step(m.rt, c, &v);
  EXPECT_TRUE(got.out.has_value());
  return got.out ? check_layer(c, v, *got.out) : Numerics{};
}

TEST(PrefillLayer, TwoPromptsAreTheHostsFp64) {
  const Numerics n = checked(tiny_prompts({40, 17}), 3);
  EXPECT_TRUE(n.pass) << n.error << " against " << n.tolerance;
  EXPECT_GT(n.naive_error, 0) << "bf16 storage rounds";
}

// Chunked prefill: the last 9 tokens of each prompt attend to the cached prefix and to
// each other, causally.
TEST(PrefillLayer, AChunkAfterACachedPrefixIsTheHostsFp64) {
  const Numerics n = checked(tiny_prompts({40, 23}, 9), 4);
  EXPECT_TRUE(n.pass) << n.error << " against " << n.tolerance;
}

TEST(PrefillLayer, AParallelLayerNormGeluBlockWithQkvBiasIsTheHostsFp64) {
  StepConfig c = tiny_prompts({33});
  c.model.norm = NormKind::Layer;
  c.model.mlp = MlpKind::Gelu;
  c.model.block = BlockKind::Parallel;
  c.model.qkv_bias = true;
  const Numerics n = checked(c, 5);
  EXPECT_TRUE(n.pass) << n.error << " against " << n.tolerance;
}

// The check tells a wrong layer from a right one: the run's output against the
// reference of another cached prefix misses.
TEST(PrefillLayer, TheCheckSeesAWrongPrefix) {
  test::Machine m("llama70b_4sip", true, {}, RunOptions::OpLogKept::Nothing);
  const StepConfig c = tiny_prompts({40}, 16);
  const StepValues v = StepValues::random(c, 6);
  const StepResult got = run_step(m.rt, c, &v);
  ASSERT_TRUE(got.out.has_value());
  EXPECT_TRUE(check_layer(c, v, *got.out).pass);
  StepValues other = v;
  for (float& e : other.layer.k_cache[0].data) e = -e;
  EXPECT_FALSE(check_layer(c, other, *got.out).pass);
}

// The files of --outputs let numpy recompute a chunk of a prefill: each prompt's new
// tokens over its cached prefix, causally.
TEST(PrefillLayer, OutputsLetNumpyRecomputeAChunk) {
  if (std::system("/usr/bin/python3 -c 'import numpy' > /dev/null 2>&1") != 0)
    GTEST_SKIP() << "Debian's python3-numpy is not installed";
  const std::string dir = test::temp_dir("prefill_outputs");
  const test::Result run = test::run("run --kernel decoder_layer --model tiny --phase prefill --batch 30,21 --q-len 12 "
                                     "--devices 0 --data --check --outputs " + dir);
  ASSERT_EQ(run.code, 0) << run.out;
  const test::Result numpy =
      test::run_shell("/usr/bin/python3 " + test::source_path("scripts/layer_from_files.py") + " " + dir);
  EXPECT_EQ(numpy.code, 0) << numpy.out;
}

// The prefill roofline: 2 x parameters x tokens plus the causal attention's 4 H_q d FLOPs
// a (query, key) pair, over the GEMM peak of the run's SIPs; TTFT is the step.
TEST(PrefillLayer, TheRooflineIsTheFlopsOverTheGemmPeak) {
  const nlohmann::json r = test::run_json(
      "--kernel decoder_layer --model tiny --phase prefill --batch 40,20 --q-len 16 --devices 0");
  const ModelPreset m = model_preset("tiny");
  double pairs = 0;
  for (const double len : {40.0, 20.0})
    for (double p = len - 16; p < len; ++p) pairs += p + 1;
  const double flops =
      2.0 * static_cast<double>(m.layer_parameters()) * 32 + 4.0 * m.heads_q * m.head_dim * pairs;
  EXPECT_DOUBLE_EQ(r.at("flops").get<double>(), flops);
  EXPECT_DOUBLE_EQ(r.at("roofline").at("cycles").get<double>(), flops / (128.0 * 16 * 64 * 2));
  EXPECT_DOUBLE_EQ(r.at("time_to_first_token").get<double>(),
                   r.at("step").at("seconds").get<double>());
  EXPECT_DOUBLE_EQ(r.at("tokens_per_s").get<double>(),
                   32 / r.at("step").at("seconds").get<double>());
  EXPECT_EQ(r.at("knobs").at("phase"), "prefill");
}

// A physics probe: with half the GEMM array's columns, the up and gate projections, which
// are GEMM-bound at a prompt of 1024 tokens (a weight byte serves a block of 128 rows),
// take as much longer as their GEMMs: a pass's 224 columns (gate and up, 112 each) are 7
// groups of 32 columns against 4 of 64. The all-reduces, which do no GEMM, barely move
// (taken together: each PE's wait for the slowest falls in one or the other).
TEST(PrefillLayer, TheProjectionsMoveWithTheGemmArray) {
  const std::string run =
      "--kernel decoder_layer --model llama3-8b --phase prefill --batch 1024 --devices 0";
  const nlohmann::json full = test::run_json(run),
                       half = test::run_json(run + " --set pe.gemm.cols=32");
  const double ratio =
      test::op_cycles(half, "up_gate_proj") / test::op_cycles(full, "up_gate_proj");
  const double gemm = 7.0 / 4;
  EXPECT_GT(ratio, 0.9 * gemm);
  EXPECT_LT(ratio, 1.02 * gemm);
  auto all_reduces = [](const nlohmann::json& r) {
    return test::op_cycles(r, "attn_all_reduce") + test::op_cycles(r, "mlp_all_reduce");
  };
  const double all_reduce = all_reduces(half) / all_reduces(full);
  EXPECT_GT(all_reduce, 0.9);
  EXPECT_LT(all_reduce, 1.1);
}

// A physics probe: the cube's PEs stream their siblings' shards in turn (PE p starts at
// its own), so at every step each HBM channel serves one PE's stream, and halving the
// channels' bandwidth barely moves the QKV projection. Had every PE started at sibling 0,
// all eight would share one channel at each step and the projection would take ~1.6x.
TEST(PrefillLayer, TheCubesPEsStreamTheirSiblingsShardsInTurn) {
  const std::string run =
      "--kernel decoder_layer --model llama3-8b --phase prefill --batch 1024 --devices 0";
  const nlohmann::json full = test::run_json(run),
                       half = test::run_json(run + " --set cube.hbm.bandwidth=32B/cycle");
  const double ratio = test::op_cycles(half, "qkv_proj") / test::op_cycles(full, "qkv_proj");
  EXPECT_GT(ratio, 1.0);
  EXPECT_LT(ratio, 1.3);
}

// The residual rides the all-reduces, read from the op log of one PE: one cube adds x into
// its partial sums of each block, so the MLP's norm reads the attention's all-reduced sums
// alone (its DMA moves what the attention's norm moves) and nothing follows the MLP's
// all-reduce.
TEST(PrefillLayer, TheResidualRidesTheAllReduces) {
  const std::string file = test::temp_dir("residual") + "/ops.jsonl";
  const test::Result r = test::run(
      "run --kernel decoder_layer --model tiny --phase prefill --batch 40,23 --devices 0 "
      "--op-log " +
      file);
  ASSERT_EQ(r.code, 0) << r.out;
  std::ifstream in(file);
  std::map<std::string, std::uint64_t> dma_bytes;
  std::map<std::string, int> phase_ops;
  std::vector<nlohmann::json> phases, ops;
  for (std::string line; std::getline(in, line);) {
    const nlohmann::json op = nlohmann::json::parse(line);
    if (op.at("pe") != "sip0.cube0.pe0") continue;
    (op.at("engine") == "phase" ? phases : ops).push_back(op);
  }
  for (const auto& op : ops)
    for (const auto& p : phases)
      if (op.at("issue") >= p.at("start") && op.at("issue") < p.at("end")) {
        if (op.at("engine") == "dma")
          dma_bytes[p.at("kind")] += op.at("bytes").get<std::uint64_t>();
        if (op.at("engine") == "math") ++phase_ops[p.at("kind")];
      }
  EXPECT_GT(dma_bytes["attn_norm"], 0u);
  EXPECT_EQ(dma_bytes["mlp_norm"], dma_bytes["attn_norm"]);
  // The MLP's all-reduce is the collective's sends and adds alone: its math is the adds of
  // the pieces it receives, as many as the attention's all-reduce has.
  EXPECT_EQ(phase_ops["mlp_all_reduce"], phase_ops["attn_all_reduce"]);
}

// A lane of 275 rows in two blocks of 144 and 131 (the most the TCM holds is 256): the
// blocks split a run of 64 positions, whose Q rows go to the run's place head by head.
TEST(PrefillLayer, BlocksThatSplitARunAreTheHostsFp64) {
  const Numerics n = checked(tiny_prompts({2200}), 9);
  EXPECT_TRUE(n.pass) << n.error << " against " << n.tolerance;
}

// Cubes the KV heads' groups leave over (3 heads on a SIP: three groups of 4 cubes) still
// take their share of the MLP; the layer is still the host's.
TEST(PrefillLayer, CubesTheGroupsLeaveOverTakeTheirShareOfTheMlp) {
  StepConfig c = tiny_prompts({40});
  c.model.heads_kv = 3;
  c.model.heads_q = 6;
  const Numerics n = checked(c, 7);
  EXPECT_TRUE(n.pass) << n.error << " against " << n.tolerance;
}

// Query heads that do not split evenly over a group's cubes (10 over 8: some cubes attend
// one, some two, Falcon-7B's 71 over 16 alike).
TEST(PrefillLayer, UnevenHeadsPerCubeAreTheHostsFp64) {
  StepConfig c = tiny_prompts({37});
  c.model.heads_q = 20;
  const Numerics n = checked(c, 8);
  EXPECT_TRUE(n.pass) << n.error << " against " << n.tolerance;
}

TEST(PrefillLayer, WrongKnobsAreRefusedSayingWhy) {
  const test::Result decode =
      test::run("run --kernel decoder_layer --model tiny --q-len 4 --devices 0");
  EXPECT_NE(decode.code, 0);
  EXPECT_NE(decode.out.find("give it with --phase prefill"), std::string::npos) << decode.out;
  const test::Result big =
      test::run("run --kernel decoder_layer --model llama3.1-405b --phase prefill --batch 64");
  EXPECT_NE(big.code, 0);
  EXPECT_NE(big.out.find("it needs 8 SIPs for its weights"), std::string::npos) << big.out;
  // A 128K prompt's activations do not fit beside Llama-3-70B's weights: the message says
  // to prefill it in chunks.
  const test::Result whole =
      test::run("run --kernel decoder_layer --model llama3-70b --phase prefill --batch 131072");
  EXPECT_NE(whole.code, 0);
  EXPECT_NE(whole.out.find("prefill the prompts in chunks (--q-len)"), std::string::npos) << whole.out;
}

}  // namespace
}  // namespace kb::workloads
