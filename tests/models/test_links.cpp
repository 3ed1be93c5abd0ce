// Theory vs measured for messages between SIPs: both meshes, the links, contention on a
// link direction and at a switch, a route through a SIP, and the bytes themselves.
#include <gtest/gtest.h>

#include <algorithm>

#include "models/sip/system.h"
#include "tests/support.h"

namespace kb {
namespace {

using test::ceil_div;

Command send_to(PeCoord dst, std::uint64_t bytes, std::uint32_t tag = 0) {
  Command c;
  c.kind = Command::Kind::Send;
  c.dst_sip = dst.sip.value;
  c.dst_cube = dst.cube.value;
  c.dst_pe = dst.pe.value;
  c.bytes = bytes;
  c.tag = tag;
  return c;
}

// Sends `cmd` from `from` at time 0; `done` gets the cycle its send completed.
void load_send(System& sys, PeCoord from, const Command& cmd, std::uint64_t* done = nullptr) {
  const Topology& topo = sys.topology();
  sys.pe(from).cpu.load([cmd, done, &topo](PeCpu& cpu) {
    cpu.wait(cpu.issue(cmd));
    if (done) *done = test::cycles(sc_core::sc_time_stamp(), topo);
  });
}

PeCoord at(std::uint32_t sip, std::uint32_t cube, std::uint32_t pe) { return {SipId(sip), CubeId(cube), PeId(pe)}; }

std::uint64_t arrival(System& sys, PeCoord pe, std::size_t i = 0) {
  return test::cycles(sys.pe(pe).ipcq.received().at(i).arrival, sys.topology());
}

std::string crossings(const Message& m) {
  std::string s;
  for (const LinkCrossing& c : m.crossings) s += (s.empty() ? "" : " ") + c.direction.str();
  return s;
}

}  // namespace

// From cube 0 of SIP 0 to cube 15 of SIP 1 on the default machine: XY over 2 mesh hops
// to the port nearest cube 0 (cube 5), the link, and 2 hops from the port nearest cube
// 15 (cube 10). Each mesh delivers when the tail leaves it (4 cycles a hop plus bytes / 64),
// the link when the tail arrives (bytes / 150 plus 500). The sender's write completes
// once its last byte is on the link, and its response has come back over the 2 hops.
TEST(Links, AMessageCrossesBothMeshesAndTheLinkInTheirSum) {
  const Topology topo = test::topology("llama70b_4sip");
  System sys("system", topo);
  const std::uint64_t n = 3000;
  std::uint64_t done = 0;
  load_send(sys, at(0, 0, 3), send_to(at(1, 15, 2), n, 7), &done);
  sc_core::sc_start();
  const std::uint64_t mesh = 2 * 4 + ceil_div(n, 64), link = ceil_div(n, 150);
  EXPECT_EQ(arrival(sys, at(1, 15, 2)), mesh + link + 500 + mesh);
  EXPECT_EQ(done, mesh + link + 2 * 4);
  const Message& m = sys.pe(at(1, 15, 2)).ipcq.received().front();
  EXPECT_EQ(m.src_sip, 0u);
  EXPECT_EQ(m.src_cube, 0u);
  EXPECT_EQ(m.src_pe, 3u);
  EXPECT_EQ(m.tag, 7u);
  EXPECT_EQ(m.bytes, n);
  EXPECT_EQ(m.path, (std::vector<std::uint32_t>{0, 1, 10, 11}));  // routers that sent it over a mesh link
  EXPECT_EQ(crossings(m), "sip0>sip1");
  const ChipLink& l = *sys.links().at(0);  // sip0-sip1
  EXPECT_EQ(l.direction(true).bytes(), n);
  EXPECT_EQ(l.direction(true).transfers(), 1u);
  EXPECT_EQ(l.direction(false).bytes(), 0u);
}

// Two PEs of port cube 5 send at once to cube 10 of SIP 1, itself a port cube: no mesh
// link on either side, so the link alone orders them: one after the other.
TEST(Links, ALinkDirectionCarriesOneMessageAtATime) {
  const Topology topo = test::topology("llama70b_4sip");
  System sys("system", topo);
  const std::uint64_t n = 1500;  // 10 cycles on the link
  load_send(sys, at(0, 5, 0), send_to(at(1, 10, 0), n, 1));
  load_send(sys, at(0, 5, 1), send_to(at(1, 10, 0), n, 2));
  sc_core::sc_start();
  std::vector<std::uint64_t> t = {arrival(sys, at(1, 10, 0), 0), arrival(sys, at(1, 10, 0), 1)};
  std::sort(t.begin(), t.end());
  EXPECT_EQ(t[0], n / 150 + 500);
  EXPECT_EQ(t[1], 2 * n / 150 + 500);
  // The other directions of the SIP's links carried nothing.
  EXPECT_EQ(sys.links().at(0)->direction(false).bytes(), 0u);
  EXPECT_EQ(sys.links().at(1)->direction(true).bytes(), 0u);
}

// Opposite directions of one link, and links to different SIPs, do not contend.
TEST(Links, DirectionsAndLinksAreIndependent) {
  const Topology topo = test::topology("llama70b_4sip");
  System sys("system", topo);
  const std::uint64_t n = 1500;
  load_send(sys, at(0, 5, 0), send_to(at(1, 10, 0), n));
  load_send(sys, at(1, 10, 1), send_to(at(0, 5, 1), n));
  load_send(sys, at(0, 5, 2), send_to(at(2, 10, 0), n));
  sc_core::sc_start();
  for (const PeCoord p : {at(1, 10, 0), at(0, 5, 1), at(2, 10, 0)}) EXPECT_EQ(arrival(sys, p), n / 150 + 500) << p.str();
}

// A switch: every SIP one link to it. SIP 0 and SIP 1 send to SIP 2 at once: each crosses
// its own uplink, then the two wait their turn on the switch's link to SIP 2.
TEST(Links, AtASwitchMessagesToOneSipTakeItsLinkInTurn) {
  const Topology topo = test::topology("llama70b_4sip", {"system.links.topology=switch"});
  System sys("system", topo);
  const std::uint64_t n = 1500, ser = n / 150;
  load_send(sys, at(0, 5, 0), send_to(at(2, 10, 0), n, 1));
  load_send(sys, at(1, 5, 0), send_to(at(2, 10, 0), n, 2));
  sc_core::sc_start();
  std::vector<std::uint64_t> t = {arrival(sys, at(2, 10, 0), 0), arrival(sys, at(2, 10, 0), 1)};
  std::sort(t.begin(), t.end());
  EXPECT_EQ(t[0], 2 * (ser + 500));
  EXPECT_EQ(t[1], 2 * (ser + 500) + ser);
  // They reach the switch at once; SIP 0's goes first: its uplink is link 0, first in order.
  const Message& first = sys.pe(at(2, 10, 0)).ipcq.received().front();
  EXPECT_EQ(first.src_sip, 0u);
  EXPECT_EQ(crossings(first), "sip0>switch switch>sip2");
}

// On a ring of 4, SIP 0 reaches SIP 2 through SIP 1, from link to link inside SIP 1's
// link interface: its mesh carries nothing.
TEST(Links, OnARingAMessagePassesThroughTheSipBetween) {
  const Topology topo = test::topology("llama70b_4sip", {"system.links.topology=ring"});
  System sys("system", topo);
  const std::uint64_t n = 1500, ser = n / 150;
  load_send(sys, at(0, 5, 0), send_to(at(2, 10, 0), n));
  sc_core::sc_start();
  const Message& m = sys.pe(at(2, 10, 0)).ipcq.received().front();
  EXPECT_EQ(crossings(m), "sip0>sip1 sip1>sip2");
  EXPECT_EQ(arrival(sys, at(2, 10, 0)), 2 * (ser + 500));
  EXPECT_TRUE(m.path.empty());
}

// Data mode: the bytes a PE of SIP 3 sends are the bytes a PE of SIP 0 receives.
TEST(Links, DataCrossesByteForByte) {
  const Topology topo = test::topology("llama70b_4sip");
  System sys("system", topo);
  const PeCoord from = at(3, 12, 4), to = at(0, 3, 6);
  std::uint8_t* bytes = sys.pe(from).tcm.data(0);
  for (int i = 0; i < 4096; ++i) bytes[i] = static_cast<std::uint8_t>(i * 7 + 1);
  Command c = send_to(to, 4096, 9);
  c.tcm = bytes;
  load_send(sys, from, c);
  sc_core::sc_start();
  const Message& m = sys.pe(to).ipcq.received().front();
  ASSERT_EQ(m.data.size(), 4096u);
  for (int i = 0; i < 4096; ++i) ASSERT_EQ(m.data[i], static_cast<std::uint8_t>(i * 7 + 1)) << i;
  EXPECT_EQ(m.src_sip, 3u);
}

}  // namespace kb
