// Interoperability: an initiator written here with plain tlm_utils sockets drives Hbm
// through the 4-phase base protocol and through b_transport / transport_dbg.
#include <gtest/gtest.h>

#include <tlm_utils/simple_initiator_socket.h>

#include "models/cube/hbm.h"
#include "models/common/clock.h"
#include "tests/support.h"

namespace kb {
namespace {

using sc_core::sc_time;
using sc_core::SC_NS;

struct PlainInitiator : sc_core::sc_module {
  tlm_utils::simple_initiator_socket<PlainInitiator> socket{"socket"};
  std::vector<std::pair<tlm::tlm_generic_payload*, sc_time>> responses;  // BEGIN_RESP seen
  sc_core::sc_event response_event;
  bool complete_on_response = true;  // else answer TLM_ACCEPTED and send END_RESP later
  sc_time end_delay = sc_core::SC_ZERO_TIME;  // how long after BEGIN_RESP a completion ends it

  explicit PlainInitiator(const sc_core::sc_module_name& n) : sc_core::sc_module(n) {
    socket.register_nb_transport_bw(this, &PlainInitiator::nb_transport_bw);
  }

  tlm::tlm_sync_enum nb_transport_bw(tlm::tlm_generic_payload& gp, tlm::tlm_phase& phase, sc_time& delay) {
    EXPECT_EQ(phase, tlm::BEGIN_RESP);
    responses.emplace_back(&gp, sc_core::sc_time_stamp() + delay);
    response_event.notify(delay);
    if (!complete_on_response) return tlm::TLM_ACCEPTED;
    delay += end_delay;
    return tlm::TLM_COMPLETED;
  }

  // Sends BEGIN_REQ and checks the target accepts it at once with END_REQ.
  void begin(tlm::tlm_generic_payload& gp) {
    tlm::tlm_phase phase = tlm::BEGIN_REQ;
    sc_time delay = sc_core::SC_ZERO_TIME;
    EXPECT_EQ(socket->nb_transport_fw(gp, phase, delay), tlm::TLM_UPDATED);
    EXPECT_EQ(phase, tlm::END_REQ);
  }
  void end_response(tlm::tlm_generic_payload& gp) {
    tlm::tlm_phase phase = tlm::END_RESP;
    sc_time delay = sc_core::SC_ZERO_TIME;
    EXPECT_EQ(socket->nb_transport_fw(gp, phase, delay), tlm::TLM_COMPLETED);
  }
};

void setup(tlm::tlm_generic_payload& gp, tlm::tlm_command cmd, std::uint64_t addr, std::uint8_t* data,
           unsigned len) {
  gp.set_command(cmd);
  gp.set_address(addr);
  gp.set_data_ptr(data);
  gp.set_data_length(len);
  gp.set_streaming_width(len);
  gp.set_byte_enable_ptr(nullptr);
  gp.set_response_status(tlm::TLM_INCOMPLETE_RESPONSE);
}

struct Bench {
  Topology topo = test::topology("small_1sip_2x2x2");
  Hbm hbm{"hbm", topo, 0x1000'0000};
  PlainInitiator cpu{"cpu"};
  Bench() { cpu.socket.bind(hbm.socket); }
  sc_time cycles(std::uint64_t n) const { return cycle_time(topo) * static_cast<double>(n); }
};

}  // namespace

TEST(HbmInterop, BlockingTransportWritesReadsAndAnnotatesTime) {
  Bench b;
  std::vector<std::uint8_t> out(256), in(256, 0);
  for (unsigned i = 0; i < out.size(); ++i) out[i] = static_cast<std::uint8_t>(255 - i);
  sc_core::sc_spawn([&] {
    tlm::tlm_generic_payload gp;
    sc_time delay = sc_core::SC_ZERO_TIME;
    setup(gp, tlm::TLM_WRITE_COMMAND, 0x1000'0040, out.data(), 256);
    b.cpu.socket->b_transport(gp, delay);
    EXPECT_TRUE(gp.is_response_ok());
    EXPECT_EQ(delay, b.cycles(120 + 256 / 64));  // latency + bytes/bw on an idle channel
    sc_core::wait(delay);
    delay = sc_core::SC_ZERO_TIME;
    setup(gp, tlm::TLM_READ_COMMAND, 0x1000'0040, in.data(), 256);
    b.cpu.socket->b_transport(gp, delay);
    EXPECT_TRUE(gp.is_response_ok());
    EXPECT_EQ(in, out);
    // Debug transport sees the same bytes without advancing time.
    std::vector<std::uint8_t> dbg(256);
    setup(gp, tlm::TLM_READ_COMMAND, 0x1000'0040, dbg.data(), 256);
    EXPECT_EQ(b.cpu.socket->transport_dbg(gp), 256u);
    EXPECT_EQ(dbg, out);
  });
  sc_core::sc_start();
}

TEST(HbmInterop, FourPhaseWriteThenReadBack) {
  Bench b;
  std::vector<std::uint8_t> out(2048), in(2048, 0);
  for (unsigned i = 0; i < out.size(); ++i) out[i] = static_cast<std::uint8_t>(i * 13);
  sc_core::sc_spawn([&] {
    tlm::tlm_generic_payload w, r;
    setup(w, tlm::TLM_WRITE_COMMAND, 0x1000'8000, out.data(), 2048);
    b.cpu.begin(w);
    sc_core::wait(b.cpu.response_event);
    ASSERT_EQ(b.cpu.responses.size(), 1u);
    EXPECT_EQ(b.cpu.responses[0].second, b.cycles(120 + 32));
    EXPECT_TRUE(w.is_response_ok());
    setup(r, tlm::TLM_READ_COMMAND, 0x1000'8000, in.data(), 2048);
    b.cpu.begin(r);
    sc_core::wait(b.cpu.response_event);
    ASSERT_EQ(b.cpu.responses.size(), 2u);
    EXPECT_EQ(b.cpu.responses[1].second, b.cycles(2 * (120 + 32)));
    EXPECT_TRUE(r.is_response_ok());
    EXPECT_EQ(in, out);
  });
  sc_core::sc_start();
}

// Two 64-byte reads sent back to back: on the wire g1 [0,1), g2 [1,2); their answers are
// due at 121 and 122 cycles.
struct TwoReads {
  std::vector<std::uint8_t> buf1 = std::vector<std::uint8_t>(64), buf2 = std::vector<std::uint8_t>(64);
  tlm::tlm_generic_payload g1, g2;
  void send(Bench& b) {
    setup(g1, tlm::TLM_READ_COMMAND, 0x1000'0000, buf1.data(), 64);
    setup(g2, tlm::TLM_READ_COMMAND, 0x1000'0100, buf2.data(), 64);
    b.cpu.begin(g1);
    b.cpu.begin(g2);
  }
};

TEST(HbmInterop, ResponsesWaitForEndRespOfThePreviousOne) {
  // Base-protocol response exclusion: while the initiator holds a response (it answered
  // BEGIN_RESP with TLM_ACCEPTED), the target sends no other BEGIN_RESP.
  Bench b;
  b.cpu.complete_on_response = false;
  sc_core::sc_spawn([&] {
    TwoReads r;
    tlm::tlm_generic_payload &g1 = r.g1, &g2 = r.g2;
    r.send(b);
    sc_core::wait(b.cpu.response_event);
    EXPECT_EQ(b.cpu.responses.size(), 1u);
    sc_core::wait(b.cycles(500));  // hold g1's response
    EXPECT_EQ(b.cpu.responses.size(), 1u) << "second BEGIN_RESP before END_RESP";
    b.cpu.end_response(g1);
    sc_core::wait(b.cpu.response_event);
    ASSERT_EQ(b.cpu.responses.size(), 2u);
    EXPECT_EQ(b.cpu.responses[1].second, b.cycles(121 + 500));
    b.cpu.end_response(g2);
  });
  sc_core::sc_start();
  EXPECT_EQ(b.cpu.responses.at(0).second, b.cycles(121));
}

TEST(HbmInterop, AResponseCompletedWithADelayHoldsTheNextUntilThen) {
  // TLM_COMPLETED on BEGIN_RESP with 7 ns annotated: the response ends 7 ns later, and
  // the channel's next BEGIN_RESP waits for that (at 121 + 7, not 122 cycles).
  Bench b;
  b.cpu.end_delay = sc_time(7, SC_NS);
  sc_core::sc_spawn([&] {
    TwoReads r;
    r.send(b);
    sc_core::wait(b.cycles(1000));
  });
  sc_core::sc_start();
  ASSERT_EQ(b.cpu.responses.size(), 2u);
  EXPECT_EQ(b.cpu.responses[0].second, b.cycles(121));
  EXPECT_EQ(b.cpu.responses[1].second, b.cycles(121) + sc_time(7, SC_NS));
}

TEST(HbmInterop, RefusedAccessesCarryTheRightResponseStatus) {
  Bench b;
  std::vector<std::uint8_t> buf(64);
  std::uint8_t enables[4] = {0xff, 0, 0xff, 0};
  sc_core::sc_spawn([&] {
    tlm::tlm_generic_payload gp;
    sc_time delay = sc_core::SC_ZERO_TIME;
    setup(gp, tlm::TLM_READ_COMMAND, 0x0, buf.data(), 64);  // below the channel's base
    b.cpu.socket->b_transport(gp, delay);
    EXPECT_EQ(gp.get_response_status(), tlm::TLM_ADDRESS_ERROR_RESPONSE);
    setup(gp, tlm::TLM_READ_COMMAND, 0x1000'0000 + b.topo.cube.hbm.capacity - 32, buf.data(), 64);
    tlm::tlm_phase phase = tlm::BEGIN_REQ;
    EXPECT_EQ(b.cpu.socket->nb_transport_fw(gp, phase, delay), tlm::TLM_COMPLETED);
    EXPECT_EQ(gp.get_response_status(), tlm::TLM_ADDRESS_ERROR_RESPONSE);
    setup(gp, tlm::TLM_WRITE_COMMAND, 0x1000'0000, buf.data(), 64);
    gp.set_byte_enable_ptr(enables);
    gp.set_byte_enable_length(4);
    b.cpu.socket->b_transport(gp, delay);
    EXPECT_EQ(gp.get_response_status(), tlm::TLM_BYTE_ENABLE_ERROR_RESPONSE);
    setup(gp, tlm::TLM_WRITE_COMMAND, 0x1000'0000, buf.data(), 64);
    gp.set_streaming_width(16);
    b.cpu.socket->b_transport(gp, delay);
    EXPECT_EQ(gp.get_response_status(), tlm::TLM_BURST_ERROR_RESPONSE);
  });
  sc_core::sc_start();
}

}  // namespace kb
