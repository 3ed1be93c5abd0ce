// GQA prefill (ring attention): numeric parity with the fp64 reference and the levers
// read from the op log.
#include <gtest/gtest.h>

#include <map>
#include <set>

#include "kernels/gqa/helpers.h"
#include "workloads/gqa_prefill/prefill_run.h"
#include "tests/kernels/gqa_support.h"
#include "tests/kernels/tl_support.h"

namespace kb {
namespace {

using gqa::PrefillConfig;
using gqa::RowLayout;
using test::Machine;

Machine one_sip(bool data) { return Machine("llama70b_4sip", data, {"system.sips=1"}); }

// Tiles of 32 rows exercise several tiles and chunks per PE at small S (parity); the
// lever tests use the default 128.
PrefillConfig small(std::uint64_t s, std::uint32_t t_q, RowLayout layout, bool causal, DType dt,
                    std::uint32_t tile = 32, gqa::Ring ring = gqa::Ring::KV) {
  PrefillConfig c;
  c.ring = ring;
  c.h_kv = 2;
  c.h_q = 16;  // G = 8: a group of 8 cubes, two groups in one SIP
  c.s = s;
  c.t_q = t_q;
  c.layout = layout;
  c.causal = causal;
  c.dtype = dt;
  c.chunk_rows = tile;
  c.q_tile = tile;
  return c;
}

using gqa::Ring;
using ParityParam = std::tuple<std::uint64_t, std::uint32_t, RowLayout, bool, DType, Ring>;
class PrefillParity : public ::testing::TestWithParam<ParityParam> {};

TEST_P(PrefillParity, MatchesFp64Reference) {
  const auto [s, t_q, layout, causal, dt, ring] = GetParam();
  Machine m = one_sip(true);
  const PrefillConfig cfg = small(s, t_q, layout, causal, dt, 32, ring);
  const auto in = gqa::AttentionInputs::random(cfg.shape(), 3);
  const gqa::PrefillResult r = gqa::run_prefill(m.rt, cfg, &in);
  ASSERT_TRUE(r.o.has_value());
  test::expect_attention_parity(cfg.shape(), in, *r.o);
}

INSTANTIATE_TEST_SUITE_P(
    Shapes, PrefillParity,
    ::testing::Values(ParityParam{512, 0, RowLayout::Zigzag, true, DType::bf16, Ring::KV},
                      ParityParam{512, 0, RowLayout::Contiguous, true, DType::fp32, Ring::KV},
                      ParityParam{500, 0, RowLayout::Zigzag, true, DType::fp32, Ring::KV},        // ragged S
                      ParityParam{500, 0, RowLayout::Contiguous, false, DType::bf16, Ring::KV},   // not causal
                      ParityParam{600, 72, RowLayout::Zigzag, true, DType::bf16, Ring::KV},       // chunked, prefix 528
                      ParityParam{600, 72, RowLayout::Striped, true, DType::bf16, Ring::KV},
                      ParityParam{300, 5, RowLayout::Contiguous, true, DType::fp32, Ring::KV},    // T_q < P: KV split
                      ParityParam{300, 3, RowLayout::Zigzag, false, DType::bf16, Ring::KV},
                      // pass-Q: query tiles and their state travel, K and V stay
                      ParityParam{512, 0, RowLayout::Striped, true, DType::bf16, Ring::Q},
                      ParityParam{500, 0, RowLayout::Zigzag, true, DType::fp32, Ring::Q},         // ragged S
                      ParityParam{500, 0, RowLayout::Contiguous, false, DType::bf16, Ring::Q},    // not causal
                      ParityParam{600, 72, RowLayout::Striped, true, DType::bf16, Ring::Q},       // chunked, prefix 528
                      ParityParam{600, 37, RowLayout::Zigzag, true, DType::fp32, Ring::Q},        // T_q odd
                      ParityParam{300, 5, RowLayout::Contiguous, true, DType::bf16, Ring::Q},     // T_q < P
                      ParityParam{300, 3, RowLayout::Striped, false, DType::fp32, Ring::Q}));

// Pass-Q with a shard longer than the four chunk buffers: K and V stream from HBM again
// for every visit. Groups of 2 cubes x 2 PEs, 150 keys per PE in chunks of 32.
TEST(PrefillParityRingQ, StreamsAShardLongerThanItsBuffers) {
  Machine m = one_sip(true);
  PrefillConfig cfg = small(600, 37, RowLayout::Striped, true, DType::bf16, 32, Ring::Q);
  cfg.cubes = 2;
  cfg.pes = 2;
  const auto in = gqa::AttentionInputs::random(cfg.shape(), 5);
  const gqa::PrefillResult r = gqa::run_prefill(m.rt, cfg, &in);
  ASSERT_TRUE(r.o.has_value());
  test::expect_attention_parity(cfg.shape(), in, *r.o);
  // Each PE's 150 keys are read once per tile visit, not once.
  std::uint64_t k_bytes = 0;
  for (const OpRecord* l : m.rt.op_log().select("dma", "load"))
    if (l->tensor.rfind("k.h0", 0) == 0) k_bytes += l->bytes;
  EXPECT_GT(k_bytes, 2 * 600ull * 128 * 2 * 4);  // more than once per replica
}

// ---- levers ---------------------------------------------------------------------------

gqa::PrefillResult timing_run(Machine& m, const PrefillConfig& cfg) { return gqa::run_prefill(m.rt, cfg, nullptr); }

TEST(PrefillLevers, EachBlockCrossesEachRingLinkOncePerStep) {
  Machine m = one_sip(false);
  const PrefillConfig cfg = small(2048, 0, RowLayout::Striped, true, DType::bf16, 128);
  const gqa::PrefillResult r = timing_run(m, cfg);
  // Per group: C cubes each pass C - 1 blocks of 2048 / 8 = 256 rows to the next, a
  // block's K and V (2 x 256 x 128 bf16) over the link once: each of its 2 chunks of 128
  // rows as P slices of 16 rows, one per lane, K and V two messages each.
  const std::uint64_t c = 8, p = 8, groups = 2, block_bytes = 2ull * 256 * 128 * 2;
  EXPECT_EQ(r.ring_link_bytes, groups * c * (c - 1) * block_bytes);
  // All the ring's messages: those slices, and every slice shared with P - 1 cube mates.
  EXPECT_EQ(r.ring_bytes, groups * c * (c - 1) * block_bytes + groups * c * c * block_bytes * (p - 1));
  std::map<std::pair<std::uint32_t, std::uint32_t>, std::uint64_t> link_bytes;  // (cube, next cube)
  std::map<PeCoord, std::uint64_t> shared_in;
  for (const OpRecord* s : m.rt.op_log().select("ipcq", "send")) {
    if (s->tag == gqa::kTagRingK || s->tag == gqa::kTagRingV) {
      EXPECT_EQ(s->hops, 1u) << "a ring hop of more than one mesh hop";
      EXPECT_EQ(s->peer->pe, s->pe.pe) << "lanes stay lanes";
      link_bytes[{s->pe.cube.value, s->peer->cube.value}] += s->bytes;
      continue;
    }
    EXPECT_TRUE(s->tag == gqa::kTagShareK || s->tag == gqa::kTagShareV) << "a message of neither: tag " << s->tag;
    EXPECT_EQ(s->peer->cube, s->pe.cube) << "slices are shared inside the cube";
    shared_in[*s->peer] += s->bytes;
  }
  ASSERT_EQ(link_bytes.size(), groups * c);
  for (const auto& [link, bytes] : link_bytes) EXPECT_EQ(bytes, (c - 1) * block_bytes) << link.first << "->" << link.second;
  // Every PE gets the other P - 1 slices of every chunk of every block from its cube.
  ASSERT_EQ(shared_in.size(), groups * c * p);
  for (const auto& [pe, bytes] : shared_in) EXPECT_EQ(bytes, c * block_bytes * (p - 1) / p) << pe.str();
}

// Pass-Q moves the T_q query rows and their state around the ring, never K or V: every
// tile crosses N - 1 = 63 ring hops (PE to PE of a cube, then on to the next cube), as a
// Q message (bf16) and a state message ([rows, d + 2] fp32), and K and V are read from HBM
// once, by the PE that holds them.
TEST(PrefillLevers, PassQMovesTheQueryRowsNotTheKeys) {
  Machine m = one_sip(false);
  const PrefillConfig cfg = small(8192, 128, RowLayout::Striped, true, DType::bf16, 64, Ring::Q);
  const gqa::PrefillResult r = timing_run(m, cfg);
  const std::uint64_t n = 64, groups = 2, rows = 128 * 8, d = 128;
  const std::uint64_t tile_bytes = 16 * (d * 2 + (d + 2) * 4);  // 16 rows a rank, one tile
  EXPECT_EQ(r.ring_bytes, groups * (n - 1) * rows / 16 * tile_bytes);
  // A tile crosses the 8 links between cubes once each, but the last (to its home): the
  // tiles homed at a cube's PE 0 cross 7.
  EXPECT_EQ(r.ring_link_bytes, groups * (8 * 7 + 56 * 8) * tile_bytes);
  std::map<PeCoord, PeCoord> next;
  for (const OpRecord* s : m.rt.op_log().select("ipcq", "send")) {
    EXPECT_TRUE(s->tag == gqa::kTagRingQ || s->tag == gqa::kTagRingState) << "tag " << s->tag;
    EXPECT_LE(s->hops, 1u) << "a ring hop of more than one mesh hop";
    const auto [it, fresh] = next.emplace(s->pe, *s->peer);
    EXPECT_EQ(it->second, *s->peer) << s->pe.str() << " sends to one next PE";
  }
  EXPECT_EQ(next.size(), groups * n);
  std::uint64_t kv_bytes = 0;
  for (const OpRecord* l : m.rt.op_log().select("dma", "load"))
    if (l->tensor.rfind("k.", 0) == 0 || l->tensor.rfind("v.", 0) == 0) kv_bytes += l->bytes;
  EXPECT_EQ(kv_bytes, groups * 2 * 8192 * d * 2);
}

// The causal skip holds for pass-Q too: over a whole prompt the pairs are about half
// of those without the mask.
TEST(PrefillLevers, PassQCausalSkipHalvesTheWork) {
  Machine m = one_sip(false);
  std::size_t tiles[2];
  for (int causal = 0; causal < 2; ++causal) {
    const std::size_t first = m.rt.op_log().size();
    timing_run(m, small(2048, 0, RowLayout::Striped, causal == 1, DType::bf16, 64, Ring::Q));
    tiles[causal] = 0;
    for (std::size_t i = first; i < m.rt.op_log().size(); ++i) tiles[causal] += m.rt.op_log().records()[i].kind == "composite";
    tiles[causal] /= 2;  // a pair's Q.K^T and P.V
  }
  // 2048 positions x 8 heads in tiles of 64 rows, each against 64 shards of 32 keys: a
  // shard is visible to a tile unless it starts after the tile's last position.
  EXPECT_EQ(tiles[0], 2u * 256 * 64);
  const double ratio = static_cast<double>(tiles[1]) / static_cast<double>(tiles[0]);
  EXPECT_GT(ratio, 0.49);
  EXPECT_LT(ratio, 0.53);
}

// auto: the model's faster ring. Chunked prefill of 512 tokens after a 32K prefix moves
// 4,096 query rows instead of 32K keys: pass-Q. A whole 16K prompt: pass-KV.
TEST(PrefillRing, AutoPicksPassQForAShortChunkOverALongPrefix) {
  Machine m = one_sip(false);
  PrefillConfig chunked = small(32768, 512, RowLayout::Striped, true, DType::bf16, 64);
  chunked.ring.reset();
  chunked.chunk_rows = 0;
  PrefillConfig whole = small(16384, 0, RowLayout::Striped, true, DType::bf16, 64);
  whole.ring.reset();
  whole.chunk_rows = 0;
  const gqa::PrefillSetup a = gqa::validate(chunked, m.rt.system().topology());
  const gqa::PrefillSetup b = gqa::validate(whole, m.rt.system().topology());
  EXPECT_EQ(a.plan_shape.ring, Ring::Q) << a.ring_reason;
  EXPECT_EQ(b.plan_shape.ring, Ring::KV) << b.ring_reason;
  EXPECT_NE(a.ring_reason.find("auto"), std::string::npos);
}

// The model's GEMM term is the busiest PE's pairs, cycle for cycle, on either ring.
TEST(PrefillModel, GemmTermIsTheBusiestPesGemmCycles) {
  Machine m = one_sip(false);
  for (const Ring ring : {Ring::KV, Ring::Q}) {
    const gqa::PrefillResult r = timing_run(m, small(4096, 256, RowLayout::Striped, true, DType::bf16, 64, ring));
    EXPECT_EQ(r.model.gemm, r.busy_max) << gqa::ring_name(ring);
    EXPECT_GT(r.model.cycles, r.model.gemm);
  }
}

TEST(PrefillLevers, WithZigzagEveryLaneCarriesEveryChunk) {
  // Zigzag gives a cube's PEs different work per KV block, so they do not share slices:
  // each lane carries every chunk whole, P times the striped ring's bytes, one hop.
  Machine m = one_sip(false);
  const gqa::PrefillResult r = timing_run(m, small(2048, 0, RowLayout::Zigzag, true, DType::bf16, 128));
  const std::uint64_t c = 8, p = 8, groups = 2, block_bytes = 2ull * 256 * 128 * 2;
  EXPECT_EQ(r.ring_bytes, groups * c * (c - 1) * block_bytes * p);
  EXPECT_EQ(r.ring_link_bytes, r.ring_bytes);
  for (const OpRecord* s : m.rt.op_log().select("ipcq", "send")) {
    EXPECT_TRUE(s->tag == gqa::kTagRingK || s->tag == gqa::kTagRingV) << "a non-ring message: tag " << s->tag;
    EXPECT_EQ(s->hops, 1u);
    EXPECT_EQ(s->peer->pe, s->pe.pe) << "lanes stay lanes";
  }
}

// The timeline's named spans: every PE of a ring walks the steps in order, then stores O.
TEST(PrefillLevers, PhasesAreTheRingStepsThenTheStore) {
  Machine m = one_sip(false);
  timing_run(m, small(2048, 0, RowLayout::Contiguous, false, DType::bf16, 128));
  std::map<PeCoord, std::vector<std::string>> phases;
  std::map<PeCoord, std::uint64_t> last_end;
  for (const OpRecord* r : m.rt.op_log().select("phase")) {
    EXPECT_GE(r->start, last_end[r->pe]) << "phases of one PE overlap";
    EXPECT_GE(r->end, r->start);
    last_end[r->pe] = r->end;
    phases[r->pe].push_back(r->kind.str());
  }
  const std::vector<std::string> expected = {"ring step 0", "ring step 1", "ring step 2", "ring step 3", "ring step 4",
                                             "ring step 5", "ring step 6", "ring step 7", "store O"};
  ASSERT_EQ(phases.size(), 128u);  // every PE of the SIP's two groups
  for (const auto& [pe, names] : phases) EXPECT_EQ(names, expected) << pe.str();
}

// The plan of the one-SIP runs below. Group 0 (KV head 0) is the 4x2 rectangle of cubes
// 0-3 over 4-7, so a cube's index in it is its id.
gqa::PrefillPlan plan_of(const PrefillConfig& c) {
  gqa::PrefillShape ps;
  ps.g = c.g();
  ps.d = c.d;
  ps.t_q = c.q_len();
  ps.s = c.s;
  ps.cubes = 8;
  ps.pes = 8;
  ps.layout = c.layout;
  ps.q_tile = c.q_tile;
  ps.chunk_rows = c.chunk_rows;
  return gqa::PrefillPlan::of(ps);
}

// Every PE normalises and stores each of its tiles once, all G heads of a tile in one store.
TEST(PrefillLevers, EachPeStoresItsTilesOnce) {
  Machine m = one_sip(false);
  const PrefillConfig cfg = small(1024, 0, RowLayout::Striped, true, DType::bf16, 32);
  timing_run(m, cfg);
  const gqa::PrefillPlan plan = plan_of(cfg);
  ASSERT_FALSE(plan.kv_split);
  EXPECT_EQ(plan.tile_heads, 8u);  // G = 8 heads folded into each tile
  std::map<PeCoord, std::size_t> stores;
  for (const OpRecord* s : m.rt.op_log().select("dma", "store"))
    if (s->tensor == "o.h0") ++stores[s->pe];
  ASSERT_EQ(stores.size(), 64u);  // every PE of the group
  for (std::uint32_t cube = 0; cube < 8; ++cube)
    for (std::uint32_t pe = 0; pe < 8; ++pe) {
      const PeCoord at{SipId(0), CubeId(cube), PeId(pe)};
      EXPECT_EQ(stores[at], plan.ranks[plan.rank_of(0, cube, pe)].size()) << at.str();
    }
}

// Pairs (tile, KV chunk) of one PE that are not wholly in the future, counted from the
// plan's geometry alone.
std::size_t expected_pairs(const PrefillConfig& c, std::uint32_t cube, std::uint32_t pe, bool causal) {
  const gqa::PrefillPlan plan = plan_of(c);
  std::size_t n = 0;
  for (const gqa::PrefillTile& t : plan.ranks[plan.rank_of(0, cube, pe)]) {
    const std::uint64_t last = c.s - c.q_len() + t.pos0 + t.positions - 1;
    // Chunks of chunk_rows cut each cube's block of S / 8 rows.
    for (std::uint64_t k0 = 0; k0 < c.s; k0 += std::min<std::uint64_t>(c.chunk_rows, c.s / 8))
      if (!causal || k0 <= last) ++n;
  }
  return n;
}

// Pipelined (the default): pair i + 1's Q.K^T is issued before pair i's softmax, so the
// GEMM engine has its next GEMM while the vector unit works. Read from one PE's op log:
// before the softmax (the scale of S) of its k-th pair it has issued 2k + 2 composites
// (Q.K^T of pairs 0..k+1, P.V of pairs 0..k-1), but before its last pair's 2k + 1.
TEST(PrefillLevers, PipelinedIssuesTheNextQkBeforeTheSoftmax) {
  Machine m = one_sip(false);
  timing_run(m, small(1024, 0, RowLayout::Striped, false, DType::bf16, 64));
  const PeCoord pe{SipId(0), CubeId(2), PeId(3)};
  std::vector<std::size_t> composites_before;  // per scale, in issue order
  std::size_t composites = 0;
  for (const OpRecord& r : m.rt.op_log().records()) {
    if (r.pe != pe) continue;
    if (r.kind == "composite") ++composites;
    if (r.kind == "scale") composites_before.push_back(composites);
  }
  ASSERT_GT(composites_before.size(), 4u);
  EXPECT_EQ(composites, 2 * composites_before.size());
  for (std::size_t k = 0; k < composites_before.size(); ++k)
    EXPECT_EQ(composites_before[k], 2 * k + (k + 1 < composites_before.size() ? 2 : 1)) << "pair " << k;
  EXPECT_EQ(m.rt.op_log().count("flash_tile"), 0u);
}

TEST(PrefillLevers, CausalSkipDoesTheLowerTriangle) {
  Machine m = one_sip(false);
  std::size_t dots[2];
  for (int causal = 0; causal < 2; ++causal) {
    PrefillConfig cfg = small(2048, 0, RowLayout::Zigzag, causal == 1, DType::bf16, 128);
    const std::size_t first = m.rt.op_log().size();
    timing_run(m, cfg);
    dots[causal] = 0;
    for (std::size_t i = first; i < m.rt.op_log().size(); ++i) {
      const OpRecord& r = m.rt.op_log().records()[i];
      if (r.kind == "composite" && r.pe == PeCoord{SipId(0), CubeId(2), PeId(3)}) ++dots[causal];
    }
    dots[causal] /= 2;  // a pair's Q.K^T and P.V
    EXPECT_EQ(dots[causal], expected_pairs(cfg, 2, 3, causal == 1));
  }
  const double ratio = static_cast<double>(dots[1]) / static_cast<double>(dots[0]);
  EXPECT_GT(ratio, 0.45);
  EXPECT_LT(ratio, 0.60);
}

TEST(PrefillLevers, NextChunkArrivesWhileTheGemmWorks) {
  Machine m = one_sip(false);
  timing_run(m, small(2048, 0, RowLayout::Striped, true, DType::bf16, 128));
  const PeCoord pe{SipId(0), CubeId(5), PeId(2)};
  const auto gemm = m.rt.op_log().busy(pe, "gemm");
  std::size_t overlapped = 0, received = 0;
  for (const OpRecord* r : m.rt.op_log().select("ipcq", "recv")) {
    if (r->pe != pe) continue;
    ++received;
    for (const auto& [b, e] : gemm)
      if (r->end > b && r->end < e) {
        ++overlapped;
        break;
      }
  }
  ASSERT_GT(received, 0u);
  EXPECT_GT(overlapped, received / 2) << "chunks should land while the GEMM engine is busy";
}

TEST(PrefillLevers, PeakTcmDoesNotGrowWithS) {
  // A 2-cube group of 2 PEs (G = 2), chunked prefill of 256 query tokens.
  Machine m("small_1sip_2x2x2", false);
  std::uint64_t peak[2];
  const std::uint64_t lengths[2] = {4096, 65536};
  for (int i = 0; i < 2; ++i) {
    PrefillConfig cfg;
    cfg.h_q = 2;
    cfg.h_kv = 1;
    cfg.pes = 2;
    cfg.s = lengths[i];
    cfg.t_q = 256;
    timing_run(m, cfg);
    peak[i] = m.rt.context(PeCoord{SipId(0), CubeId(1), PeId(1)}).tcm_use().peak_total;
  }
  EXPECT_EQ(peak[0], peak[1]);
}

TEST(PrefillLevers, ZigzagAndStripedBalanceTheCausalWork) {
  Machine m = one_sip(false);
  double imbalance[3];
  const RowLayout layouts[3] = {RowLayout::Contiguous, RowLayout::Zigzag, RowLayout::Striped};
  for (int i = 0; i < 3; ++i) {
    const gqa::PrefillResult r = timing_run(m, small(2048, 0, layouts[i], true, DType::bf16, 128));
    imbalance[i] = r.busy_max / r.busy_mean();
  }
  EXPECT_GT(imbalance[0], 1.5);   // the PE with the last rows does nearly twice the mean
  EXPECT_LT(imbalance[1], 1.05);  // zigzag: close to 1
  EXPECT_LT(imbalance[2], 1.05);  // striped: close to 1
}

// The TCM the plan says a PE needs is what the kernel allocates at its peak.
TEST(PrefillLevers, TcmPlanIsTheKernelsPeak) {
  Machine m = one_sip(false);
  const PrefillConfig cfg = small(2048, 0, RowLayout::Striped, true, DType::bf16, 128);
  const gqa::PrefillSetup setup = gqa::validate(cfg, m.rt.system().topology());
  timing_run(m, cfg);
  const gqa::PrefillPlan plan = gqa::PrefillPlan::geometry(setup.plan_shape);
  EXPECT_EQ(m.rt.context(PeCoord{SipId(0), CubeId(5), PeId(2)}).tcm_use().peak_total, plan.tcm_bytes());
}

}  // namespace
}  // namespace kb
