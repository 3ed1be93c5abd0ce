// GQA decode: numeric parity with the fp64 reference, and the levers read from the op log.
#include <gtest/gtest.h>

#include <algorithm>
#include <functional>
#include <iterator>
#include <map>
#include <set>

#include "workloads/gqa_decode/decode_run.h"
#include "kernels/gqa/helpers.h"
#include "tests/kernels/gqa_support.h"
#include "tests/kernels/tl_support.h"

namespace kb {
namespace {

using gqa::DecodeConfig;
using test::Machine;

// One SIP of the default machine: two groups of 8 cubes.
Machine one_sip(bool data) { return Machine("llama70b_4sip", data, {"system.sips=1"}); }

DecodeConfig small(std::uint32_t g, std::uint32_t t_q, std::uint32_t c, std::uint32_t p, DType dt) {
  DecodeConfig cfg;
  cfg.h_kv = 2;
  cfg.h_q = 2 * g;
  cfg.t_q = t_q;
  cfg.s = 1000;  // ragged over C*P = 64 ranks: the last rank holds nothing
  cfg.cubes = c;
  cfg.pes = p;
  cfg.dtype = dt;
  return cfg;
}

using ParityParam = std::tuple<std::uint32_t, std::uint32_t, std::uint32_t, std::uint32_t, DType, gqa::Variant>;
class DecodeParity : public ::testing::TestWithParam<ParityParam> {};

TEST_P(DecodeParity, MatchesFp64Reference) {
  const auto [g, t_q, c, p, dt, variant] = GetParam();
  Machine m = one_sip(true);
  DecodeConfig cfg = small(g, t_q, c, p, dt);
  cfg.variant = variant;
  const auto in = gqa::AttentionInputs::random(cfg, 7);
  const gqa::DecodeResult r = gqa::run_decode(m.rt, cfg, &in);
  ASSERT_TRUE(r.o.has_value());
  test::expect_attention_parity(cfg, in, *r.o);
}

// S = 1000 over C x P ranks is ragged, and over 64 the last rank holds nothing.
INSTANTIATE_TEST_SUITE_P(
    Shapes, DecodeParity,
    ::testing::Combine(::testing::Values(1u, 8u), ::testing::Values(1u, 16u), ::testing::Values(1u, 2u, 4u, 8u),
                       ::testing::Values(1u, 8u), ::testing::Values(DType::fp32, DType::bf16),
                       ::testing::Values(gqa::Variant::Pipelined)));
// The other variants over the same shapes (bf16), and fp32 at two of them.
INSTANTIATE_TEST_SUITE_P(
    Variants, DecodeParity,
    ::testing::Combine(::testing::Values(1u, 8u), ::testing::Values(1u, 16u), ::testing::Values(1u, 2u, 4u, 8u),
                       ::testing::Values(1u, 8u), ::testing::Values(DType::bf16),
                       ::testing::Values(gqa::Variant::Naive, gqa::Variant::Fused)));
INSTANTIATE_TEST_SUITE_P(VariantsFp32, DecodeParity,
                         ::testing::Values(ParityParam{8, 16, 8, 8, DType::fp32, gqa::Variant::Naive},
                                           ParityParam{8, 16, 8, 8, DType::fp32, gqa::Variant::Fused}));
// P not a power of two: Level 2 sends every owner its segment directly; with one state
// row, PE 0 owns it all.
INSTANTIATE_TEST_SUITE_P(SixPes, DecodeParity,
                         ::testing::Values(ParityParam{8, 16, 4, 6, DType::fp32, gqa::Variant::Pipelined},
                                           ParityParam{1, 1, 4, 6, DType::bf16, gqa::Variant::Pipelined}));

TEST(DecodeParity, RealGqaOnFourSipsNotCausal) {
  Machine m("llama70b_4sip", true);
  DecodeConfig cfg;  // H_q 64, H_kv 8, d 128, C 8, P 8
  cfg.s = 777;
  cfg.t_q = 2;
  cfg.causal = false;
  const auto in = gqa::AttentionInputs::random(cfg, 11);
  const gqa::DecodeResult r = gqa::run_decode(m.rt, cfg, &in);
  test::expect_attention_parity(cfg, in, *r.o);
}

// ---- levers ---------------------------------------------------------------------------

gqa::DecodeResult timing_run(Machine& m, const DecodeConfig& cfg) { return gqa::run_decode(m.rt, cfg, nullptr); }

// SystemC elaborates once per process: tests that compare configurations run them one
// after the other on the same machine (each run starts where the last one ended).

TEST(DecodeLevers, KvBytesDoNotDependOnG) {
  Machine m = one_sip(false);
  std::uint64_t bytes[2] = {};
  std::uint64_t m_rows[2] = {};
  const std::uint32_t gs[2] = {1, 8};
  for (int i = 0; i < 2; ++i) {
    DecodeConfig cfg = small(gs[i], 1, 8, 8, DType::bf16);
    cfg.s = 8192;
    const std::size_t first = m.rt.op_log().size();
    const gqa::DecodeResult r = timing_run(m, cfg);
    bytes[i] = r.kv_bytes;
    // The Q.K^T composites have m = G * T_q rows: flops = 2 * m * n * d.
    for (std::size_t k = first; k < m.rt.op_log().size(); ++k) {
      const OpRecord& op = m.rt.op_log().records()[k];
      if (op.kind == "composite" && op.tensor.rfind("k.", 0) == 0)
        m_rows[i] = op.flops / (2 * (op.bytes / (cfg.d * 2)) * cfg.d);
    }
  }
  EXPECT_EQ(bytes[0], bytes[1]);
  EXPECT_EQ(bytes[0], 2ull * 8192 * 2 * 128 * 2);  // K and V of both heads, bf16
  EXPECT_EQ(m_rows[0], 1u);
  EXPECT_EQ(m_rows[1], 8u);
}

// The depth of the reduce: a send's round is one more than the deepest round of the
// messages its sender had received before the send left (the scheduler holds a send
// until its state is merged).
std::uint32_t reduce_depth(const OpLog& log) {
  std::map<std::tuple<PeCoord, PeCoord, std::uint32_t>, std::uint32_t> round_of;  // (from, to, tag)
  std::map<PeCoord, std::vector<std::pair<std::uint64_t, std::uint32_t>>> received;  // PE -> (end, round)
  std::uint32_t depth = 0;
  std::vector<const OpRecord*> msgs;
  for (const auto& r : log.records())
    if (r.kind == "send" || r.kind == "recv") msgs.push_back(&r);
  std::stable_sort(msgs.begin(), msgs.end(), [](const OpRecord* a, const OpRecord* b) {
    const std::uint64_t ta = a->kind == "send" ? a->start : a->end, tb = b->kind == "send" ? b->start : b->end;
    return ta < tb;
  });
  for (const OpRecord* r : msgs) {
    if (r->kind == "send") {
      std::uint32_t before = 0;
      for (const auto& [end, round] : received[r->pe])
        if (end <= r->start) before = std::max(before, round);
      round_of[{r->pe, *r->peer, r->tag}] = before + 1;
      depth = std::max(depth, before + 1);
    } else {
      received[r->pe].emplace_back(r->end, round_of.at({*r->peer, r->pe, r->tag}));
    }
  }
  return depth;
}

TEST(DecodeLevers, TwoLevelReduceRoundsAndLinks) {
  Machine m = one_sip(false);
  DecodeConfig cfg = small(8, 1, 8, 8, DType::bf16);  // 8 state rows: one segment per PE
  cfg.s = 4096;
  timing_run(m, cfg);
  const OpLog& log = m.rt.op_log();
  // log2 8 = 3 halving rounds on IPCQ + 4x2 center-root: ceil(3/2) + ceil(1/2) = 3 on the NOC.
  EXPECT_EQ(gqa::binomial_rounds(8) + gqa::center_rounds(4, 2), 6u);
  EXPECT_EQ(reduce_depth(log), 6u);
  std::map<PeCoord, std::vector<const OpRecord*>> level2;
  std::size_t level1 = 0;
  for (const OpRecord* s : log.select("ipcq", "send")) {
    if (s->tag >= gqa::kTagLevel1) {
      ++level1;
      EXPECT_EQ(s->hops, 1u) << "Level 1 send of more than one mesh hop";
      EXPECT_EQ(s->peer->pe, s->pe.pe) << "Level 1 joins the same PE of two cubes";
      EXPECT_EQ(s->bytes, 130u * 4) << "Level 1 carries one segment";
      // Even owners reduce on the row-first tree, odd ones on the column-first one (the
      // groups start at cubes 0 and 8 of the 4x4 mesh: group index = cube % 8).
      const std::uint32_t from = s->pe.cube.value % 8;
      const gqa::TreeNode node = s->pe.pe.value % 2 == 0 ? gqa::center_node(from, 4, 2) : gqa::center_node_yx(from, 4, 2);
      EXPECT_EQ(node.parent, s->peer->cube.value % 8) << s->pe.str();
    } else {
      EXPECT_EQ(s->peer->cube, s->pe.cube) << "Level 2 send left the cube";
      level2[s->pe].push_back(s);
    }
  }
  // Every PE of both groups: 3 messages of 4, 2 and 1 state rows, to p^4, p^2, p^1.
  ASSERT_EQ(level2.size(), 2u * 8 * 8);
  for (const auto& [pe, sends] : level2) {
    ASSERT_EQ(sends.size(), 3u) << pe.str();
    for (std::uint32_t i = 0, half = 4; i < 3; ++i, half /= 2) {
      EXPECT_EQ(sends[i]->bytes, half * 130u * 4) << pe.str();
      EXPECT_EQ(sends[i]->peer->pe.value, pe.pe.value ^ half) << pe.str();
    }
  }
  // Per group: the 8 owners of each of the 7 cubes that are not the root send once.
  EXPECT_EQ(level1, 2u * 7 * 8);
}

// The Level-1 segment: the fewest state rows whose time on a PE's fabric port covers
// their merge and the CPU's issue of a send and a merge (DecodeParams::segment_rows).
TEST(DecodeLevers, SegmentRowsComeFromTheTopology) {
  DecodeConfig cfg = small(8, 1, 8, 8, DType::bf16);  // d 128: a state row is 130 fp32 = 520 B
  const Topology topo = test::topology("llama70b_4sip");
  // Pipelined (merge_into): the issue of a send, a receive, four views and six MATH ops is
  // 4 + 4 + 4 * 1 + 6 * 2 = 24. 32 B/cycle: 1 row takes 16.25 cycles < 24; 2 rows take
  // 32.5 >= max(merge(2) = (1 + 2 * 4 + 1) + 3 passes * (1 + 1) + (2 - 1) = 17, 24).
  EXPECT_EQ(gqa::merge_cycles(2, 128, topo, gqa::Variant::Pipelined), 17.0);
  EXPECT_EQ(gqa::segment_rows(cfg, topo), 2u);
  // 64 B/cycle: 2 rows take 16.25 < 24; 3 rows take 24.4 >= max(10 + 4 passes * 2 + 1, 24).
  EXPECT_EQ(gqa::segment_rows(cfg, test::topology("llama70b_4sip", {"cube.fabric.bandwidth=64B/cycle"})), 3u);
  // Fused (merge_state, one sequence): issue 4 + 4 + 8 + 3 * 1 = 19, merge(2) = 10 + 3
  // passes * (1 + 1 + 1) = 19.
  cfg.variant = gqa::Variant::Fused;
  EXPECT_EQ(gqa::merge_cycles(2, 128, topo, gqa::Variant::Fused), 19.0);
  EXPECT_EQ(gqa::segment_rows(cfg, topo), 2u);
}

// With P = 1, PE 0 of each cube owns all 8 state rows: they go down the Level-1 tree in
// four segments of two, and a cube passes a segment on once its children's copies are
// merged, so each level's first merge starts before the level below has sent its last.
TEST(DecodeLevers, LevelOneSegmentsOverlapAcrossTreeLevels) {
  Machine m = one_sip(false);
  DecodeConfig cfg = small(8, 1, 8, 1, DType::bf16);
  cfg.s = 4096;
  timing_run(m, cfg);
  // Group 0: cubes 0..7 (4x2), PE 0 on the row-first tree. A cube's level is its height in
  // the tree: the leaves send at level 1.
  std::map<std::uint32_t, std::uint32_t> height;
  std::function<std::uint32_t(std::uint32_t)> h = [&](std::uint32_t i) {
    std::uint32_t up = 0;
    for (const std::uint32_t c : gqa::center_node(i, 4, 2).children) up = std::max(up, h(c));
    return height[i] = up + 1;
  };
  h(1);  // the root, group (1, 0)
  ASSERT_EQ(height.at(5), 3u);
  std::map<std::uint32_t, std::uint64_t> last_send_end, first_merge;  // per level
  std::map<std::uint32_t, std::uint32_t> sends;                        // per sending cube
  const auto& recs = m.rt.op_log().records();
  auto in_group = [](const PeCoord& pe) { return pe.sip.value == 0 && pe.cube.value < 8 && pe.pe.value == 0; };
  for (std::size_t i = 0; i < recs.size(); ++i) {
    const OpRecord& r = recs[i];
    if (r.tag != gqa::kTagLevel1 || !in_group(r.pe)) continue;
    const std::uint32_t k = height.at(r.kind == "send" ? r.pe.cube.value : r.peer->cube.value);
    if (r.kind == "send") {
      ++sends[r.pe.cube.value];
      EXPECT_EQ(r.bytes, 2u * 130 * 4);
      last_send_end[k] = std::max(last_send_end[k], r.end);
      continue;
    }
    // The receive's merge starts with the next maximum its PE issued (gqa::merge_into).
    const auto merge = std::find_if(recs.begin() + static_cast<std::ptrdiff_t>(i), recs.end(),
                                    [&](const OpRecord& o) { return o.pe == r.pe && o.kind == "maximum"; });
    ASSERT_NE(merge, recs.end());
    first_merge[k] = first_merge.count(k) ? std::min(first_merge[k], merge->start) : merge->start;
  }
  EXPECT_EQ(sends.size(), 7u);
  for (const auto& [cube, n] : sends) EXPECT_EQ(n, 4u) << "cube " << cube << ": 8 rows in segments of 2";
  for (std::uint32_t k = 1; k < 3; ++k)
    EXPECT_LT(first_merge.at(k + 1), last_send_end.at(k)) << "level " << k + 1 << " waits for all of level " << k;
}

// Ranks finish at different times (S = 1000 over 64 ranks: 16 rows each, rank 62 eight,
// rank 63 none): each starts its reduce when its own sweep is done, not at a barrier.
TEST(DecodeLevers, AnEmptyShardStartsItsReduceAtOnce) {
  Machine m = one_sip(false);
  timing_run(m, small(8, 1, 8, 8, DType::bf16));
  const PeCoord empty{SipId(0), CubeId(7), PeId(7)};  // group 0, rank 7 * 8 + 7 = 63
  std::uint64_t first_send = ~0ull, last_pv = 0;
  for (const OpRecord& r : m.rt.op_log().records()) {
    if (r.pe.sip.value != 0 || r.pe.cube.value >= 8) continue;
    if (r.pe == empty && r.kind == "send") first_send = std::min(first_send, r.start);
    if (r.kind == "composite") last_pv = std::max(last_pv, r.end);
  }
  EXPECT_LT(first_send, last_pv / 2) << "the empty rank's first Level-2 message waits for the others' sweeps";
}

TEST(DecodeLevers, ManyRowsSweepInTwoBlocksTheFirstReducingUnderTheSecond) {
  // 71 query rows (Falcon-7B's G) are 5 passes of the 16-row GEMM array, GEMM-bound: the
  // rows go as two blocks, 64 (4 passes) then 7, over K and V loaded into TCM once; the
  // second block's GEMMs follow the first's with no gap, and the first block's reduce
  // leaves while they run.
  Machine m = one_sip(false);
  DecodeConfig cfg = small(71, 1, 8, 8, DType::bf16);
  cfg.h_kv = 1;
  cfg.h_q = 71;
  cfg.s = 8192;
  cfg.d = 64;
  timing_run(m, cfg);
  const OpLog& log = m.rt.op_log();
  const PeCoord pe{SipId(0), CubeId(0), PeId(0)};
  auto rows_of = [](const OpRecord* r) { return r->shape.substr(0, r->shape.find('x')); };
  std::vector<const OpRecord*> gemms;
  for (const OpRecord* r : log.select("gemm", "composite"))
    if (r->pe == pe) gemms.push_back(r);
  const auto second = std::find_if(gemms.begin(), gemms.end(), [&](const OpRecord* r) { return rows_of(r) == "7"; });
  ASSERT_NE(second, gemms.end());
  ASSERT_NE(second, gemms.begin());
  EXPECT_TRUE(std::all_of(gemms.begin(), second, [&](const OpRecord* r) { return rows_of(r) == "64"; }));
  EXPECT_TRUE(std::all_of(second, gemms.end(), [&](const OpRecord* r) { return rows_of(r) == "7"; }));
  EXPECT_EQ(std::distance(gemms.begin(), second), std::distance(second, gemms.end())) << "each block: the same tiles";
  EXPECT_EQ((*second)->start, (*std::prev(second))->end) << "the GEMM engine goes straight on to the second block";
  std::uint64_t k_bytes = 0, v_bytes = 0;  // the rank's 128 KV rows, loaded once
  for (const OpRecord* r : log.select("dma", "load")) {
    if (r->pe != pe) continue;
    if (r->tensor.rfind("k.", 0) == 0) k_bytes += r->bytes;
    if (r->tensor.rfind("v.", 0) == 0) v_bytes += r->bytes;
  }
  EXPECT_EQ(k_bytes, 128u * 64 * 2);
  EXPECT_EQ(v_bytes, 128u * 64 * 2);
  const OpRecord* first_send = nullptr;
  for (const OpRecord* s : log.select("ipcq", "send"))
    if (s->pe == pe && s->tag == gqa::kTagLevel2) {
      first_send = s;
      break;
    }
  ASSERT_NE(first_send, nullptr);
  EXPECT_EQ(first_send->bytes, 32u * (64 + 2) * 4) << "round 1 gives half of the first block's 64 rows";
  EXPECT_GE(first_send->start, (*std::prev(second))->end);
  EXPECT_LT(first_send->start, gemms.back()->end) << "the first block's reduce runs under the second's GEMMs";
  // Its first merge too: the program comes back to it between the second block's tiles
  // (gqa::RootReduce::advance), when its message is in.
  const OpRecord* first_merge = nullptr;
  for (const OpRecord* r : log.select("math", "maximum"))
    if (r->pe == pe && r->shape == "[32, 1]") {
      first_merge = r;
      break;
    }
  ASSERT_NE(first_merge, nullptr);
  EXPECT_LT(first_merge->start, gemms.back()->end) << "the first block's first merge waits for the second's sweep";
}

TEST(DecodeLevers, EachOwnerOfTheRootCubeStoresItsRowsOfO) {
  Machine m = one_sip(false);
  DecodeConfig cfg = small(8, 1, 8, 8, DType::bf16);
  timing_run(m, cfg);
  const auto stores = m.rt.op_log().select("dma", "store");
  ASSERT_EQ(stores.size(), 2u * 8);  // per KV head, each PE of the root cube its one row
  std::map<std::uint32_t, std::set<std::uint32_t>> pes_of_root;
  for (const OpRecord* st : stores) {
    // 4x2 groups from cubes 0 and 8: roots at group (1, 0) -> cubes 1 and 9.
    EXPECT_EQ(st->pe.cube.value % 8, 1u);
    EXPECT_EQ(st->bytes, 128u * 2);
    pes_of_root[st->pe.cube.value].insert(st->pe.pe.value);
  }
  for (const auto& [cube, pes] : pes_of_root) EXPECT_EQ(pes.size(), 8u) << "cube " << cube;
}

TEST(DecodeLevers, QsLoadDoesNotHoldBackTheFirstKStream) {
  Machine m = one_sip(false);
  DecodeConfig cfg = small(8, 1, 8, 8, DType::bf16);
  cfg.s = 8192;
  timing_run(m, cfg);
  const PeCoord pe{SipId(0), CubeId(0), PeId(0)};
  const OpRecord* load = nullptr;
  const OpRecord* first = nullptr;
  for (const OpRecord& r : m.rt.op_log().records()) {
    if (r.pe != pe) continue;
    if (!load && r.kind == "load") load = &r;
    if (!first && r.kind == "composite") first = &r;
  }
  ASSERT_TRUE(load && first);
  EXPECT_LT(first->issue, load->end);  // K streams while Q loads
  EXPECT_GE(first->end, load->end);
}

// 71 query rows on one KV head (Falcon-7B's G) make a KV row's two GEMMs slower than its
// K and V bytes: the sweep loads each V tile into TCM as its Q.K^T goes out. With G 8 and
// long tiles (S = 128K: 512 rows) the sweep is HBM-bound and a whole-tile P.V at the end
// would cost more than the HBM latency: V streams through the P.V composites.
TEST(DecodeLevers, GemmBoundSweepsLoadVAheadLongHbmBoundOnesStreamIt) {
  Machine m = one_sip(false);
  const std::uint32_t gs[2] = {71, 8};
  for (const std::uint32_t g : gs) {
    DecodeConfig cfg = small(g, 1, 8, 8, DType::bf16);
    cfg.h_kv = 1;
    cfg.h_q = g;
    cfg.d = 64;
    cfg.s = g == 71 ? 16384 : 131072;
    EXPECT_EQ(gqa::gemm_bound(cfg, g, m.topo), g == 71);
    EXPECT_EQ(gqa::decode_tiling(cfg, m.topo).tile_rows, g == 71 ? 128u : 512u);
    const std::size_t first = m.rt.op_log().size();
    timing_run(m, cfg);
    std::uint64_t v_loaded = 0, v_streamed = 0;
    for (std::size_t k = first; k < m.rt.op_log().size(); ++k) {
      const OpRecord& op = m.rt.op_log().records()[k];
      if (op.tensor.rfind("v.", 0) != 0) continue;
      (op.kind == "load" ? v_loaded : v_streamed) += op.bytes;
    }
    const std::uint64_t v_bytes = cfg.s * 64 * 2;
    EXPECT_EQ(v_loaded, g == 71 ? v_bytes : 0) << "G " << g;
    EXPECT_EQ(v_streamed, g == 71 ? 0 : v_bytes) << "G " << g;
  }
}

TEST(DecodeLevers, PipelinedIssuesTheNextQkBeforeTheSoftmaxAndIsFaster) {
  Machine m = one_sip(false);
  std::uint64_t cycles[2];
  const gqa::Variant variants[2] = {gqa::Variant::Naive, gqa::Variant::Pipelined};
  for (int i = 0; i < 2; ++i) {
    DecodeConfig cfg = small(8, 1, 8, 8, DType::bf16);
    cfg.s = 65536;
    cfg.variant = variants[i];
    const std::size_t first = m.rt.op_log().size();
    cycles[i] = timing_run(m, cfg).cycles;
    if (variants[i] != gqa::Variant::Pipelined) continue;
    // On one PE: the Q.K^T of tile j+1 is issued before the P.V of tile j.
    std::vector<const OpRecord*> qk, pv;
    for (std::size_t k = first; k < m.rt.op_log().size(); ++k) {
      const OpRecord* op = &m.rt.op_log().records()[k];
      if (op->kind == "composite" && op->pe == PeCoord{SipId(0), CubeId(0), PeId(0)})
        (op->tensor.rfind("k.", 0) == 0 ? qk : pv).push_back(op);
    }
    ASSERT_GE(qk.size(), 2u);
    for (std::size_t j = 0; j + 1 < qk.size(); ++j) EXPECT_LT(qk[j + 1]->issue, pv[j]->issue) << "tile " << j;
  }
  EXPECT_LT(cycles[1], cycles[0]);
}

TEST(DecodeLevers, FusedIssuesFarFewerOps) {
  Machine m = one_sip(false);
  std::uint64_t ops[2];
  const gqa::Variant variants[2] = {gqa::Variant::Pipelined, gqa::Variant::Fused};
  for (int i = 0; i < 2; ++i) {
    DecodeConfig cfg = small(8, 1, 8, 8, DType::bf16);
    cfg.s = 65536;
    cfg.tile_rows = 32;  // 16 tiles per rank: the per-tile ops dominate
    cfg.variant = variants[i];
    ops[i] = timing_run(m, cfg).issued_ops;
  }
  // Pipelined issues ~15 ops per tile, fused a flash_tile and two refs; the reduce is the same.
  EXPECT_LT(2 * ops[1], ops[0]);
}

TEST(DecodeLevers, PeakTcmDoesNotGrowWithS) {
  Machine m = one_sip(false);
  std::uint64_t peak[2];
  const std::uint64_t lengths[2] = {4096, 65536};  // 4 and 64 tiles per rank: both slots in use
  for (int i = 0; i < 2; ++i) {
    DecodeConfig cfg = small(8, 1, 8, 8, DType::bf16);
    cfg.s = lengths[i];
    cfg.tile_rows = 16;
    timing_run(m, cfg);
    peak[i] = m.rt.context(PeCoord{SipId(0), CubeId(1), PeId(0)}).tcm_use().peak_total;
  }
  EXPECT_EQ(peak[0], peak[1]);
  EXPECT_GT(peak[0], 0u);
}

TEST(DecodeLevers, FourSipTimingRunAt128KCompletes) {
  Machine m("llama70b_4sip", false);
  DecodeConfig cfg;
  cfg.s = 131072;
  const gqa::DecodeResult r = timing_run(m, cfg);
  EXPECT_GT(r.cycles, static_cast<std::uint64_t>(r.roofline_cycles));  // nothing beats the roofline
  EXPECT_EQ(r.kv_bytes, 2ull * 131072 * 8 * 128 * 2);
  EXPECT_EQ(m.rt.op_log().select("dma", "store").size(), 8u * 8);  // 8 owners per head
}

// The library names configuration fields, never the program's flags.
TEST(DecodeErrors, BadConfigurationsAreRefused) {
  const Topology topo = test::topology("llama70b_4sip");
  auto msg = [&](DecodeConfig c) {
    try {
      gqa::validate(c, topo);
    } catch (const workloads::ConfigError& e) {
      EXPECT_EQ(std::string(e.what()).find("--"), std::string::npos) << e.what();
      return std::string(e.what());
    }
    return std::string("accepted");
  };
  DecodeConfig c;
  c.h_kv = 7;
  EXPECT_EQ(msg(c), "heads_q 64 is not a multiple of heads_kv 7; GQA needs H_q = G * H_kv");
  c = {};
  c.s = 0;
  EXPECT_EQ(msg(c), "seq_len 0: the context needs at least one position");
  c = {};
  c.cubes = 3;
  EXPECT_EQ(msg(c), "cubes_per_group 3 is a 3x1 group, which does not tile the 4x4 cube mesh");
  c = {};
  c.pes = 9;
  EXPECT_EQ(msg(c), "pes 9 is not allowed; a cube of this topology has 8 PEs");
  c = {};
  c.devices = {SipId(0)};
  EXPECT_EQ(msg(c), "8 KV heads in groups of 8 cubes need 4 SIP(s); the run has 1");
  c = {};
  c.t_q = 40000;
  EXPECT_EQ(msg(c), "q_len 40000 is not allowed; allowed: 1 to the context length 32768");
}

}  // namespace
}  // namespace kb
