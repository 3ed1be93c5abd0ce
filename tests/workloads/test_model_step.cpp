// Whole-model decode (docs/models.md): a decoder layer matches fp64 in data mode, and an
// outside numpy script recomputes it from the files it writes; a model step scaled from
// N layers is within 1% of simulating them all; the roofline is its closed form; weight
// streaming moves with the HBM bandwidth; models that do not fit are refused, saying why.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>

#include "tests/kernels/tl_support.h"
#include "tests/sc_main/cli_support.h"
#include "tests/workloads/step_support.h"
#include "workloads/models/layer_check.h"
#include "workloads/workload.h"

namespace kb::workloads {
namespace {

// Runs workload `name` with these knobs on a fresh machine of `topo`.
Result run_workload(const std::string& name, const std::map<std::string, std::string>& knobs,
                    const std::vector<SipId>& devices, bool data, const std::vector<std::string>& sets = {}) {
  test::Machine m("llama70b_4sip", data, sets, RunOptions::OpLogKept::Nothing);
  const Workload& w = *find(name);
  Values v;
  for (const KnobSet* set : w.knobs())
    for (const Knob& k : set->knobs) {
      const auto given = knobs.find(k.field);
      v.set(k.field, given == knobs.end() ? k.fallback : given->second, given != knobs.end());
    }
  const Setup setup{&m.topo, devices, {}, data};
  const auto job = w.configure(v, setup);
  Result r = job->run(m.rt);
  w.derive(r, m.topo);
  return r;
}


std::string refusal(const std::string& name, const std::map<std::string, std::string>& knobs,
                    const std::vector<SipId>& devices) {
  try {
    run_workload(name, knobs, devices, false);
  } catch (const ConfigError& e) {
    return e.text();
  }
  return "";
}

const std::vector<SipId> kTwoSips = {SipId(0), SipId(1)};

TEST(DecoderLayer, TheTinyLayerIsTheHostsFp64) {
  const Result r = run_workload("decoder_layer", {{"model", "tiny"}, {"batch", "5,9,33"}, {"check", "true"}}, kTwoSips, true);
  ASSERT_TRUE(r.numerics.has_value());
  EXPECT_TRUE(r.numerics->pass) << r.numerics->error << " against " << r.numerics->tolerance;
  EXPECT_TRUE(r.numerics->enforced);
  EXPECT_GT(r.numerics->naive_error, 0) << "bf16 storage rounds";
}

// The check tells a wrong layer from a right one: the run's y against the reference of
// the same values at other positions (RoPE rotates Q and K by the wrong angles) misses.
TEST(DecoderLayer, TheCheckSeesWrongPositions) {
  test::Machine m("llama70b_4sip", true, {}, RunOptions::OpLogKept::Nothing);
  StepConfig c;
  c.model = model_preset("tiny");
  c.lens = {40, 7};
  c.devices = kTwoSips;
  const StepValues v = StepValues::random(c, 3);
  const StepResult got = run_step(m.rt, c, &v);
  ASSERT_TRUE(got.out.has_value());
  EXPECT_TRUE(check_layer(c, v, *got.out).pass);
  StepValues moved = v;
  for (auto& p : moved.positions) p += 5;
  EXPECT_FALSE(check_layer(c, moved, *got.out).pass);
}

// Falcon's form (LayerNorm, a GELU MLP, attention and MLP from one norm) and Qwen's QKV
// bias, on a tiny model of that form.
TEST(DecoderLayer, AParallelLayerNormGeluBlockWithQkvBiasIsTheHostsFp64) {
  test::Machine m("llama70b_4sip", true, {}, RunOptions::OpLogKept::Nothing);
  StepConfig c;
  c.model = model_preset("tiny");
  c.model.norm = NormKind::Layer;
  c.model.mlp = MlpKind::Gelu;
  c.model.block = BlockKind::Parallel;
  c.model.qkv_bias = true;
  c.lens = {20, 3};
  c.devices = kTwoSips;
  const StepValues v = StepValues::random(c, 5);
  const StepResult got = run_step(m.rt, c, &v);
  ASSERT_TRUE(got.out.has_value());
  const Numerics n = check_layer(c, v, *got.out);
  EXPECT_TRUE(n.pass) << n.error << " against " << n.tolerance;
}

// The files of --outputs let numpy recompute the layer with Hugging Face's conventions.
TEST(DecoderLayer, OutputsLetNumpyRecomputeTheLayer) {
  if (std::system("/usr/bin/python3 -c 'import numpy' > /dev/null 2>&1") != 0)
    GTEST_SKIP() << "Debian's python3-numpy is not installed";
  const std::string dir = test::temp_dir("layer_outputs");
  const test::Result run = test::run("run --kernel decoder_layer --model tiny --batch 12,30 --devices 0-1 --data --check --outputs " + dir);
  ASSERT_EQ(run.code, 0) << run.out;
  for (const char* f : {"x", "positions", "input_layernorm", "q_proj", "k_proj", "v_proj", "o_proj",
                        "post_attention_layernorm", "gate_proj", "up_proj", "down_proj", "k_cache_0", "v_cache_1", "y",
                        "k_new", "v_new"})
    EXPECT_TRUE(std::filesystem::exists(dir + "/" + f + ".npy")) << f;
  EXPECT_TRUE(std::filesystem::exists(dir + "/config.json"));
  const test::Result numpy =
      test::run_shell("/usr/bin/python3 " + test::source_path("scripts/layer_from_files.py") + " " + dir);
  EXPECT_EQ(numpy.code, 0) << numpy.out;
}

// A model's step from 2 simulated layers, the rest scaled from the steady-state layer,
// against all 32 simulated.
TEST(ModelStep, TheStepScaledFromTwoLayersIsWithinOnePercentOfAllLayers) {
  const std::string run = "--kernel model_step --model llama3-8b --batch 2048 --devices 0 --layers ";
  const nlohmann::json all = test::run_json(run + "all"), two = test::run_json(run + "2");
  EXPECT_FALSE(all.at("step").at("scaled").get<bool>());
  EXPECT_TRUE(two.at("step").at("scaled").get<bool>());
  const double step = all.at("step").at("cycles").get<double>();
  EXPECT_EQ(step, all.at("simulated_cycles").get<double>());
  EXPECT_NEAR(two.at("step").at("cycles").get<double>(), step, 0.01 * step);
  // The energy scales with the layers as the latency does (docs/energy.md): the step's
  // joules, and a token's (one request: the whole step).
  const double joules = all.at("energy").at("total_joules").get<double>();
  EXPECT_NEAR(two.at("energy").at("total_joules").get<double>(), joules, 0.01 * joules);
  EXPECT_EQ(two.at("energy").at("joules_per_token").get<double>(),
            two.at("energy").at("total_joules").get<double>());
  EXPECT_EQ(two.at("energy").at("seconds"), two.at("step").at("seconds"));
  // Two layers of 32 and the ends (the embedding and the LM head: 6.4% of this step).
  EXPECT_LT(two.at("simulated_cycles").get<double>(), step * (2.0 / 32 + 0.07)) << "two layers simulate far fewer cycles";
}

// The decode roofline: every weight and KV byte once over the HBM of the run's SIPs.
TEST(ModelStep, TheRooflineIsWeightsAndKvOverTheHbmBandwidth) {
  const Result r = run_workload("decoder_layer", {{"model", "llama3-8b"}, {"batch", "1000,3000"}}, {SipId(0)}, false);
  const ModelPreset m = model_preset("llama3-8b");
  const double weights = 2.0 * static_cast<double>(m.layer_parameters());
  const double kv = 4000.0 * 2 * m.heads_kv * m.head_dim * 2;
  EXPECT_EQ(r.number("roofline.weight_bytes"), weights);
  EXPECT_EQ(r.number("roofline.kv_bytes"), kv);
  EXPECT_DOUBLE_EQ(r.number("roofline.cycles"), (weights + kv) / (128.0 * 64));
  EXPECT_DOUBLE_EQ(r.number("roofline_efficiency"), r.number("roofline.cycles") / r.number("step.cycles"));
  EXPECT_DOUBLE_EQ(r.number("tokens_per_s"), 2 / r.number("step.seconds"));
  // The DMA streamed every weight (norms and all in fp32, so a little more).
  EXPECT_GE(r.number("bytes.weights"), weights);
  EXPECT_LE(r.number("bytes.weights"), weights * 1.01);
}

// A physics probe: at half the HBM bandwidth, the projections, which stream their
// weights, take twice as long: down alone, and up and gate with the attention's
// all-reduce, during which their first tiles preload (at half the bandwidth less of the
// preload hides behind it). The all-reduce, held in the TCM and moved over the fabric and
// the NOC, touches no HBM: only the PEs' skew on reaching it moves it.
TEST(ModelStep, WeightStreamingMovesWithTheHbmBandwidth) {
  const std::string run = "--kernel decoder_layer --model llama3-8b --batch 512 --devices 0";
  const nlohmann::json full = test::run_json(run), half = test::run_json(run + " --set cube.hbm.bandwidth=32B/cycle");
  auto up_gate = [](const nlohmann::json& r) {
    return test::op_cycles(r, "up_gate_proj") + test::op_cycles(r, "attn_all_reduce");
  };
  for (const double ratio : {test::op_cycles(half, "down_proj") / test::op_cycles(full, "down_proj"),
                             up_gate(half) / up_gate(full)}) {
    EXPECT_GT(ratio, 1.9);
    EXPECT_LT(ratio, 2.05);
  }
  const double all_reduce = test::op_cycles(half, "mlp_all_reduce") / test::op_cycles(full, "mlp_all_reduce");
  EXPECT_GT(all_reduce, 0.85);
  EXPECT_LT(all_reduce, 1.15);
}

// The sweep runs the whole-model workloads: two requests share every weight byte a step
// reads, so they get well over one's tokens a second (not twice: the second request's KV
// The overlap, read from the op log of one PE: its all-reduces run in the TCM and leave
// the DMA free, which loads the MLP's first weight tiles during the attention's all-reduce
// and the next layer's QKV weights during the MLP's; the projections then stream only
// the rest.
TEST(ModelStep, TheAllReducesLeaveTheDmaToTheNextWeights) {
  const std::string file = test::temp_dir("overlap") + "/ops.jsonl";
  const test::Result r = test::run("run --kernel model_step --model llama3-8b --batch 8192 --devices 0 --layers 2 --op-log " + file);
  ASSERT_EQ(r.code, 0) << r.out;
  std::ifstream in(file);
  std::vector<nlohmann::json> phases, loads;
  std::uint64_t collective_dma = 0;
  for (std::string line; std::getline(in, line);) {
    const nlohmann::json op = nlohmann::json::parse(line);
    if (op.at("pe") != "sip0.cube0.pe0") continue;
    if (op.at("engine") == "phase") phases.push_back(op);
    if (op.at("engine") == "dma" && op.at("kind") == "load") loads.push_back(op);
  }
  auto first_phase = [&](const std::string& kind) {
    for (const auto& p : phases)
      if (p.at("kind") == kind) return p;
    ADD_FAILURE() << "no phase " << kind;
    return nlohmann::json();
  };
  // The loads of `tensor` that ran while `phase` did.
  auto loads_during = [&](const nlohmann::json& phase, const std::string& tensor) {
    int n = 0;
    for (const auto& l : loads)
      if (l.at("tensor") == tensor && l.at("start") < phase.at("end") && l.at("end") > phase.at("start")) ++n;
    return n;
  };
  const nlohmann::json attn = first_phase("attn_all_reduce"), mlp = first_phase("mlp_all_reduce");
  EXPECT_EQ(loads_during(attn, "w.L0.up_t"), 1);
  EXPECT_EQ(loads_during(mlp, "w.L1.qkv_t"), 1);
  // Nothing of the collectives crossed the DMA: every load is of a weight, the KV cache,
  // the RoPE tables or the attention's Q and O.
  for (const auto& l : loads) {
    const std::string t = l.at("tensor");
    if (t.find("sum") != std::string::npos || t.find("gather") != std::string::npos || t.find("scatter") != std::string::npos)
      ++collective_dma;
  }
  EXPECT_EQ(collective_dma, 0u);
}

// The group's gather of Q, K and V and scatter of O go in two levels, read from the op
// log: among a cube's PEs (each collective's first tag) and among the cubes, each PE to
// its counterparts (its first tag + 200), never one level over all the group's PEs.
TEST(ModelStep, TheGroupCollectivesGoThroughTheCubeThenAcross) {
  const std::string file = test::temp_dir("two_level") + "/ops.jsonl";
  const test::Result r = test::run("run --kernel decoder_layer --model llama3-8b --batch 8192 --devices 0 --op-log " + file);
  ASSERT_EQ(r.code, 0) << r.out;
  std::ifstream in(file);
  std::map<int, int> in_cube, across;  // sends by tag
  auto cube_pe = [](const std::string& pe) {  // "sipS.cubeC.peP" -> (C, P)
    const auto c = pe.find("cube"), p = pe.find(".pe");
    return std::pair{std::stoi(pe.substr(c + 4, p - c - 4)), std::stoi(pe.substr(p + 3))};
  };
  for (std::string line; std::getline(in, line);) {
    const nlohmann::json op = nlohmann::json::parse(line);
    const int tag = op.at("tag");
    if (op.at("kind") != "send" || (tag != 1000 && tag != 1200 && tag != 2000 && tag != 2200)) continue;
    const auto [c, p] = cube_pe(op.at("pe"));
    const auto [pc, pp] = cube_pe(op.at("peer"));
    if (c == pc) ++in_cube[tag];
    else if (p == pp) ++across[tag];
    else ADD_FAILURE() << "a group message from " << op.at("pe") << " to " << op.at("peer") << ", tag " << tag;
  }
  EXPECT_GT(in_cube[1000], 0);
  EXPECT_GT(across[1200], 0);
  EXPECT_EQ(across[1000] + in_cube[1200], 0);
  EXPECT_GT(in_cube[2000], 0);
  EXPECT_GT(across[2200], 0);
  EXPECT_EQ(across[2000] + in_cube[2200], 0);
}

// cache and the all-reduces' doubled buffers take their time).
TEST(ModelStep, ASweepOverTheBatchGivesTokensPerSecond) {
  const std::string dir = test::temp_dir("model_step_sweep");
  std::ofstream(dir + "/spec.yaml") << "name: batch\nrun: {kernel: decoder_layer, model: llama3-8b, devices: '0'}\n"
                                       "grid:\n  batch: ['1024', '1024,1024']\n";
  const test::Result r = test::run("sweep " + dir + "/spec.yaml --out " + dir + "/out");
  ASSERT_EQ(r.code, 0) << r.out;
  std::ifstream in(dir + "/out/sweep.json");
  const nlohmann::json rows = nlohmann::json::parse(in).at("rows");
  ASSERT_EQ(rows.size(), 2u);
  const double one = rows[0].at("result").at("tokens_per_s").get<double>();
  const double two = rows[1].at("result").at("tokens_per_s").get<double>();
  EXPECT_GT(two, 1.5 * one);
  EXPECT_LT(two, 2 * one);
}

TEST(ModelStep, ModelsThatDoNotFitAreRefusedSayingWhy) {
  const std::vector<SipId> four = {SipId(0), SipId(1), SipId(2), SipId(3)};
  EXPECT_NE(refusal("model_step", {{"model", "llama3.1-405b"}}, four).find("it needs 8 SIPs for its weights"),
            std::string::npos);
  EXPECT_NE(refusal("model_step", {{"model", "falcon-7b"}}, four).find("71 query heads do not split evenly over 4 SIPs"),
            std::string::npos);
  EXPECT_NE(refusal("model_step", {{"model", "tiny"}}, four).find("2 KV heads are fewer than the 4 SIPs"),
            std::string::npos);
  EXPECT_NE(refusal("model_step", {{"model", "llama3-70b"}, {"batch", "random:64:1024-8192:7"}}, four)
                .find("at most 6 requests a step"),
            std::string::npos)
      << refusal("model_step", {{"model", "llama3-70b"}, {"batch", "random:64:1024-8192:7"}}, four);
  EXPECT_NE(refusal("model_step", {{"model", "llama3-8b"}, {"phase", "chunked"}}, four).find("allowed values: decode, prefill"),
            std::string::npos);
}

}  // namespace
}  // namespace kb::workloads
