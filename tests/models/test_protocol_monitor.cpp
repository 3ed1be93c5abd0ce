// The TLM-2.0 base protocol: the monitor catches initiators and targets that break the
// rules and finds none on any socket of a cube during a full decode and prefill; the
// models' targets refuse what they do not serve with the proper response status.
#include <gtest/gtest.h>

#include <algorithm>
#include <memory>

#include <tlm_utils/simple_initiator_socket.h>
#include <tlm_utils/simple_target_socket.h>

#include "workloads/gqa_decode/decode_run.h"
#include "workloads/gqa_prefill/prefill_run.h"
#include "models/common/binding.h"
#include "models/common/payload_pool.h"
#include "models/common/protocol_monitor.h"
#include "models/pe/command.h"
#include "tests/kernels/tl_support.h"

namespace kb {
namespace {

// A target that breaks rules on request: answers BEGIN_REQ as `reply` says.
struct RudeTarget : sc_core::sc_module {
  tlm_utils::simple_target_socket<RudeTarget> socket{"socket"};
  enum class Reply { EndReqThenBeginRespTwice, UpdatedWithBeginReq, CompletedIncomplete } reply;
  RudeTarget(const sc_core::sc_module_name& n, Reply r) : sc_core::sc_module(n), reply(r) {
    socket.register_nb_transport_fw(this, &RudeTarget::fw);
  }
  tlm::tlm_sync_enum fw(tlm::tlm_generic_payload& gp, tlm::tlm_phase& phase, sc_core::sc_time&) {
    if (phase != tlm::BEGIN_REQ) return tlm::TLM_COMPLETED;
    switch (reply) {
      case Reply::UpdatedWithBeginReq:
        return tlm::TLM_UPDATED;  // phase left at BEGIN_REQ
      case Reply::CompletedIncomplete:
        return tlm::TLM_COMPLETED;  // status left TLM_INCOMPLETE_RESPONSE
      case Reply::EndReqThenBeginRespTwice:
        break;
    }
    gp.set_response_status(tlm::TLM_OK_RESPONSE);
    sc_core::sc_time t = sc_core::SC_ZERO_TIME;
    for (int i = 0; i < 2; ++i) {
      tlm::tlm_phase p = tlm::BEGIN_RESP;
      socket->nb_transport_bw(gp, p, t);
    }
    phase = tlm::END_REQ;
    return tlm::TLM_UPDATED;  // END_REQ after BEGIN_RESP: the request had ended
  }
};

// An initiator with no manners: a second BEGIN_REQ before END_REQ, END_RESP with no
// BEGIN_RESP, BEGIN_RESP on the forward path.
struct RudeInitiator : sc_core::sc_module {
  tlm_utils::simple_initiator_socket<RudeInitiator> socket{"socket"};
  explicit RudeInitiator(const sc_core::sc_module_name& n) : sc_core::sc_module(n) {
    socket.register_nb_transport_bw(this, &RudeInitiator::bw);
  }
  tlm::tlm_sync_enum bw(tlm::tlm_generic_payload&, tlm::tlm_phase&, sc_core::sc_time&) { return tlm::TLM_ACCEPTED; }
  void send(tlm::tlm_generic_payload& gp, tlm::tlm_phase phase) {
    sc_core::sc_time t = sc_core::SC_ZERO_TIME;
    socket->nb_transport_fw(gp, phase, t);
  }
};

// A target that accepts BEGIN_REQ and keeps it (never END_REQ).
struct SilentTarget : sc_core::sc_module {
  tlm_utils::simple_target_socket<SilentTarget> socket{"socket"};
  explicit SilentTarget(const sc_core::sc_module_name& n) : sc_core::sc_module(n) {
    socket.register_nb_transport_fw(this, &SilentTarget::fw);
  }
  tlm::tlm_sync_enum fw(tlm::tlm_generic_payload&, tlm::tlm_phase&, sc_core::sc_time&) { return tlm::TLM_ACCEPTED; }
};

bool has(const std::vector<std::string>& v, const std::string& text) {
  for (const auto& s : v)
    if (s.find(text) != std::string::npos) return true;
  return false;
}

tlm::tlm_generic_payload& payload(PayloadPool& pool) {
  tlm::tlm_generic_payload& gp = *pool.allocate();
  gp.set_command(tlm::TLM_WRITE_COMMAND);
  gp.set_address(0x40);
  gp.set_data_length(4);
  gp.set_streaming_width(4);
  gp.set_response_status(tlm::TLM_INCOMPLETE_RESPONSE);
  return gp;
}

TEST(ProtocolMonitor, CatchesAnInitiatorsWrongPhaseSequence) {
  RudeInitiator init("init");
  SilentTarget target("target");
  ProtocolMonitor mon("mon");
  bind_sockets(init.socket, mon.target);
  bind_sockets(mon.initiator, target.socket);
  PayloadPool pool;
  tlm::tlm_generic_payload &a = payload(pool), &b = payload(pool), &c = payload(pool);
  init.send(a, tlm::BEGIN_REQ);
  init.send(b, tlm::BEGIN_REQ);  // before END_REQ of a
  init.send(c, tlm::END_RESP);   // never had a response
  init.send(a, tlm::BEGIN_RESP);  // a target's phase
  b.set_response_status(tlm::TLM_OK_RESPONSE);
  init.send(b, tlm::BEGIN_REQ);  // b again, and with a status set
  const auto& v = mon.violations();
  EXPECT_TRUE(has(v, "BEGIN_REQ before END_REQ of the previous request")) << ::testing::PrintToString(v);
  EXPECT_TRUE(has(v, "END_RESP without a BEGIN_RESP"));
  EXPECT_TRUE(has(v, "the initiator sent BEGIN_RESP on the forward path"));
  EXPECT_TRUE(has(v, "BEGIN_REQ for a transaction already in progress"));
  EXPECT_TRUE(has(v, "BEGIN_REQ with a response status other than TLM_INCOMPLETE_RESPONSE"));
  EXPECT_EQ(v.size(), 6u) << ::testing::PrintToString(v);  // b's second BEGIN_REQ also breaks exclusion
}

TEST(ProtocolMonitor, CatchesATargetsWrongAnswers) {
  using Reply = RudeTarget::Reply;
  const std::pair<Reply, std::vector<std::string>> cases[] = {
      {Reply::EndReqThenBeginRespTwice, {"BEGIN_RESP twice", "END_REQ after the request had ended"}},
      {Reply::UpdatedWithBeginReq, {"BEGIN_REQ answered TLM_UPDATED with phase BEGIN_REQ"}},
      {Reply::CompletedIncomplete, {"response given with status TLM_INCOMPLETE_RESPONSE"}},
  };
  PayloadPool pool;
  int i = 0;
  for (const auto& [reply, expected] : cases) {
    const std::string n = std::to_string(i++);
    RudeInitiator init(("init" + n).c_str());
    RudeTarget target(("target" + n).c_str(), reply);
    ProtocolMonitor mon(("mon" + n).c_str());
    bind_sockets(init.socket, mon.target);
    bind_sockets(mon.initiator, target.socket);
    init.send(payload(pool), tlm::BEGIN_REQ);
    for (const auto& e : expected) EXPECT_TRUE(has(mon.violations(), e)) << e << ::testing::PrintToString(mon.violations());
    EXPECT_EQ(mon.violations().size(), expected.size()) << ::testing::PrintToString(mon.violations());
  }
}

// Stands in for a target (an initiator's socket must be bound) and records nothing.
struct Sink : sc_core::sc_module {
  tlm_utils::simple_target_socket<Sink> socket{"socket"};
  explicit Sink(const sc_core::sc_module_name& n) : sc_core::sc_module(n) {}
};

// A third-party initiator in the place of the model's own on chosen target sockets (the
// model's initiator goes to a Sink), sending what those targets do not serve.
struct Intruder : sc_core::sc_module {
  std::vector<std::unique_ptr<tlm_utils::simple_initiator_socket<Intruder>>> sockets;
  std::vector<std::unique_ptr<Sink>> sinks;
  std::function<void(Intruder&)> program;
  explicit Intruder(const sc_core::sc_module_name& n) : sc_core::sc_module(n) {
    SC_HAS_PROCESS(Intruder);
    SC_THREAD(run);
  }
  void run() { program(*this); }
  tlm::tlm_response_status send(std::size_t socket, tlm::tlm_generic_payload& gp) {
    sc_core::sc_time t = sc_core::SC_ZERO_TIME;
    gp.set_response_status(tlm::TLM_INCOMPLETE_RESPONSE);
    (*sockets.at(socket))->b_transport(gp, t);
    return gp.get_response_status();
  }
};

TEST(ProtocolConformance, TargetsRefuseWhatTheyDoNotServeWithTheRightStatus) {
  Intruder intruder("intruder");
  const std::vector<std::string> targets = {"system.sip0.cube0.pe0.math.command", "system.sip0.cube0.pe0.ipcq.mailbox"};
  set_interposer([&](InitiatorSocketBase& init, TargetSocketBase& target) {
    if (std::find(targets.begin(), targets.end(), target.get_base_export().name()) == targets.end()) return false;
    const std::string n = std::to_string(intruder.sockets.size());
    auto& mine = intruder.sockets.emplace_back(
        std::make_unique<tlm_utils::simple_initiator_socket<Intruder>>(("socket" + n).c_str()));
    auto& sink = intruder.sinks.emplace_back(std::make_unique<Sink>(("sink" + n).c_str()));
    bind_sockets(*mine, target);
    bind_sockets(init, sink->socket);
    return true;
  });
  test::Machine m;
  set_interposer({});
  ASSERT_EQ(intruder.sockets.size(), 2u);
  std::vector<tlm::tlm_response_status> got;
  intruder.program = [&](Intruder& in) {
    std::uint8_t data[8] = {};
    unsigned char enables[8] = {0xff};
    Command cmd;
    cmd.kind = Command::Kind::Math;
    tlm::tlm_generic_payload gp;
    gp.set_data_ptr(data);
    gp.set_data_length(8);
    gp.set_command(tlm::TLM_IGNORE_COMMAND);
    got.push_back(in.send(0, gp));  // an engine command with no Command
    CommandExtension ext;
    ext.command = &cmd;
    gp.set_extension(&ext);
    gp.set_byte_enable_ptr(enables);
    gp.set_byte_enable_length(8);
    got.push_back(in.send(0, gp));  // a Command with byte enables
    gp.clear_extension(&ext);
    gp.set_command(tlm::TLM_READ_COMMAND);
    got.push_back(in.send(1, gp));  // a mailbox takes writes only
    gp.set_command(tlm::TLM_WRITE_COMMAND);
    got.push_back(in.send(1, gp));  // ... without byte enables
    gp.set_byte_enable_ptr(nullptr);
    gp.set_byte_enable_length(0);
    gp.set_streaming_width(2);
    got.push_back(in.send(1, gp));  // ... and whole
  };
  sc_core::sc_start();
  EXPECT_EQ(got, (std::vector<tlm::tlm_response_status>{
                     tlm::TLM_COMMAND_ERROR_RESPONSE, tlm::TLM_BYTE_ENABLE_ERROR_RESPONSE,
                     tlm::TLM_COMMAND_ERROR_RESPONSE, tlm::TLM_BYTE_ENABLE_ERROR_RESPONSE,
                     tlm::TLM_BURST_ERROR_RESPONSE}));
}

// Monitors on every socket of cube 5 of SIP 0 and of its NOC router (an inner cube:
// traffic between other cubes passes it; and a link port), then a whole kernel of the default machine.
struct MonitoredMachine {
  MonitorInterposer monitors{{"system.sip0.cube5", "system.sip0.noc.router5"}};
  test::Machine m{"llama70b_4sip", false};
};

// Every socket of the cube and its router monitored, no violation, nothing left open, and at least the
// two command hops (CPU -> scheduler -> engine) of every engine op the cube's PEs logged.
void expect_clean(const MonitorInterposer& monitors, const RuntimeContext& rt, const Topology& topo) {
  // Per PE: cpu, 4 scheduler, dma, ipcq, hbm, mailbox; fabric <-> router; the router's
  // links to and from its 4 neighbours; and, cube 5 being a link port of the default
  // machine, the router's sockets to and from the SIP's link port.
  EXPECT_EQ(monitors.monitors().size(), topo.cube.pes * 9 + 2 + 8 + 2);
  std::uint64_t engine_ops = 0;
  for (const OpRecord& r : rt.op_log().records())
    engine_ops += r.pe.sip.value == 0 && r.pe.cube.value == 5 && r.engine != "cpu" && r.engine != "phase";
  EXPECT_GT(engine_ops, 0u);
  EXPECT_GE(monitors.transactions(), 2 * engine_ops);
  EXPECT_EQ(monitors.open_transactions(), 0u);
  const auto v = monitors.violations();
  EXPECT_TRUE(v.empty()) << v.size() << " violations, the first: " << v.front();
}

TEST(ProtocolMonitor, FullDecodeHasNoViolationOnAnySocketOfACube) {
  MonitoredMachine mm;
  gqa::DecodeConfig c;  // the headline: H_q 64, H_kv 8, d 128, S 32768 on 4 SIPs
  const gqa::DecodeResult r = gqa::run_decode(mm.m.rt, c, nullptr);
  EXPECT_GT(r.cycles, 0u);
  expect_clean(mm.monitors, mm.m.rt, mm.m.topo);
}

TEST(ProtocolMonitor, FullPrefillHasNoViolationOnAnySocketOfACube) {
  MonitoredMachine mm;
  gqa::PrefillConfig c;
  c.s = 4096;
  const gqa::PrefillResult r = gqa::run_prefill(mm.m.rt, c, nullptr);
  EXPECT_GT(r.cycles, 0u);
  expect_clean(mm.monitors, mm.m.rt, mm.m.topo);
}

}  // namespace
}  // namespace kb
