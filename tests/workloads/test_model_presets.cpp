// Model presets (presets/models.yaml, `--model NAME`, `kernbench models`): the repository's
// file holds the published attention shapes; a preset sets the shape's heads and head
// dimension and explicit flags override it; a wrong name or a malformed file is an
// error that says what is allowed and where.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <tuple>

#include "tests/sc_main/cli_support.h"
#include "workloads/attention/attention.h"
#include "workloads/attention/model_presets.h"
#include "workloads/workload.h"

namespace kb::gqa {
namespace {

using workloads::ConfigError;
using workloads::Values;

// H_q, H_kv, d from each model's published configuration.
const std::map<std::string, std::tuple<std::uint32_t, std::uint32_t, std::uint32_t>> kPublished = {
    {"llama2-7b", {32, 32, 128}},   {"llama3-8b", {32, 8, 128}},   {"llama3-70b", {64, 8, 128}},
    {"llama3.1-405b", {128, 8, 128}}, {"mistral-7b", {32, 8, 128}}, {"qwen2.5-7b", {28, 4, 128}},
    {"qwen2.5-14b", {40, 8, 128}},  {"qwen2.5-32b", {40, 8, 128}}, {"qwen2.5-72b", {64, 8, 128}},
    {"gemma2-9b", {16, 8, 256}},    {"falcon-7b", {71, 1, 64}},    {"phi3-mini", {32, 32, 96}}};

TEST(ModelPresets, TheRepositoryFileHoldsThePublishedShapes) {
  std::map<std::string, std::tuple<std::uint32_t, std::uint32_t, std::uint32_t>> read;
  for (const ModelPreset& m : model_presets()) read[m.name] = {m.heads_q, m.heads_kv, m.head_dim};
  EXPECT_EQ(read, kPublished);
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
  std::ofstream(file) << "models:\n  ok: {heads_q: 8, heads_kv: 2, head_dim: 64}\n  broken: {heads_q: 8, heads_kv: 2}\n";
  try {
    model_presets(file);
    FAIL() << "a preset without head_dim was accepted";
  } catch (const ConfigError& e) {
    EXPECT_STREQ(e.what(), (file + ":3: model 'broken' needs head_dim, a whole number of at least 1").c_str());
  }
  std::ofstream(file) << "models: [1, 2]\n";
  EXPECT_THROW(model_presets(file), ConfigError);
  EXPECT_THROW(model_presets(testing::TempDir() + "/no_such_presets.yaml"), ConfigError);
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
