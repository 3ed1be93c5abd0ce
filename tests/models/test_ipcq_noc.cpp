// Theory vs measured for messages: IPCQ inside a cube, the NOC across cubes,
// XY paths and link contention.
#include <array>

#include <gtest/gtest.h>

#include "models/sip/system.h"
#include "tests/support.h"

namespace kb {
namespace {

Command send(CubeId cube, PeId pe, std::uint64_t bytes, std::uint32_t tag = 0) {
  Command c;
  c.kind = Command::Kind::Send;
  c.dst_cube = cube.value;
  c.dst_pe = pe.value;
  c.bytes = bytes;
  c.tag = tag;
  return c;
}

void load_send(System& sys, PeCoord from, const Command& cmd) {
  sys.pe(from).cpu.load([cmd](PeCpu& cpu) { cpu.wait(cpu.issue(cmd)); });
}

const Message& only_message(System& sys, PeCoord at) {
  const auto& got = sys.pe(at).ipcq.received();
  EXPECT_EQ(got.size(), 1u);
  return got.front();
}

PeCoord pe_at(std::uint32_t cube, std::uint32_t pe) { return {SipId(0), CubeId(cube), PeId(pe)}; }

}  // namespace

TEST(Ipcq, MessageInsideACubeTakesFabricLatencyPlusSerialisation) {
  const Topology topo = test::topology("small_1sip_2x2x2");
  System sys("system", topo);
  const std::uint64_t n = 1000;
  load_send(sys, pe_at(1, 0), send(CubeId(1), PeId(1), n, 42));
  sc_core::sc_start();
  const Message& m = only_message(sys, pe_at(1, 1));
  EXPECT_EQ(test::cycles(m.arrival, topo), 16 + test::ceil_div(n, 32));  // 1 hop: 16 + 32 cycles
  EXPECT_EQ(m.src_cube, 1u);
  EXPECT_EQ(m.src_pe, 0u);
  EXPECT_EQ(m.tag, 42u);
  EXPECT_EQ(m.bytes, n);
  EXPECT_TRUE(m.path.empty());  // never touched the NOC
  const auto& fabric = sys.sip(SipId(0)).cube(CubeId(1)).fabric;
  EXPECT_EQ(fabric.pe_tx(PeId(0)).bytes(), n);
  EXPECT_EQ(fabric.pe_rx(PeId(1)).bytes(), n);
}

// A write's response carries no data: it goes back beside the data wires (as AXI's write
// response channel does), so a message is answered when it lands even while its receiver
// is sending on its own port. PE 0 sends 4 KiB to PE 1, which starts its own 4 KiB to
// PE 2 before PE 0's lands: PE 0's send still ends at latency + serialisation + latency.
TEST(Ipcq, AMessageIsAnsweredWhileItsReceiverSends) {
  const Topology topo = test::topology("llama70b_4sip");
  System sys("system", topo);
  const std::uint64_t n = 4096, ser = test::ceil_div(n, 32), latency = 16;
  // Cube 0: the message alone; cube 1: its receiver sending meanwhile.
  std::array<sc_core::sc_time, 2> done;
  for (std::uint32_t cube : {0u, 1u}) {
    const Command to_1 = send(CubeId(cube), PeId(1), n, 1);
    sys.pe(pe_at(cube, 0)).cpu.load([&done, to_1, cube](PeCpu& cpu) {
      cpu.wait(cpu.issue(to_1));
      done[cube] = sc_core::sc_time_stamp();
    });
  }
  const Command to_2 = send(CubeId(1), PeId(2), n, 2);
  sys.pe(pe_at(1, 1)).cpu.load([to_2, ser](PeCpu& cpu) {
    cpu.spend(ser / 2);  // its port is busy when PE 0's message lands
    cpu.wait(cpu.issue(to_2));
  });
  sc_core::sc_start();
  const std::uint64_t alone = test::cycles(done[0], topo);
  EXPECT_EQ(test::cycles(done[1], topo), alone);
  EXPECT_GE(alone, latency + ser + latency);
  EXPECT_LT(alone, latency + ser + latency + ser / 2);
}

// A PE's messages reuse pooled payloads and their extensions: each must carry only its
// own sender, tag, route and bytes. A timing-only message, one with bytes, then a second
// timing-only one on the payload of the first.
TEST(Ipcq, AMessageOnAReusedPayloadCarriesOnlyItsOwnRouteTagAndBytes) {
  const Topology topo = test::topology("llama70b_4sip");
  System sys("system", topo);
  const PeCoord from = pe_at(0, 3);
  std::uint8_t* bytes = sys.pe(from).tcm.data(0);
  for (std::uint8_t i = 0; i < 64; ++i) bytes[i] = static_cast<std::uint8_t>(i + 1);
  const Command far = send(CubeId(15), PeId(5), 64, 1);
  Command near = send(CubeId(0), PeId(4), 64, 2);
  near.tcm = bytes;
  const Command far_again = send(CubeId(15), PeId(5), 64, 3);
  sys.pe(from).cpu.load([&](PeCpu& cpu) {
    cpu.wait(cpu.issue(far));
    cpu.wait(cpu.issue(near));
    cpu.wait(cpu.issue(far_again));
  });
  sc_core::sc_start();
  const auto& at_far = sys.pe(pe_at(15, 5)).ipcq.received();
  ASSERT_EQ(at_far.size(), 2u);
  std::vector<std::uint32_t> route;
  for (const CubeId c : topo.mesh().xy_path(CubeId(0), CubeId(15))) route.push_back(c.value);
  for (std::size_t i = 0; i < 2; ++i) {
    EXPECT_EQ(at_far[i].tag, i == 0 ? 1u : 3u);
    EXPECT_EQ(at_far[i].path, route);  // not the first message's route twice over
    EXPECT_TRUE(at_far[i].data.empty());
  }
  const Message& m = only_message(sys, pe_at(0, 4));
  EXPECT_EQ(m.tag, 2u);
  EXPECT_TRUE(m.path.empty());
  EXPECT_EQ(m.data, std::vector<std::uint8_t>(bytes, bytes + 64));
  EXPECT_EQ(m.src_cube, 0u);
  EXPECT_EQ(m.src_pe, 3u);
}

class NocHops : public ::testing::TestWithParam<std::pair<std::uint32_t, std::uint32_t>> {};

TEST_P(NocHops, MessageTakesHopsTimesHopLatencyPlusSerialisation) {
  const auto [src, dst] = GetParam();
  const Topology topo = test::topology("llama70b_4sip");
  System sys("system", topo);
  const std::uint64_t n = 4096;
  load_send(sys, pe_at(src, 3), send(CubeId(dst), PeId(5), n));
  sc_core::sc_start();
  const Message& m = only_message(sys, pe_at(dst, 5));
  const Noc& noc = sys.sip(SipId(0)).noc;
  const auto path = topo.mesh().xy_path(CubeId(src), CubeId(dst));
  const std::uint32_t hops = std::abs(static_cast<int>(src % 4) - static_cast<int>(dst % 4)) +
                             std::abs(static_cast<int>(src / 4) - static_cast<int>(dst / 4));
  ASSERT_EQ(path.size(), hops);
  EXPECT_EQ(test::cycles(m.arrival, topo), hops * 4 + n / 64);
  std::vector<std::uint32_t> expected;
  for (const CubeId c : path) expected.push_back(c.value);
  EXPECT_EQ(m.path, expected);
  for (const Link* l : noc.xy_links(CubeId(src), CubeId(dst))) EXPECT_EQ(l->bytes(), n) << l->name();
}

INSTANTIATE_TEST_SUITE_P(Paths, NocHops,
                         ::testing::Values(std::make_pair(0u, 1u), std::make_pair(5u, 13u),
                                           std::make_pair(0u, 15u), std::make_pair(15u, 0u),
                                           std::make_pair(3u, 12u)));

TEST(Noc, XyRoutingGoesAlongXFirst) {
  const auto path = test::topology("llama70b_4sip").mesh().xy_path(CubeId(0), CubeId(15));
  std::vector<std::uint32_t> ids;
  for (const CubeId c : path) ids.push_back(c.value);
  EXPECT_EQ(ids, (std::vector<std::uint32_t>{0, 1, 2, 3, 7, 11}));
}

TEST(Noc, TwoMessagesSharingALinkSerialise) {
  // On a 4x1 row: A goes cube0 -> cube2 (links 0E, 1E), B goes cube1 -> cube3 (links
  // 1E, 2E); both start at t=0. B takes link 1E first; A's head reaches router 1 after
  // one hop and waits there until B has crossed, then goes on.
  const Topology topo = test::topology("tiny_2sip_4x1x1");
  System sys("system", topo);
  const std::uint64_t n = 4096, hop = 4, ser = n / 64;
  load_send(sys, pe_at(0, 0), send(CubeId(2), PeId(0), n, 1));
  load_send(sys, pe_at(1, 0), send(CubeId(3), PeId(0), n, 2));
  sc_core::sc_start();
  const Message& a = only_message(sys, pe_at(2, 0));
  const Message& b = only_message(sys, pe_at(3, 0));
  EXPECT_EQ(test::cycles(b.arrival, topo), 2 * hop + ser);                  // uncontended: 72
  EXPECT_EQ(test::cycles(a.arrival, topo), std::max(hop, ser) + hop + ser);  // 132, not 72
  const NocRouter& r1 = sys.sip(SipId(0)).noc.router(CubeId(1));
  EXPECT_EQ(r1.link(Direction::East)->transfers(), 2u);
  EXPECT_EQ(test::cycles(r1.link(Direction::East)->busy(), topo), 2 * ser);
}

TEST(Noc, RemoteHbmReadCrossesTheMeshBothWays) {
  // A read of another cube's channel: the request crosses h hops (no data), the channel
  // answers after bytes/bw + latency, the data comes back over h hops and leaves the
  // mesh when its tail arrives: 2*h*hop + ser_hbm + latency + ser_noc for one burst.
  const Topology topo = test::topology("llama70b_4sip");
  System sys("system", topo);
  const auto& map = sys.sip(SipId(0)).address_map();
  Command c;
  c.kind = Command::Kind::DmaRead;
  c.address = map.hbm(10, 2, 0);
  c.bytes = 2048;
  const Command* seen = nullptr;
  sys.pe(pe_at(0, 0)).cpu.load([&](PeCpu& cpu) {
    seen = &cpu.issue(c);
    cpu.wait(*seen);
  });
  sc_core::sc_start();
  ASSERT_NE(seen, nullptr);
  const std::uint64_t h = 2 + 2;  // cube 0 (0,0) -> cube 10 (2,2)
  EXPECT_EQ(test::cycles(seen->finished, topo), 2 * h * 4 + 2048 / 64 + 120 + 2048 / 64);
}

}  // namespace kb
