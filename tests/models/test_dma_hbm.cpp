// Theory vs measured: DMA <-> HBM transfers take exactly what the formulas of docs/architecture.md say.
#include <gtest/gtest.h>

#include "models/sip/system.h"
#include "workloads/hbm_stream/hbm_stream.h"
#include "tests/support.h"

namespace kb {
namespace {

using test::ceil_div;

Command dma(Command::Kind kind, std::uint64_t address, std::uint64_t bytes) {
  Command c;
  c.kind = kind;
  c.address = address;
  c.bytes = bytes;
  return c;
}

// Loads a program that issues `cmd` on a PE; `out` points at the command once issued.
void load_issue(System& sys, CubeId cube, PeId pe, const Command& cmd, const Command*& out) {
  sys.pe(PeCoord{SipId(0), cube, pe}).cpu.load([&out, cmd](PeCpu& cpu) { out = &cpu.issue(cmd); });
}

// Runs one DMA command on PE (cube, pe) of SIP 0 and returns its duration in cycles.
std::uint64_t time_one(System& sys, CubeId cube, PeId pe, const Command& cmd) {
  const Command* c = nullptr;
  load_issue(sys, cube, pe, cmd, c);
  sc_core::sc_start();
  EXPECT_TRUE(c != nullptr && c->done);
  return test::cycles(c->finished - c->issued, sys.topology());
}

}  // namespace

TEST(DmaHbm, ReadSaturatesTheChannel) {
  // 8 outstanding bursts of 2 KiB cover the 120-cycle latency: the wire never idles,
  // so N bytes take latency + N / bandwidth.
  const Topology topo = test::topology("small_1sip_2x2x2");
  System sys("system", topo);
  const std::uint64_t n = 256 * 1024;
  const auto& map = sys.sip(SipId(0)).address_map();
  const std::uint64_t t = time_one(sys, CubeId(1), PeId(1), dma(Command::Kind::DmaRead, map.hbm(1, 1, 0), n));
  EXPECT_EQ(t, topo.cube.hbm.latency_cycles + n / topo.cube.hbm.bytes_per_cycle);  // 120 + 4096
  EXPECT_EQ(sys.hbm(PeCoord{SipId(0), CubeId(1), PeId(1)}).bytes_read(), n);
}

TEST(DmaHbm, WriteSaturatesTheChannel) {
  const Topology topo = test::topology("small_1sip_2x2x2");
  System sys("system", topo);
  const std::uint64_t n = 64 * 1024;
  const auto& map = sys.sip(SipId(0)).address_map();
  const std::uint64_t t = time_one(sys, CubeId(0), PeId(0), dma(Command::Kind::DmaWrite, map.hbm(0, 0, 4096), n));
  EXPECT_EQ(t, 120u + n / 64);
  EXPECT_EQ(sys.hbm(PeCoord{SipId(0), CubeId(0), PeId(0)}).bytes_written(), n);
}

TEST(DmaHbm, PartialLastBurstIsSerialisedByItsOwnLength) {
  const Topology topo = test::topology("small_1sip_2x2x2");
  System sys("system", topo);
  const auto& map = sys.sip(SipId(0)).address_map();
  // 5000 B = 2048 + 2048 + 904: 32 + 32 + ceil(904/64) = 15 cycles on the wire.
  const std::uint64_t t = time_one(sys, CubeId(0), PeId(0), dma(Command::Kind::DmaRead, map.hbm(0, 0, 0), 5000));
  EXPECT_EQ(t, 120u + 32 + 32 + ceil_div(904, 64));
}

TEST(DmaHbm, OutstandingLimitBoundsThroughput) {
  // tiny: 2 outstanding bursts. Bursts go in windows of 2, each window answered after
  // 2 burst times + latency... the next window waits for the first answer:
  // burst i starts at floor(i/k)*(ser+lat) + (i mod k)*ser, since k*ser < ser+lat.
  const Topology topo = test::topology("tiny_2sip_4x1x1");
  System sys("system", topo);
  const std::uint64_t k = topo.pe.dma.outstanding, lat = 120, ser = 2048 / 64, bursts = 16;
  ASSERT_LT(k * ser, ser + lat);
  const auto& map = sys.sip(SipId(0)).address_map();
  const std::uint64_t t = time_one(sys, CubeId(2), PeId(0),
                                   dma(Command::Kind::DmaRead, map.hbm(2, 0, 0), bursts * 2048));
  const std::uint64_t last = bursts - 1;
  EXPECT_EQ(t, (last / k) * (ser + lat) + (last % k) * ser + ser + lat);
  EXPECT_EQ(t, predict_dma_cycles(topo, bursts * 2048));
}

TEST(DmaHbm, TwoReadersContendForOneChannel) {
  // PE0 reads its own channel; PE1 reads the same channel across a fast fabric
  // (1 cycle latency, 2 KiB/cycle) so that only the HBM wire is shared. Both issue 8
  // bursts at t=0: the wire serves them in blocks of 8 that alternate PE0, PE1, PE0, ...
  // and never idles, so it is busy 2N/bw in all. PE0's last block ends one block before
  // the wire's end; PE1's last burst ends it, then crosses the fabric back (1 + 1 cycles).
  const Topology topo =
      test::topology("small_1sip_2x2x2", {"cube.fabric.bandwidth=2KiB/cycle", "cube.fabric.latency=1"});
  System sys("system", topo);
  const auto& map = sys.sip(SipId(0)).address_map();
  const std::uint64_t n = 64 * 1024, ser = 2048 / 64, lat = 120, k = 8, fabric = 1 + 1;
  const Command *a = nullptr, *b = nullptr;
  load_issue(sys, CubeId(0), PeId(0), dma(Command::Kind::DmaRead, map.hbm(0, 0, 0), n), a);
  load_issue(sys, CubeId(0), PeId(1), dma(Command::Kind::DmaRead, map.hbm(0, 0, n), n), b);
  sc_core::sc_start();
  ASSERT_TRUE(a->done && b->done);
  const std::uint64_t wire = 2 * n / 64;
  EXPECT_EQ(test::cycles(a->finished, topo), wire - k * ser + lat);  // 1912
  EXPECT_EQ(test::cycles(b->finished, topo), wire + lat + fabric);   // 2170
  const Link& channel = sys.hbm(PeCoord{SipId(0), CubeId(0), PeId(0)}).wire();
  EXPECT_EQ(test::cycles(channel.busy(), topo), wire);
  EXPECT_EQ(channel.transfers(), 2 * n / 2048);
}

TEST(DmaHbm, ReadAndWriteChannelsOfOnePeRunConcurrently) {
  // The read and the write channel each serve one command, so both are in service at
  // once; they share the HBM wire, which stays saturated: the later one ends at
  // latency + 2N / bandwidth.
  const Topology topo = test::topology("small_1sip_2x2x2");
  System sys("system", topo);
  const auto& map = sys.sip(SipId(0)).address_map();
  const std::uint64_t n = 32 * 1024;
  const Command *r = nullptr, *w = nullptr;
  sys.pe(PeCoord{SipId(0), CubeId(0), PeId(0)}).cpu.load([&](PeCpu& cpu) {
    r = &cpu.issue(dma(Command::Kind::DmaRead, map.hbm(0, 0, 0), n));
    w = &cpu.issue(dma(Command::Kind::DmaWrite, map.hbm(0, 0, n), n));
  });
  sc_core::sc_start();
  ASSERT_TRUE(r->done && w->done);
  EXPECT_EQ(r->started, w->started);
  EXPECT_EQ(std::max(test::cycles(r->finished, topo), test::cycles(w->finished, topo)), 120 + 2 * n / 64);
}

TEST(DmaHbm, DataMovesThroughTheDma) {
  // A write from one TCM buffer then a read into another bring the same bytes back,
  // and the bytes sit in the HBM channel at the address written.
  const Topology topo = test::topology("small_1sip_2x2x2");
  System sys("system", topo);
  const auto& map = sys.sip(SipId(0)).address_map();
  Pe& pe = sys.pe(PeCoord{SipId(0), CubeId(2), PeId(1)});
  const std::uint64_t n = 5000;
  std::uint8_t* src = pe.tcm.data(0);
  std::uint8_t* dst = pe.tcm.data(8192);
  for (std::uint64_t i = 0; i < n; ++i) src[i] = static_cast<std::uint8_t>(i * 7 + 3);
  pe.cpu.load([&](PeCpu& cpu) {
    Command w = dma(Command::Kind::DmaWrite, map.hbm(3, 0, 100), n);  // a sibling cube's channel
    w.tcm = src;
    cpu.wait(cpu.issue(w));
    Command r = dma(Command::Kind::DmaRead, map.hbm(3, 0, 100), n);
    r.tcm = dst;
    cpu.wait(cpu.issue(r));
  });
  sc_core::sc_start();
  ASSERT_TRUE(pe.cpu.finished());
  EXPECT_TRUE(std::equal(src, src + n, dst));
  std::vector<std::uint8_t> stored(n);
  sys.hbm(PeCoord{SipId(0), CubeId(3), PeId(0)}).store().read(100, stored.data(), n);
  EXPECT_TRUE(std::equal(src, src + n, stored.begin()));
}

TEST(DmaHbm, StreamOfEveryPeMatchesThePrediction) {
  const Topology topo = test::topology("small_1sip_2x2x2");
  System sys("system", topo);
  const StreamResult r = run_hbm_stream(sys, 128 * 1024, false, {SipId(0)});
  EXPECT_EQ(r.pes, 8u);
  EXPECT_EQ(r.simulated_cycles, 120u + 128 * 1024 / 64);
  EXPECT_EQ(r.simulated_cycles, r.predicted_cycles);
  sys.for_each_pe([](Pe& pe) { EXPECT_EQ(pe.dma.bytes_read(), 128u * 1024); });
}

}  // namespace kb

namespace kb {

TEST(DmaHbm, QueuedCommandsOfAChannelStreamBackToBack) {
  // Three 16 KiB reads queued on one read channel: the second starts issuing as soon as
  // the first has issued its last burst, so the wire never idles between commands and
  // they finish at latency + k * 16 KiB / bw, in order.
  const Topology topo = test::topology("small_1sip_2x2x2");
  System sys("system", topo);
  const auto& map = sys.sip(SipId(0)).address_map();
  std::vector<const Command*> cmds;
  sys.pe(PeCoord{SipId(0), CubeId(0), PeId(1)}).cpu.load([&](PeCpu& cpu) {
    for (std::uint64_t i = 0; i < 3; ++i) {
      Command c;
      c.kind = Command::Kind::DmaRead;
      c.address = map.hbm(0, 1, i * 16384);
      c.bytes = 16384;
      cmds.push_back(&cpu.issue(c));
    }
  });
  sc_core::sc_start();
  for (std::uint64_t i = 0; i < 3; ++i) EXPECT_EQ(test::cycles(cmds[i]->finished, topo), 120 + (i + 1) * 256);
  EXPECT_EQ(test::cycles(cmds[1]->started, topo), 0u);  // 8 bursts of the first are out at once
}

}  // namespace kb
