// tl timing: a chain takes exactly the sum of its modelled parts; independent work
// overlaps; composite hides HBM streaming behind the GEMM; auto-wait, by rows and by
// columns; held sends; recv_async; scratch scopes keep TCM use bounded.
#include <gtest/gtest.h>

#include "tests/kernels/tl_support.h"

namespace kb {
namespace {

using test::Machine;

const PeCoord kPe{SipId(0), CubeId(0), PeId(0)};

std::uint64_t issue(const Topology& t, const char* op) { return t.pe.cpu.issue_cycles.at(op); }

// DMA of one command of `bytes` on an idle channel with enough bursts in flight.
std::uint64_t dma(std::uint64_t bytes) { return 120 + test::ceil_div(bytes, 64); }

TEST(TlTiming, LoadDotStoreChainIsTheSumOfItsParts) {
  Machine m("small_1sip_2x2x2", false);
  const DPPolicy here = DPPolicy::replicate(1, 1, 0);
  const DeviceTensor a = m.rt.empty("a", {32, 64}, DType::fp32, here);  // 8 KiB: 4 bursts
  const DeviceTensor b = m.rt.empty("b", {64, 128}, DType::fp32, here);  // 32 KiB: 16 bursts
  const DeviceTensor c = m.rt.empty("c", {32, 128}, DType::fp32, here);  // 16 KiB
  m.rt.launch(SipId(0), "chain", test::on_pe(kPe, [&](tl::Ctx& tl) {
    const tl::Tensor x = tl.load(a, {0, 32});
    const tl::Tensor y = tl.load(b, {0, 64});
    tl.store(c, {0, 32}, tl.dot(x, y));
  }));
  m.rt.run();
  // a's 4 bursts leave room in the 8-burst window, so b starts issuing at once and the
  // two loads stream as one: latency + (8 KiB + 32 KiB) / bw after a's issue. Then the
  // GEMM and the store: each is built while what it waits for runs, and goes out the
  // cycle that is done.
  const std::uint64_t gemm = 2 * 2 * 64 + 16 + 64;  // ceil(32/16) * ceil(128/64) * 64 + R + C
  const std::uint64_t expected = issue(m.topo, "load") + dma(8192 + 32768) + gemm + dma(16384);
  EXPECT_EQ(m.rt.last_run_cycles(), expected);
  const auto& log = m.rt.op_log();
  ASSERT_EQ(log.select("dma", "load").size(), 2u);
  EXPECT_EQ(log.select("dma", "load")[1]->start, log.select("dma", "load")[1]->issue);
  EXPECT_EQ(log.select("gemm", "dot")[0]->issue, log.select("dma", "load")[1]->end);
}

// The chain's critical path: the first load's issue, then HBM until the second load is
// in, the GEMM, the store's HBM time (the dot's and the store's issue ran under what
// they waited for). It goes through the four ops in turn: each span from entering the op
// to entering the next, the last to the end.
TEST(TlTiming, LoadDotStoreChainsCriticalPathIsItsParts) {
  Machine m("small_1sip_2x2x2", false);
  const DPPolicy here = DPPolicy::replicate(1, 1, 0);
  const DeviceTensor a = m.rt.empty("a", {32, 64}, DType::fp32, here);
  const DeviceTensor b = m.rt.empty("b", {64, 128}, DType::fp32, here);
  const DeviceTensor c = m.rt.empty("c", {32, 128}, DType::fp32, here);
  m.rt.launch(SipId(0), "chain", test::on_pe(kPe, [&](tl::Ctx& tl) {
    const tl::Tensor x = tl.load(a, {0, 32});
    const tl::Tensor y = tl.load(b, {0, 64});
    tl.store(c, {0, 32}, tl.dot(x, y));
  }));
  m.rt.run();
  const CriticalPath path = m.rt.critical_path();
  EXPECT_EQ(path.of("cpu"), issue(m.topo, "load"));
  EXPECT_EQ(path.of("hbm"), dma(8192 + 32768) + dma(16384));
  EXPECT_EQ(path.of("gemm"), 2 * 2 * 64 + 16 + 64);
  EXPECT_EQ(path.cycles.size(), 3u);
  std::vector<std::string> chain;
  std::vector<std::pair<std::uint64_t, std::uint64_t>> spans;
  for (const OpRecord& r : m.rt.op_log().records()) {
    if (r.critical.empty()) continue;
    chain.push_back(r.kind.str() + " " + r.tensor);
    spans.insert(spans.end(), r.critical.begin(), r.critical.end());
  }
  EXPECT_EQ(chain, (std::vector<std::string>{"load a", "load b", "dot b", "store c"}));
  const auto& log = m.rt.op_log();
  const OpRecord& load_b = *log.select("dma", "load")[1];
  const OpRecord& dot = *log.select("gemm", "dot")[0];
  const OpRecord& store = *log.select("dma", "store")[0];
  // a's 4 bursts and b's first 4 fill the window; b's last burst goes when a's last is
  // done, which is where the path enters b.
  const std::uint64_t a_issued = issue(m.topo, "load");
  const std::uint64_t b_entered = a_issued + dma(8192);
  EXPECT_EQ(spans, (std::vector<std::pair<std::uint64_t, std::uint64_t>>{
                       {a_issued, b_entered}, {b_entered, dot.start}, {dot.start, store.start},
                       {store.start, m.rt.last_run_cycles()}}));
  EXPECT_EQ(load_b.end, dot.start);
}

// A ref issues no engine command but costs its CPU issue cycles and logs a record, like
// every op; the cost is the topology's, so changing it moves the time by exactly that.
class RefCost : public testing::TestWithParam<std::uint64_t> {};

TEST_P(RefCost, ChargesItsIssueCostAndIsLogged) {
  const std::uint64_t cost = GetParam();
  Machine m("small_1sip_2x2x2", false, {"pe.cpu.issue_cycles.ref=" + std::to_string(cost)});
  const DeviceTensor a = m.rt.empty("a", {32, 64}, DType::fp32, DPPolicy::replicate(1, 1, 0));
  m.rt.launch(SipId(0), "refs", test::on_pe(kPe, [&](tl::Ctx& tl) {
    tl.ref(a, {0, 16});
    tl.ref(a, {16, 16});
  }));
  m.rt.run();
  EXPECT_EQ(m.rt.last_run_cycles(), 2 * cost);
  const auto refs = m.rt.op_log().select("cpu", "ref");
  ASSERT_EQ(refs.size(), 2u);
  EXPECT_EQ(refs[0]->tensor, "a");
  EXPECT_EQ(refs[1]->issue, cost);
}

INSTANTIATE_TEST_SUITE_P(TlTiming, RefCost, testing::Values(2u, 7u));

TEST(TlTiming, IndependentLoadAndGemmOverlap) {
  Machine m("small_1sip_2x2x2", false);
  const DPPolicy here = DPPolicy::replicate(1, 1, 0);
  const DeviceTensor a = m.rt.empty("a", {64, 64}, DType::bf16, here);
  const DeviceTensor big = m.rt.empty("big", {256, 512}, DType::bf16, here);  // 256 KiB
  m.rt.launch(SipId(0), "overlap", test::on_pe(kPe, [&](tl::Ctx& tl) {
    const tl::Tensor x = tl.load(a, {0, 64});
    tl.wait(x);
    const tl::Tensor z = tl.load(big, {0, 256});  // does not depend on the GEMMs
    for (int i = 0; i < 8; ++i) tl.dot(x, x);
    tl.wait(z);
  }));
  m.rt.run();
  const auto& log = m.rt.op_log();
  const OpRecord& load = *log.select("dma", "load")[1];
  const auto gemms = log.select("gemm", "dot");
  std::uint64_t gemm_time = 0;
  for (const auto* g : gemms) gemm_time += g->end - g->start;
  const std::uint64_t after_first_load = m.rt.last_run_cycles() - log.select("dma", "load")[0]->end;
  EXPECT_LT(after_first_load, (load.end - load.start) + gemm_time);  // less than serial
  EXPECT_LT(gemms.front()->start, load.end);                        // GEMMs ran during the load
  EXPECT_EQ(m.rt.op_log().busy(kPe, "gemm").size(), 1u);            // back to back, no bubble
}

// q [128, 128] x K^T, K [1024, 128] bf16 streamed in 8 tiles of 128 rows (32 KiB each:
// 120 + 512 = 632 cycles of DMA) against 128x128x128 GEMM tiles (2128 cycles); q waited
// for before the composite or not.
const OpRecord& q_times_k(Machine& m, bool wait_for_q) {
  const DPPolicy here = DPPolicy::replicate(1, 1, 0);
  const DeviceTensor q = m.rt.empty("q", {128, 128}, DType::bf16, here);
  const DeviceTensor k = m.rt.empty("k", {1024, 128}, DType::bf16, here);
  m.rt.launch(SipId(0), "composite", test::on_pe(kPe, [&](tl::Ctx& tl) {
    const tl::Tensor tq = tl.load(q, {0, 128});
    if (wait_for_q) tl.wait(tq);
    tl::CompositeOpts o;
    o.trans_b = true;
    o.tile_rows = 128;
    tl.wait(tl.composite(tq, tl.ref(k, {0, 1024}), o));
  }));
  m.rt.run();
  return *m.rt.op_log().select("gemm", "composite").at(0);
}

constexpr std::uint64_t kKTileBytes = 128 * 128 * 2, kGemmTile = 8 * 2 * 128 + 16 + 64;

TEST(TlTiming, CompositeHidesStreamingBehindTheGemm) {
  // With two staging buffers the DMA of tile j+1 runs under GEMM j: latency = one DMA
  // tile + 8 GEMM tiles, not the sum.
  Machine m("small_1sip_2x2x2", false);
  const OpRecord& c = q_times_k(m, true);
  EXPECT_EQ(c.end - c.issue, dma(kKTileBytes) + 8 * kGemmTile);
  EXPECT_LT(c.end - c.issue, 8 * (dma(kKTileBytes) + kGemmTile));
  EXPECT_EQ(c.bytes, 1024u * 128 * 2);
  EXPECT_EQ(c.flops, 2ull * 128 * 1024 * 128);
}

TEST(TlTiming, AStreamedCompositeStreamsWhileItsALoads) {
  // q not waited for: K's first tile streams behind q as one transfer and the first GEMM
  // starts once both are in, so the composite ends at q's issue + one DMA of q and a K
  // tile + 8 GEMM tiles (the HBM latency paid once, not twice).
  Machine m("small_1sip_2x2x2", false);
  const OpRecord& c = q_times_k(m, false);
  const OpRecord& load = *m.rt.op_log().select("dma", "load").at(0);
  EXPECT_LT(c.issue, load.end);  // issued while q was still loading
  EXPECT_EQ(c.end, load.issue + dma(2 * kKTileBytes) + 8 * kGemmTile);
}

TEST(TlTiming, APreloadedCompositeStartsWithItsGemms) {
  // K's first 4 tiles loaded ahead into the stage (as while a collective runs): the
  // composite's GEMMs start at once and tile 4 streams under them, so it takes the 8 GEMM
  // tiles alone, the DMA tile it paid above no more; the preload and the stream each read
  // 4 tiles.
  Machine m("small_1sip_2x2x2", false);
  const DPPolicy here = DPPolicy::replicate(1, 1, 0);
  const DeviceTensor q = m.rt.empty("q", {128, 128}, DType::bf16, here);
  const DeviceTensor k = m.rt.empty("k", {1024, 128}, DType::bf16, here);
  m.rt.launch(SipId(0), "composite", test::on_pe(kPe, [&](tl::Ctx& tl) {
    const tl::Tensor tq = tl.load(q, {0, 128});
    const tl::Tensor kt = tl.ref(k, {0, 1024});
    const tl::Tensor stage = tl.empty({6 * 128, 128}, DType::bf16, "stage");
    tl.preload(kt, 4 * 128, stage);
    tl.wait(tq);
    tl.wait(stage);
    tl::CompositeOpts o;
    o.trans_b = true;
    o.tile_rows = 128;
    o.stage = &stage;
    o.preloaded_rows = 4 * 128;
    tl.wait(tl.composite(tq, kt, o));
  }));
  m.rt.run();
  const OpRecord& c = *m.rt.op_log().select("gemm", "composite").at(0);
  EXPECT_EQ(c.end - c.issue, 8 * kGemmTile);
  std::uint64_t streamed = 0;
  for (const OpRecord* r : m.rt.op_log().select("dma"))
    if (r->tensor == "k" && r->id != c.id) streamed += r->bytes;
  EXPECT_EQ(streamed, 4 * kKTileBytes) << "the preload's load";
  EXPECT_EQ(c.bytes, 4 * kKTileBytes) << "the composite's stream";
}

TEST(TlTiming, AWriteWaitsOnlyForReadersOfItsRows) {
  // A send reads rows [0, 4) of a buffer; filling rows [4, 8) goes at once, refilling
  // rows [0, 4) waits for the send.
  Machine m("small_1sip_2x2x2", false);
  const PeCoord peer{SipId(0), CubeId(3), PeId(1)};
  m.rt.launch(SipId(0), "rows", [&](tl::Ctx& tl) {
    if (tl.coord() == peer) tl.wait(tl.recv(kPe, {4, 256}, DType::fp32, 1));
    if (tl.coord() != kPe) return;
    const tl::Tensor buf = tl.persistent({8, 256}, DType::fp32, "buf");
    tl.send(peer, tl.rows(buf, 0, 4), 1);
    tl.fill(tl.rows(buf, 4, 4), 1.0f);
    tl.fill(tl.rows(buf, 0, 4), 2.0f);
  });
  m.rt.run();
  const auto& log = m.rt.op_log();
  const OpRecord& send = *log.select("ipcq", "send").at(0);
  const auto fills = log.select("math", "fill");
  ASSERT_EQ(fills.size(), 2u);
  EXPECT_LT(fills[0]->issue, send.end);  // other rows: no wait
  EXPECT_EQ(fills[1]->issue, send.end);   // built while it waited, out as the send is done
}

TEST(TlTiming, AWriteWaitsOnlyForReadersOfItsColumns) {
  // Columns of one matrix are apart: a fill of the last column goes out while an exp
  // reads the others; a fill of columns the exp reads waits for it.
  Machine m("small_1sip_2x2x2", false);
  m.rt.launch(SipId(0), "columns", test::on_pe(kPe, [&](tl::Ctx& tl) {
    const tl::Tensor x = tl.persistent({64, 130}, DType::fp32, "x");
    const tl::Tensor o = tl.cols(x, 0, 128), last = tl.cols(x, 129, 1), inside = tl.cols(x, 100, 10);
    tl.exp(o);
    tl.fill(last, 0.0f);
    tl.fill(inside, 0.0f);
  }));
  m.rt.run();
  const auto& log = m.rt.op_log();
  const OpRecord& exp = *log.select("math", "exp").at(0);
  const auto fills = log.select("math", "fill");
  ASSERT_EQ(fills.size(), 2u);
  EXPECT_EQ(fills[0]->issue, exp.issue + issue(m.topo, "math"));  // not held by the exp
  EXPECT_LT(fills[0]->issue, exp.end);
  EXPECT_EQ(fills[1]->issue, exp.end);  // built while it waited, out as the exp is done
}

TEST(TlTiming, ConsumingAPendingHandleWaitsForIt) {
  Machine m("small_1sip_2x2x2", false);
  const DeviceTensor a = m.rt.empty("a", {64, 64}, DType::fp32, DPPolicy::replicate(1, 1, 0));
  m.rt.launch(SipId(0), "autowait", test::on_pe(kPe, [&](tl::Ctx& tl) {
    const tl::Tensor x = tl.load(a, {0, 64});  // returns at once
    const tl::Tensor y = tl.exp(x);            // must wait for the load
    tl.exp(y);                                 // must wait for the first exp
  }));
  m.rt.run();
  const auto& log = m.rt.op_log();
  const OpRecord& load = *log.select("dma", "load")[0];
  const auto exps = log.select("math", "exp");
  EXPECT_EQ(load.issue, issue(m.topo, "load"));  // issued without waiting
  // Each exp is built (its issue cycles) while its operand is pending, and goes out the
  // cycle the operand is done.
  EXPECT_EQ(exps[0]->issue, load.end);
  EXPECT_EQ(exps[1]->issue, exps[0]->end);
}

TEST(TlTiming, ReadySaysWhetherAUseWouldWaitAndWaitsForNothing) {
  // A receive posted before its message comes, and an exp still writing its result: not
  // ready, and the program goes on at once; once the message is in and the exp done,
  // ready.
  Machine m("small_1sip_2x2x2", false);
  const DeviceTensor a = m.rt.empty("a", {64, 64}, DType::fp32, DPPolicy::replicate(1, 1, 0));
  const PeCoord sender{SipId(0), CubeId(0), PeId(1)};
  std::vector<bool> seen;
  std::vector<std::uint64_t> at;
  m.rt.launch(SipId(0), "ready", [&](tl::Ctx& tl) {
    if (tl.coord() == sender) tl.send(kPe, tl.load(a, {0, 64}), 7);
    if (tl.coord() != kPe) return;
    const tl::Tensor got = tl.recv_async(sender, {64, 64}, DType::fp32, 7);
    const tl::Tensor x = tl.full({64, 64}, 1.0f);
    const tl::Tensor y = tl.exp(x);
    seen.push_back(tl.ready(got));
    seen.push_back(tl.ready(y));
    at.push_back(test::cycles(sc_core::sc_time_stamp(), m.topo));
    tl.wait(got);
    tl.wait(y);
    seen.push_back(tl.ready(got));
    seen.push_back(tl.ready(y));
  });
  m.rt.run();
  const auto& log = m.rt.op_log();
  const OpRecord& exp = *log.select("math", "exp").at(0);
  ASSERT_EQ(seen.size(), 4u);
  EXPECT_FALSE(seen[0]);
  EXPECT_FALSE(seen[1]);
  EXPECT_TRUE(seen[2]);
  EXPECT_TRUE(seen[3]);
  // The two probes cost their issue cycles and waited for nothing.
  EXPECT_EQ(at.at(0), exp.issue + 2 * issue(m.topo, "wait"));
  EXPECT_LT(at.at(0), exp.end);
}

TEST(TlTiming, AHeldSendHoldsOnlyLaterSendsToItsPeAndTag) {
  // The first send waits in the scheduler for its load; a later send to another PE, and
  // one to the same PE with another tag, leave at once; one to the same PE and tag
  // leaves only after it (its receiver matches them in arrival order).
  Machine m("small_1sip_2x2x2", false);
  const DeviceTensor a = m.rt.empty("a", {64, 64}, DType::fp32, DPPolicy::replicate(1, 1, 0));
  const PeCoord other{SipId(0), CubeId(0), PeId(1)}, sender{SipId(0), CubeId(1), PeId(0)};
  m.rt.launch(SipId(0), "order", [&](tl::Ctx& tl) {
    if (tl.coord() == sender) {
      tl.send(kPe, tl.load(a, {0, 64}), 7);
      const tl::Tensor small = tl.full({1, 64}, 1.0f);
      tl.send(other, small, 7);
      tl.send(kPe, small, 8);
      tl.send(kPe, small, 7);
    }
    if (tl.coord() == kPe) {
      tl.wait(tl.recv_async(sender, {64, 64}, DType::fp32, 7));
      tl.wait(tl.recv_async(sender, {1, 64}, DType::fp32, 8));
      tl.wait(tl.recv_async(sender, {1, 64}, DType::fp32, 7));
    }
    if (tl.coord() == other) tl.wait(tl.recv_async(sender, {1, 64}, DType::fp32, 7));
  });
  m.rt.run();
  const auto& log = m.rt.op_log();
  const OpRecord& load = *log.select("dma", "load").at(0);
  const auto sends = log.select("ipcq", "send");
  ASSERT_EQ(sends.size(), 4u);
  EXPECT_EQ(sends[0]->start, load.end);
  EXPECT_LT(sends[1]->start, load.end) << "another PE";
  EXPECT_LT(sends[2]->start, load.end) << "another tag";
  EXPECT_GE(sends[3]->start, sends[0]->start) << "same PE and tag: in issue order";
}

TEST(TlTiming, AHeldSendLeavesWhenTheLastOfItsWritersEnds) {
  // The send waits in the scheduler for both writers of what it sends: a fill of the
  // first rows, issued first and still running when the send comes, and a load of the
  // rest, which ends last. The fill's end passes the send's wait on to the load, and the
  // send leaves the cycle the load ends.
  Machine m("small_1sip_2x2x2", false);
  const DeviceTensor a = m.rt.empty("a", {256, 64}, DType::fp32, DPPolicy::replicate(1, 1, 0));
  const PeCoord sender{SipId(0), CubeId(0), PeId(1)};
  m.rt.launch(SipId(0), "two writers", [&](tl::Ctx& tl) {
    if (tl.coord() == sender) {
      const tl::Tensor x = tl.persistent({512, 64}, DType::fp32, "x");
      tl.fill(tl.rows(x, 0, 256), 1.0f);
      const tl::Tensor rest = tl.rows(x, 256, 256);
      tl.load(a, {0, 256}, &rest);
      tl.send(kPe, x, 7);
    }
    if (tl.coord() == kPe) tl.wait(tl.recv_async(sender, {512, 64}, DType::fp32, 7));
  });
  m.rt.run();
  const auto& log = m.rt.op_log();
  const OpRecord& fill = *log.select("math", "fill").at(0);
  const OpRecord& load = *log.select("dma", "load").at(0);
  const OpRecord& send = *log.select("ipcq", "send").at(0);
  EXPECT_GT(fill.end, send.issue) << "the fill still runs when the send is held";
  EXPECT_LT(fill.end, load.end);
  EXPECT_EQ(send.start, load.end);
}

TEST(TlTiming, AMessagePassedOnLeavesAsItArrivesWithoutHoldingTheProgram) {
  // The middle PE receives into a buffer and sends that buffer on: the scheduler takes
  // the message for the send, which starts the cycle it is in; the program goes on.
  Machine m("small_1sip_2x2x2", false);
  const PeCoord first{SipId(0), CubeId(3), PeId(1)}, last{SipId(0), CubeId(0), PeId(1)};
  m.rt.launch(SipId(0), "pass", [&](tl::Ctx& tl) {
    if (tl.coord() == first) tl.send(kPe, tl.full({64, 64}, 1.0f), 5);
    if (tl.coord() == kPe) {
      const tl::Tensor in = tl.persistent({64, 64}, DType::fp32, "in");
      tl.recv_async(first, {64, 64}, DType::fp32, 5, &in);
      tl.send(last, in, 6);
      tl.full({8, 64}, 2.0f);
    }
    if (tl.coord() == last) tl.wait(tl.recv_async(kPe, {64, 64}, DType::fp32, 6));
  });
  m.rt.run();
  const auto& log = m.rt.op_log();
  const OpRecord* recv = nullptr;
  const OpRecord* send = nullptr;
  for (const OpRecord* r : log.select("ipcq", "recv"))
    if (r->pe == kPe) recv = r;
  for (const OpRecord* s : log.select("ipcq", "send"))
    if (s->pe == kPe) send = s;
  const OpRecord* after = nullptr;  // the op the program issues after the send
  for (const OpRecord* f : log.select("math", "fill"))
    if (f->pe == kPe) after = f;
  ASSERT_NE(recv, nullptr);
  ASSERT_NE(send, nullptr);
  ASSERT_NE(after, nullptr);
  EXPECT_EQ(send->start, recv->end) << "the send leaves the cycle its message is in";
  EXPECT_LT(after->end, recv->end) << "the program was held by the message passed on";
}

TEST(TlTiming, RecvAsyncOverlapsCompute) {
  Machine m("small_1sip_2x2x2", false);
  const DeviceTensor a = m.rt.empty("a", {128, 128}, DType::bf16, DPPolicy::replicate(1, 1, 0));
  const PeCoord sender{SipId(0), CubeId(3), PeId(1)};
  m.rt.launch(SipId(0), "ring", [&](tl::Ctx& tl) {
    if (tl.coord() == sender) tl.send(kPe, tl.full({128, 128}, 1.0f), 5);  // 64 KiB over 2 hops
    if (tl.coord() != kPe) return;
    const tl::Tensor x = tl.load(a, {0, 128});
    const tl::Tensor in = tl.recv_async(sender, {128, 128}, DType::fp32, 5);
    const tl::Tensor g = tl.dot(x, x);
    tl.wait(g);
    tl.wait(in);
  });
  m.rt.run();
  const auto& log = m.rt.op_log();
  const OpRecord& recv = *log.select("ipcq", "recv")[0];
  const OpRecord& gemm = *log.select("gemm", "dot")[0];
  const OpRecord& send = *log.select("ipcq", "send")[0];
  EXPECT_EQ(send.hops, 2u);
  EXPECT_LT(recv.end, gemm.end);   // the message arrived while the GEMM ran
  EXPECT_GT(recv.end, gemm.start);
  EXPECT_EQ(recv.end, send.start + 2 * 4 + 65536 / 64);  // h * hop + bytes / bw
}

TEST(TlTiming, LoadOfASiblingsShardCrossesTheFabric) {
  // PE 0 loads rows held by PE 1 of its cube: the DMA goes over the fabric, one burst:
  // request 16 + HBM 120 + 2048/64, data back 16 + 2048/32.
  Machine m("small_1sip_2x2x2", false);
  const DeviceTensor a = m.rt.empty("a", {16, 64}, DType::fp32, DPPolicy::shard2d(1, 2, 0));  // 8 rows each
  m.rt.launch(SipId(0), "sibling", test::on_pe(kPe, [&](tl::Ctx& tl) { tl.wait(tl.load(a, {8, 8})); }));
  m.rt.run();
  const OpRecord& load = *m.rt.op_log().select("dma", "load").at(0);
  EXPECT_EQ(load.end - load.start, 16 + 120 + 2048 / 64 + 16 + 2048 / 32);
}

TEST(TlTiming, ScratchScopeKeepsTcmUseToOneIteration) {
  Machine m("small_1sip_2x2x2", false);
  const DeviceTensor a = m.rt.empty("a", {16, 256}, DType::fp32, DPPolicy::replicate(1, 1, 0));
  std::uint64_t after_one = 0;
  m.rt.launch(SipId(0), "loop", test::on_pe(kPe, [&](tl::Ctx& tl) {
    for (int i = 0; i < 1000; ++i) {
      const auto scope = tl.scratch_scope();
      const tl::Tensor x = tl.load(a, {0, 16});
      tl.exp(tl.add(x, x));
      if (i == 0) after_one = tl.tcm_use().scratch;
    }
  }));
  m.rt.run();
  const tl::TcmUse& use = m.rt.context(kPe).tcm_use();
  EXPECT_EQ(after_one, 3u * 16 * 256 * 4);
  EXPECT_EQ(use.peak_scratch, after_one);
  EXPECT_EQ(use.scratch, 0u);
  EXPECT_EQ(m.rt.op_log().count("exp"), 1000u);
}

}  // namespace
}  // namespace kb

namespace kb {
namespace {

TEST(TlOpLog, MessagesPerLinkFollowXyRouting) {
  Machine m("llama70b_4sip", false);
  m.rt.launch(SipId(0), "msgs", [](tl::Ctx& tl) {
    const PeCoord a{SipId(0), CubeId(0), PeId(0)}, b{SipId(0), CubeId(5), PeId(0)}, c{SipId(0), CubeId(0), PeId(3)};
    if (tl.coord() == a) {
      tl.send(b, tl.full({1, 16}, 1), 1);  // 0 -> 1 -> 5
      tl.send(c, tl.full({1, 16}, 1), 2);  // same cube
    }
    if (tl.coord() == b) tl.recv(a, {1, 16}, DType::fp32, 1);
    if (tl.coord() == c) tl.recv(a, {1, 16}, DType::fp32, 2);
  });
  m.rt.run();
  const auto links = m.rt.op_log().messages_per_link(m.topo.mesh());
  EXPECT_EQ(links, (std::map<std::string, std::uint64_t>{{"cube0->cube1", 1}, {"cube1->cube5", 1}, {"cube0.fabric", 1}}));
  // The model's own link counters agree.
  const Noc& noc = m.sys.sip(SipId(0)).noc;
  EXPECT_EQ(noc.router(CubeId(0)).link(Direction::East)->transfers(), 1u);
  EXPECT_EQ(noc.router(CubeId(1)).link(Direction::South)->transfers(), 1u);
  const std::string csv = m.rt.op_log().to_csv();
  EXPECT_EQ(csv.substr(0, csv.find('\n')), "id,kernel,pe,engine,kind,issue,start,end,bytes,flops,peer,tag,hops,tensor,shape,critical");
}

}  // namespace
}  // namespace kb
