// Model presets (presets/models.yaml, `--model NAME`, `kernbench models`): the repository's
// file holds the published architectures, whose weights count to the published parameter
// counts; a preset sets the attention shape's heads and head dimension and explicit flags
// override it; a wrong name or a malformed file is an error that says what is allowed
// and where.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <tuple>

#include "tests/sc_main/cli_support.h"
#include "workloads/attention/attention.h"
#include "workloads/models/model_presets.h"
#include "workloads/workload.h"

namespace kb::gqa {
namespace {

using workloads::ConfigError;
using workloads::ModelPreset;
using workloads::Values;

// H_q, H_kv, d from each model's published configuration.
const std::map<std::string, std::tuple<std::uint32_t, std::uint32_t, std::uint32_t>> kPublished = {
    {"llama2-7b", {32, 32, 128}},   {"llama3-8b", {32, 8, 128}},   {"llama3-70b", {64, 8, 128}},
    {"llama3.1-405b", {128, 8, 128}}, {"mistral-7b", {32, 8, 128}}, {"qwen2.5-7b", {28, 4, 128}},
    {"qwen2.5-14b", {40, 8, 128}},  {"qwen2.5-32b", {40, 8, 128}}, {"qwen2.5-72b", {64, 8, 128}},
    {"gemma2-9b", {16, 8, 256}},    {"falcon-7b", {71, 1, 64}},    {"phi3-mini", {32, 32, 96}},
    {"tiny", {4, 2, 64}}};

TEST(ModelPresets, TheRepositoryFileHoldsThePublishedShapes) {
  std::map<std::string, std::tuple<std::uint32_t, std::uint32_t, std::uint32_t>> read;
  for (const ModelPreset& m : workloads::model_presets()) read[m.name] = {m.heads_q, m.heads_kv, m.head_dim};
  EXPECT_EQ(read, kPublished);
}

// Parameter counts as the models' published weights add up (their safetensors indexes:
// total bytes / 2 in bf16). Gemma 2 has two more norms per layer than the block form
// keeps (pre- and post-feed-forward: 2 x 3584 x 42 weights).
TEST(ModelPresets, TheWeightsAddUpToThePublishedParameterCounts) {
  const std::map<std::string, std::uint64_t> published = {
      {"llama2-7b", 6'738'415'616},   {"llama3-8b", 8'030'261'248},    {"llama3-70b", 70'553'706'496},
      {"qwen2.5-7b", 7'615'616'512},  {"falcon-7b", 6'921'720'704},    {"gemma2-9b", 9'241'705'984 - 2 * 3584 * 42}};
  for (const auto& [name, count] : published) EXPECT_EQ(workloads::model_preset(name).parameters(), count) << name;
  // The small preset by hand: embeddings and LM head, 2 layers of Q, K, V, O, a SwiGLU
  // MLP and two norms, the final norm.
  const ModelPreset t = workloads::model_preset("tiny");
  const std::uint64_t layer = 256 * 256 + 2 * 256 * 128 + 256 * 256 + 3 * 256 * 512 + 2 * 256;
  EXPECT_EQ(t.layer_parameters(), layer);
  EXPECT_EQ(t.parameters(), 2 * 1024 * 256 + 2 * layer + 256);
  // The forms: Llama 3.1's RoPE scaling, Falcon's parallel block, Qwen's biases.
  const ModelPreset big = workloads::model_preset("llama3.1-405b");
  EXPECT_TRUE(big.rope_scaling.on());
  EXPECT_EQ(big.rope_scaling.factor, 8.0);
  EXPECT_EQ(big.rope_scaling.original_max_position, 8192.0);
  EXPECT_FALSE(workloads::model_preset("llama3-70b").rope_scaling.on());
  const ModelPreset falcon = workloads::model_preset("falcon-7b");
  EXPECT_EQ(falcon.block, workloads::BlockKind::Parallel);
  EXPECT_EQ(falcon.norm, workloads::NormKind::Layer);
  EXPECT_EQ(falcon.mlp, workloads::MlpKind::Gelu);
  EXPECT_TRUE(falcon.tied_embeddings);
  EXPECT_TRUE(workloads::model_preset("qwen2.5-72b").qkv_bias);
  EXPECT_EQ(workloads::model_preset("qwen2.5-72b").norm_eps, 1e-6);
}

Values shape_values(const std::map<std::string, std::string>& given) {
  Values v;
  for (const workloads::KnobSet* set : {&shape_knobs(), &context_knobs()})
    for (const workloads::Knob& k : set->knobs) v.set(k.field, k.fallback, false);
  v.set("dtype", "bf16", false);
  for (const auto& [field, text] : given) v.set(field, text, true);
  return v;
}

TEST(ModelPresets, APresetSetsTheHeadsAndFlagsOverrideIt) {
  AttentionShape a = shape_of(shape_values({{"model", "gemma2-9b"}}), 1);
  EXPECT_EQ(std::make_tuple(a.h_q, a.h_kv, a.d), std::make_tuple(16u, 8u, 256u));
  EXPECT_EQ(a.model, "gemma2-9b");
  a = shape_of(shape_values({{"model", "gemma2-9b"}, {"heads_kv", "4"}, {"head_dim", "128"}}), 1);
  EXPECT_EQ(std::make_tuple(a.h_q, a.h_kv, a.d), std::make_tuple(16u, 4u, 128u));
  a = shape_of(shape_values({}), 1);
  EXPECT_EQ(a.model, "");
  EXPECT_EQ(std::make_tuple(a.h_q, a.h_kv, a.d), std::make_tuple(64u, 8u, 128u));
}

TEST(ModelPresets, AMisspeltNameListsThePresets) {
  try {
    shape_of(shape_values({{"model", "lama3-8b"}}), 1);
    FAIL() << "a misspelt preset was accepted";
  } catch (const ConfigError& e) {
    EXPECT_TRUE(e.usage());
    const std::string text = e.render([](const std::string& f) { return "--" + f; });
    EXPECT_EQ(text.rfind("--model 'lama3-8b' is not a preset; presets: llama2-7b, llama3-8b,", 0), 0u) << text;
    EXPECT_NE(text.find("phi3-mini"), std::string::npos) << text;
  }
}

TEST(ModelPresets, AMalformedFileNamesTheLine) {
  const std::string file = testing::TempDir() + "/presets_bad.yaml";
  const std::string ok =
      "  ok: {heads_q: 8, heads_kv: 2, head_dim: 64, hidden: 512, intermediate: 1024, layers: 2, vocab: 100,\n"
      "       rope_theta: 10000, norm_eps: 1.0e-5, norm: rms, mlp: swiglu}\n";
  auto error_of = [&](const std::string& text) {
    std::ofstream(file) << "models:\n" << ok << text;
    try {
      workloads::model_presets(file);
    } catch (const ConfigError& e) {
      return std::string(e.what());
    }
    return std::string("accepted");
  };
  EXPECT_EQ(error_of("  broken: {heads_q: 8, heads_kv: 2}\n"),
            file + ":4: model 'broken' needs head_dim, a whole number of at least 1");
  const std::string almost =
      "  broken: {heads_q: 8, heads_kv: 2, head_dim: 64, hidden: 512, intermediate: 1024, layers: 2, vocab: 100,\n"
      "           rope_theta: 10000, norm_eps: 1.0e-5, ";
  EXPECT_EQ(error_of(almost + "norm: batch, mlp: swiglu}\n"),
            file + ":5: model 'broken' needs norm, one of rms, layer");
  EXPECT_EQ(error_of(almost + "norm: rms, mlp: relu}\n"),
            file + ":5: model 'broken' needs mlp, one of swiglu, geglu, gelu");
  EXPECT_EQ(error_of(almost + "norm: rms, mlp: swiglu, block: serial}\n"),
            file + ":5: model 'broken' needs block, one of sequential, parallel");
  EXPECT_EQ(error_of(almost + "norm: rms, mlp: swiglu, rope_scaling: {factor: 8}}\n"),
            file + ":5: model 'broken' needs rope_scaling.low_freq_factor, a number above 0");
  EXPECT_EQ(error_of(almost.substr(0, almost.find("norm_eps")) + "norm_eps: -1, norm: rms, mlp: swiglu}\n"),
            file + ":5: model 'broken' needs norm_eps, a number above 0");
  EXPECT_EQ(error_of("  broken: {heads_q: 8, heads_kv: 3, head_dim: 64, hidden: 512, intermediate: 1024, layers: 2,\n"
                     "           vocab: 100, rope_theta: 10000, norm_eps: 1.0e-5, norm: rms, mlp: swiglu}\n"),
            file + ":4: model 'broken' needs heads_kv, a divisor of heads_q");
  std::ofstream(file) << "models: [1, 2]\n";
  EXPECT_THROW(workloads::model_presets(file), ConfigError);
  EXPECT_THROW(workloads::model_presets(testing::TempDir() + "/no_such_presets.yaml"), ConfigError);
}

TEST(ModelPresets, TheProgramListsThemAndRunsWithOne) {
  const test::Result list = test::run("models");
  ASSERT_EQ(list.code, 0) << list.out;
  for (const auto& [name, shape] : kPublished) EXPECT_NE(list.out.find("  " + name + " "), std::string::npos) << name;
  const test::Result wrong = test::run("run --model lama3-8b");
  EXPECT_EQ(wrong.code, 2) << wrong.out;
  EXPECT_NE(wrong.out.find("--model 'lama3-8b' is not a preset; presets: llama2-7b"), std::string::npos) << wrong.out;
  const std::string json = test::temp_dir("preset_run") + "/r.json";
  const test::Result run = test::run("run --model llama3-8b --seq-len 1024 --json " + json);
  ASSERT_EQ(run.code, 0) << run.out;
  EXPECT_NE(run.out.find("  model           llama3-8b\n"), std::string::npos) << run.out;
  std::ifstream in(json);
  const auto knobs = nlohmann::json::parse(in).at("knobs");
  EXPECT_EQ(knobs.at("model"), "llama3-8b");
  EXPECT_EQ(knobs.at("heads_q"), 32);
  EXPECT_EQ(knobs.at("heads_kv"), 8);
  EXPECT_EQ(knobs.at("head_dim"), 128);
}

}  // namespace
}  // namespace kb::gqa
