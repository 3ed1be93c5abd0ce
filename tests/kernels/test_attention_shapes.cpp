// Real models' attention shapes with the default placement: every preset through prefill
// and decode, and the awkward shapes (odd G, G = 1, G above a SIP's cubes, head dims that
// are not powers of two), in data mode against the fp64 reference.
#include <gtest/gtest.h>

#include "tests/kernels/gqa_support.h"
#include "tests/kernels/tl_support.h"
#include "workloads/models/model_presets.h"
#include "workloads/gqa_prefill/prefill_run.h"

namespace kb {
namespace {

using test::Machine;

gqa::AttentionShape heads(std::uint32_t h_q, std::uint32_t h_kv, std::uint32_t d, DType dt) {
  gqa::AttentionShape a;
  a.h_q = h_q;
  a.h_kv = h_kv;
  a.d = d;
  a.dtype = dt;
  return a;
}

void prefill_matches(Machine& m, const gqa::AttentionShape& a, std::uint64_t s) {
  gqa::PrefillConfig c;
  static_cast<gqa::AttentionShape&>(c) = a;
  c.s = s;
  c.t_q = 0;
  const auto in = gqa::AttentionInputs::random(c.shape(), 7);
  const gqa::PrefillResult r = gqa::run_prefill(m.rt, c, &in);
  ASSERT_TRUE(r.o.has_value());
  test::expect_attention_parity(c.shape(), in, *r.o);
}

void decode_matches(Machine& m, const gqa::AttentionShape& a, std::uint64_t s, std::uint32_t t_q) {
  gqa::DecodeConfig c;
  static_cast<gqa::AttentionShape&>(c) = a;
  c.s = s;
  c.t_q = t_q;
  gqa::choose_placement(c, KERNBENCH_SP_TABLE, std::nullopt, std::nullopt, m.rt.system().topology());
  const auto in = gqa::AttentionInputs::random(c, 9);
  const gqa::DecodeResult r = gqa::run_decode(m.rt, c, &in);
  ASSERT_TRUE(r.o.has_value());
  test::expect_attention_parity(c, in, *r.o);
}

// ---- every preset, on the default machine ----------------------------------------------

class Preset : public ::testing::TestWithParam<std::string> {};

TEST_P(Preset, PrefillMatchesTheReference) {
  const workloads::ModelPreset p = workloads::model_preset(GetParam());
  Machine m("llama70b_4sip", true);
  prefill_matches(m, heads(p.heads_q, p.heads_kv, p.head_dim, DType::bf16), 512);
}

TEST_P(Preset, DecodeOneTokenMatchesTheReference) {
  const workloads::ModelPreset p = workloads::model_preset(GetParam());
  Machine m("llama70b_4sip", true);
  decode_matches(m, heads(p.heads_q, p.heads_kv, p.head_dim, DType::bf16), 1000, 1);
}

TEST_P(Preset, DecodeFourTokensMatchesTheReference) {
  const workloads::ModelPreset p = workloads::model_preset(GetParam());
  Machine m("llama70b_4sip", true);
  decode_matches(m, heads(p.heads_q, p.heads_kv, p.head_dim, DType::fp32), 1000, 4);
}

std::vector<std::string> preset_names() {
  std::vector<std::string> out;
  for (const workloads::ModelPreset& p : workloads::model_presets(workloads::presets_file())) out.push_back(p.name);
  return out;
}

INSTANTIATE_TEST_SUITE_P(All, Preset, ::testing::ValuesIn(preset_names()), [](const auto& info) {
  std::string n = info.param;
  for (char& ch : n)
    if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
  return n;
});

// ---- awkward shapes, default placement on one SIP (16 cubes) ------------------------------

struct Odd {
  std::uint32_t h_q, h_kv, d;
  DType dtype;
  std::uint32_t sips;
};
class OddShape : public ::testing::TestWithParam<Odd> {};

TEST_P(OddShape, PrefillMatchesTheReference) {
  const Odd o = GetParam();
  Machine m("llama70b_4sip", true, {"system.sips=" + std::to_string(o.sips)});
  prefill_matches(m, heads(o.h_q, o.h_kv, o.d, o.dtype), 384);
}

TEST_P(OddShape, DecodeMatchesTheReference) {
  const Odd o = GetParam();
  Machine m("llama70b_4sip", true, {"system.sips=" + std::to_string(o.sips)});
  decode_matches(m, heads(o.h_q, o.h_kv, o.d, o.dtype), 700, 3);
}

INSTANTIATE_TEST_SUITE_P(
    Shapes, OddShape,
    ::testing::Values(Odd{14, 2, 128, DType::bf16, 1},   // G = 7
                      Odd{10, 2, 40, DType::fp32, 1},    // G = 5, d 40
                      Odd{9, 3, 59, DType::bf16, 1},     // G = 3, d 59
                      Odd{4, 4, 96, DType::fp32, 1},     // G = 1 (MHA), d 96
                      Odd{20, 1, 111, DType::bf16, 1},   // G = 20: more heads than the SIP has cubes, d 111
                      Odd{71, 1, 64, DType::bf16, 2},    // MQA over two SIPs: a replica per SIP
                      Odd{4, 2, 256, DType::bf16, 1}),  // d 256
    [](const auto& info) {
      const Odd& o = info.param;
      return "Hq" + std::to_string(o.h_q) + "_Hkv" + std::to_string(o.h_kv) + "_d" + std::to_string(o.d) + "_" +
             dtype_name(o.dtype) + "_" + std::to_string(o.sips) + "sip";
    });

// ---- decode of many query rows: blocks of rows ------------------------------------------

// G x T_q = 2,048 rows do not fit TCM beside the pipeline: decode sweeps them a block at a
// time (a long draft being verified).
TEST(DecodeRowBlocks, ALongDraftMatchesTheReference) {
  Machine m("llama70b_4sip", true, {"system.sips=1"});
  decode_matches(m, heads(8, 1, 128, DType::bf16), 1024, 256);
}

// T_q = S: decode is then a slow prefill, but correct.
TEST(DecodeRowBlocks, QueryLengthEqualToTheContextMatchesTheReference) {
  Machine m("llama70b_4sip", true, {"system.sips=1"});
  decode_matches(m, heads(9, 3, 40, DType::fp32), 400, 400);
}

// ---- feasibility before the run -------------------------------------------------------

// The largest TCM peak any PE of the machine reached in the last run.
std::uint64_t peak_tcm(Machine& m) {
  const Topology& t = m.rt.system().topology();
  std::uint64_t peak = 0;
  for (std::uint32_t cube = 0; cube < t.cubes_per_sip(); ++cube)
    for (std::uint32_t pe = 0; pe < t.cube.pes; ++pe)
      peak = std::max(peak, m.rt.context(PeCoord{SipId(0), CubeId(cube), PeId(pe)}).tcm_use().peak_total);
  return peak;
}

// Every shape the validators accept runs to the end (no kernel error mid-run) within the
// TCM they planned; the ones they refuse are refused before any simulation.
TEST(Feasibility, AcceptedShapesRunWithinTheirPlannedTcm) {
  Machine m("small_1sip_2x2x2", false);
  const Topology& topo = m.rt.system().topology();
  std::size_t accepted = 0, refused_decode = 0, refused_prefill = 0;
  for (const std::uint32_t g : {1u, 3u, 8u, 20u})
    for (const std::uint32_t d : {40u, 128u, 256u})
      for (const std::uint32_t t_q : {1u, 16u, 200u}) {
        const std::string what = "G " + std::to_string(g) + ", d " + std::to_string(d) + ", T_q " + std::to_string(t_q);
        gqa::DecodeConfig dc;
        static_cast<gqa::AttentionShape&>(dc) = heads(g * 2, 2, d, DType::bf16);
        dc.s = 256;
        dc.t_q = t_q;
        gqa::choose_placement(dc, KERNBENCH_SP_TABLE, std::nullopt, std::nullopt, topo);
        bool ok = true;
        try {
          gqa::validate(dc, topo);
        } catch (const workloads::ConfigError&) {
          ok = false;
          ++refused_decode;
          ADD_FAILURE() << "decode " << what << " refused";
        }
        if (ok) {
          ++accepted;
          EXPECT_NO_THROW(gqa::run_decode(m.rt, dc, nullptr)) << "decode " << what;
          EXPECT_LE(peak_tcm(m), gqa::decode_tiling(dc, topo).tcm_bytes) << "decode " << what;
        }
        gqa::PrefillConfig pc;
        static_cast<gqa::AttentionShape&>(pc) = heads(g * 2, 2, d, DType::bf16);
        pc.s = 256;
        pc.t_q = t_q;
        gqa::PrefillSetup setup;
        try {
          setup = gqa::validate(pc, topo);
        } catch (const workloads::ConfigError& e) {
          ++refused_prefill;
          ADD_FAILURE() << "prefill " << what << " refused: " << e.what();
          continue;
        }
        ++accepted;
        EXPECT_NO_THROW(gqa::run_prefill(m.rt, pc, nullptr)) << "prefill " << what;
        EXPECT_LE(peak_tcm(m), gqa::PrefillPlan::geometry(setup.plan_shape).tcm_bytes()) << "prefill " << what;
      }
  // Prefill's TCM use does not grow with T_q or G; decode sweeps the query rows in blocks
  // when they do not fit: every shape here runs.
  EXPECT_EQ(accepted, 72u);
}

}  // namespace
}  // namespace kb
