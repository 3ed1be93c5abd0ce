// tl across SIPs: send and receive over the links carry the value, the op log shows the
// crossing, the critical path names the link, and a SIP's simulation does not depend on
// the SIPs simulated with it.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "platform/timeline.h"
#include "platform/utilisation.h"

#include "tests/kernels/tl_support.h"

namespace kb {
namespace {

using test::Machine;

PeCoord at(std::uint32_t sip, std::uint32_t cube, std::uint32_t pe) { return {SipId(sip), CubeId(cube), PeId(pe)}; }

// SIP 0's PE (5, 0) sends a 32 x 64 fp32 tile (8 KiB) to SIP 1's PE (10, 0): both port
// cubes, so the link alone lies between them.
struct Exchange {
  Machine m{"llama70b_4sip", true};
  DeviceTensor in = m.rt.from_host("in", test::random_host({32, 64}, 3), DType::fp32, DPPolicy::replicate(1, 1, 5), SipId(0));
  DeviceTensor out = m.rt.empty("out", {32, 64}, DType::fp32, DPPolicy::replicate(1, 1, 10), SipId(1));
  Exchange() {
    auto kernel = [this](tl::Ctx& tl) {
      if (tl.coord() == at(0, 5, 0)) tl.send(at(1, 10, 0), tl.load(in, {0, 32}), 4);
      if (tl.coord() == at(1, 10, 0)) tl.store(out, {0, 32}, tl.recv(at(0, 5, 0), {32, 64}, DType::fp32, 4));
    };
    m.rt.launch(SipId(0), "exchange", kernel);
    m.rt.launch(SipId(1), "exchange", kernel);
    m.rt.couple_devices();
    m.rt.run();
  }
};

}  // namespace

TEST(TlLinks, SendAndRecvAcrossSipsCarryTheValue) {
  Exchange x;
  const HostTensor sent = x.m.rt.read(x.in), got = x.m.rt.read(x.out);
  EXPECT_EQ(sent.data, got.data);
  const auto links = x.m.rt.op_log().select("link");
  ASSERT_EQ(links.size(), 1u);
  EXPECT_EQ(links[0]->kind, "sip0>sip1");
  EXPECT_EQ(links[0]->pe, at(1, 10, 0));
  EXPECT_EQ(links[0]->peer, at(0, 5, 0));
  EXPECT_EQ(links[0]->bytes, 8192u);
  EXPECT_EQ(links[0]->end - links[0]->start, test::ceil_div(8192, 150) + 500);
  const auto recv = x.m.rt.op_log().select("ipcq", "recv");
  ASSERT_EQ(recv.size(), 1u);
  EXPECT_EQ(recv[0]->end, links[0]->end);  // it arrives where the link leaves it
  EXPECT_EQ(recv[0]->hops, 0u);
}

// The run ends with SIP 1's store: its critical path waited for the message, which spent
// bytes / 150 + 500 cycles on the link.
TEST(TlLinks, TheCriticalPathNamesTheLink) {
  Exchange x;
  const CriticalPath path = x.m.rt.critical_path();
  EXPECT_EQ(path.of("link"), test::ceil_div(8192, 150) + 500);
  ASSERT_TRUE(path.end);
  EXPECT_EQ(*path.end, at(1, 10, 0));
  // The sender's load is on the receiver's path: the chain crossed the SIPs.
  bool load_on_path = false;
  for (const OpRecord& r : x.m.rt.op_log().records())
    if (r.pe == at(0, 5, 0) && r.kind == "load" && !r.critical.empty()) load_on_path = true;
  EXPECT_TRUE(load_on_path);
}

// The utilisation table has the direction that carried the message, busy for its bytes.
TEST(TlLinks, UtilisationHasTheLinkDirection) {
  Exchange x;
  const Utilisation u = utilisation(x.m.sys, x.m.rt.last_run_cycles());
  ASSERT_EQ(u.links.size(), 1u);
  EXPECT_EQ(u.links[0].name, "sip0>sip1");
  EXPECT_EQ(u.links[0].messages, 1u);
  EXPECT_EQ(u.links[0].bytes, 8192u);
  EXPECT_EQ(u.links[0].busy_cycles, test::ceil_div(8192, 150));
}

// The timeline has a "links" process with the direction's track, the crossing as its
// slice, and the message's flow going send -> link -> recv.
TEST(TlLinks, TimelineHasALinkTrackAndTheFlowThroughIt) {
  Exchange x;
  const auto trace = nlohmann::json::parse(chrome_trace(x.m.rt.op_log(), x.m.topo));
  int links_pid = -1, track = -1;
  for (const auto& e : trace["traceEvents"]) {
    if (e["ph"] == "M" && e["name"] == "process_name" && e["args"]["name"] == "links") links_pid = e["pid"];
    if (e["ph"] == "M" && e["name"] == "thread_name" && e["args"]["name"] == "sip0>sip1") track = e["tid"];
  }
  ASSERT_EQ(links_pid, 4);  // after the machine's SIPs 0..3
  ASSERT_GE(track, 0);
  const OpRecord& crossing = *x.m.rt.op_log().select("link").at(0);
  std::string phases;
  double slice_dur = -1;
  for (const auto& e : trace["traceEvents"]) {
    if (e["ph"] == "X" && e["pid"] == links_pid && e["tid"] == track) slice_dur = e["dur"];
    if (e["cat"] == "message") {
      phases += e["ph"].get<std::string>();
      if (e["ph"] == "t") {
        EXPECT_EQ(e["pid"], links_pid);
      }
    }
  }
  const double us_per_cycle = 1e6 / x.m.topo.pe.clock_hz;
  EXPECT_NEAR(slice_dur, static_cast<double>(crossing.end - crossing.start) * us_per_cycle, 1e-9);
  EXPECT_EQ(phases, "stf");
}

// SIP 1 runs a kernel of its own (loads, GEMMs and messages inside the SIP, contending
// on its mesh) while SIPs 0, 2 and 3 exchange messages over every link. SIP 1's records
// are the same, byte for byte, as when it runs alone.
TEST(TlLinks, ASipThatSendsNothingHasTheSameOpLogAloneAndCoupled) {
  Machine m("llama70b_4sip", false);
  const DPPolicy every = DPPolicy::shard2d(16, 8);
  std::vector<DeviceTensor> a;
  for (std::uint32_t s = 0; s < 4; ++s) a.push_back(m.rt.empty("a", {128 * 64, 64}, DType::bf16, every, SipId(s)));
  auto busy = [&](tl::Ctx& tl) {  // SIP 1: a ring inside the SIP, cube c to cube c + 5
    const std::uint32_t c = tl.cube().value, n = tl.num_cubes();
    const RowRange rows = tl.shard_rows(a[1]);
    tl::Tensor x = tl.load(a[1], rows);
    for (std::uint32_t round = 0; round < 3; ++round) {
      tl.send(PeCoord{tl.sip(), CubeId((c + 5) % n), tl.pe()}, x, round);
      const tl::Tensor y = tl.recv(PeCoord{tl.sip(), CubeId((c + n - 5) % n), tl.pe()}, {64, 64}, DType::bf16, round);
      x = tl.cast(tl.add(tl.dot(y, y), y), DType::bf16);
    }
    tl.store(a[1], rows, x);
  };
  auto chatter = [&](tl::Ctx& tl) {  // SIPs 0, 2, 3: each PE to its place on the other two
    const std::uint32_t s = tl.sip().value;
    const tl::Tensor x = tl.load(a[s], tl.shard_rows(a[s]));
    for (const std::uint32_t peer : {0u, 2u, 3u})
      if (peer != s) tl.send(PeCoord{SipId(peer), tl.cube(), tl.pe()}, x, 1);
    for (const std::uint32_t peer : {0u, 2u, 3u})
      if (peer != s) tl.recv(PeCoord{SipId(peer), tl.cube(), tl.pe()}, {64, 64}, DType::bf16, 1);
  };
  auto sip1_records = [&] {
    std::string out;
    for (const OpRecord& r : m.rt.op_log().records())
      if (r.pe.sip == SipId(1)) out += jsonl_body(r) + " " + std::to_string(r.critical.size()) + "\n";
    return out;
  };
  m.rt.launch(SipId(1), "busy", busy);
  m.rt.run();
  const std::string alone = sip1_records();
  const std::uint64_t alone_cycles = m.rt.last_run_cycles();
  m.rt.op_log().clear();
  for (const std::uint32_t s : {0u, 2u, 3u}) m.rt.launch(SipId(s), "chatter", chatter);
  m.rt.launch(SipId(1), "busy", busy);
  m.rt.couple_devices();
  m.rt.run();
  EXPECT_GT(m.rt.op_log().select("link").size(), 0u);
  EXPECT_EQ(sip1_records(), alone);
  EXPECT_GT(alone.size(), 1000u);
  EXPECT_GT(alone_cycles, 0u);
}

}  // namespace kb
