// vp::Accelerator's sockets from a platform's side: the register block refuses what it
// does not serve; the hbm socket serves every transport kind, with no protocol
// violation, honours END_RESP annotations and offers DMI; irq is a port. (Jobs:
// test_jobs.cpp.)
#include <gtest/gtest.h>

#include <cstring>

#include "models/common/payload_pool.h"
#include "tests/vp/vp_support.h"

namespace kb {
namespace {

using test::Host;
using test::Platform;
using vp::Accelerator;

// The register block serves aligned 4-byte accesses of its registers, writes only of
// the writable ones (and kRing to the doorbell and the acknowledge), and debug reads.
TEST(VpAccelerator, RegisterBlockRefusesWhatItDoesNotServe) {
  Platform p;
  p.host.program = [&](Host& h) {
    std::uint32_t v = 0;
    unsigned char enables[4] = {0xff, 0, 0xff, 0};
    EXPECT_EQ(h.read(vp::reg::kId), vp::reg::kIdValue);
    EXPECT_EQ(h.read(vp::reg::kStatus), vp::reg::kIdle);
    EXPECT_EQ(h.write(vp::reg::kStatus, 1), tlm::TLM_COMMAND_ERROR_RESPONSE);     // read-only
    EXPECT_EQ(h.write(vp::reg::kCompleted, 0), tlm::TLM_COMMAND_ERROR_RESPONSE);  // read-only
    EXPECT_EQ(h.write(vp::reg::kDoorbell, 7), tlm::TLM_COMMAND_ERROR_RESPONSE);   // not kRing
    EXPECT_EQ(h.write(vp::reg::kIrqAck, 2), tlm::TLM_COMMAND_ERROR_RESPONSE);     // not kRing
    EXPECT_EQ(h.write(vp::reg::kDescLo, 0x1240), tlm::TLM_OK_RESPONSE);
    EXPECT_EQ(h.write(vp::reg::kDescHi, 0x3), tlm::TLM_OK_RESPONSE);
    EXPECT_EQ(h.read(vp::reg::kDescLo), 0x1240u);
    EXPECT_EQ(h.read(vp::reg::kDescHi), 0x3u);
    EXPECT_EQ(h.reg(tlm::TLM_READ_COMMAND, vp::reg::kStatus, v, 2), tlm::TLM_ADDRESS_ERROR_RESPONSE);
    EXPECT_EQ(h.reg(tlm::TLM_READ_COMMAND, 0x2, v), tlm::TLM_ADDRESS_ERROR_RESPONSE);
    EXPECT_EQ(h.reg(tlm::TLM_READ_COMMAND, vp::reg::kBlockBytes, v), tlm::TLM_ADDRESS_ERROR_RESPONSE);
    EXPECT_EQ(h.reg(tlm::TLM_READ_COMMAND, vp::reg::kId, v, 4, enables), tlm::TLM_BYTE_ENABLE_ERROR_RESPONSE);
    EXPECT_EQ(h.read(vp::reg::kQueued), 0u);
    // Debug reads see the registers; a debug write changes nothing and queues nothing.
    tlm::tlm_generic_payload gp;
    gp.set_command(tlm::TLM_READ_COMMAND);
    gp.set_address(vp::reg::kDescLo);
    gp.set_data_ptr(reinterpret_cast<unsigned char*>(&v));
    gp.set_data_length(4);
    EXPECT_EQ(h.regs->transport_dbg(gp), 4u);
    EXPECT_EQ(v, 0x1240u);
    v = vp::reg::kRing;
    gp.set_command(tlm::TLM_WRITE_COMMAND);
    gp.set_address(vp::reg::kDoorbell);
    EXPECT_EQ(h.regs->transport_dbg(gp), 0u);
    EXPECT_EQ(h.read(vp::reg::kQueued), 0u);
  };
  sc_core::sc_start();
  EXPECT_EQ(p.accel.status(), vp::reg::kIdle);
}

// irq is a port: the platform binds its own interrupt line; it rises when a job ends
// (here a descriptor of bad magic, which fails at once) and falls on kIrqAck.
TEST(VpAccelerator, IrqDrivesTheInterruptLineThePlatformBindsItTo) {
  Platform p;
  std::vector<std::pair<bool, sc_core::sc_time>> seen;
  p.host.program = [&](Host& h) {
    EXPECT_FALSE(p.irq.read());
    ASSERT_EQ(h.ring(p.accel.address_map().hbm(0, 0, 0)), tlm::TLM_OK_RESPONSE);  // fresh HBM: magic 0
    sc_core::wait(p.irq.posedge_event());
    seen.emplace_back(p.irq.read(), sc_core::sc_time_stamp());
    EXPECT_EQ(h.read(vp::reg::kStatus), static_cast<std::uint32_t>(vp::reg::kFailed));
    EXPECT_EQ(h.read(vp::reg::kError), static_cast<std::uint32_t>(vp::ErrorCode::Magic));
    sc_core::wait(10, sc_core::SC_NS);
    EXPECT_TRUE(p.irq.read());  // level: stays up until acknowledged
    EXPECT_EQ(h.write(vp::reg::kIrqAck, vp::reg::kRing), tlm::TLM_OK_RESPONSE);
    sc_core::wait(p.irq.negedge_event());
    seen.emplace_back(p.irq.read(), sc_core::sc_time_stamp());
  };
  sc_core::sc_start();
  ASSERT_EQ(seen.size(), 2u);
  EXPECT_TRUE(seen[0].first);
  EXPECT_FALSE(seen[1].first);
  EXPECT_EQ(seen[1].second - seen[0].second, sc_core::sc_time(10, sc_core::SC_NS));
}

TEST(VpAccelerator, HbmSocketServesEveryTransportKind) {
  Platform p;
  const AddressMap& map = p.accel.address_map();
  const std::uint64_t a = map.hbm(3, 1, 0x1000);  // cube 3, channel 1
  p.host.program = [&](Host& h) {
    PayloadPool pool;
    std::uint32_t word = 0xC0FFEE, back = 0;
    tlm::tlm_generic_payload& gp = *pool.allocate();
    auto request = [&](tlm::tlm_command cmd, std::uint64_t address, std::uint32_t* data) {
      gp.set_command(cmd);
      gp.set_address(address);
      gp.set_data_ptr(reinterpret_cast<unsigned char*>(data));
      gp.set_data_length(4);
      gp.set_streaming_width(4);
      gp.set_response_status(tlm::TLM_INCOMPLETE_RESPONSE);
    };
    Hbm& channel = p.accel.system().hbm(PeCoord{SipId(0), CubeId(3), PeId(1)});
    // nb_transport, 4 phases: the bytes land in the channel after the fabric hop and
    // the channel's latency.
    request(tlm::TLM_WRITE_COMMAND, a, &word);
    const sc_core::sc_time sent = sc_core::sc_time_stamp();
    h.memory.send(gp);
    sc_core::wait(h.responded);
    EXPECT_EQ(gp.get_response_status(), tlm::TLM_OK_RESPONSE);
    EXPECT_GE(test::cycles(sc_core::sc_time_stamp() - sent, p.topo), p.topo.cube.hbm.latency_cycles);
    channel.store().read(0x1000, reinterpret_cast<std::uint8_t*>(&back), 4);
    EXPECT_EQ(back, word);
    // b_transport reads it back with an annotated delay.
    request(tlm::TLM_READ_COMMAND, a, &back);
    back = 0;
    sc_core::sc_time t = sc_core::SC_ZERO_TIME;
    h.memory->b_transport(gp, t);
    EXPECT_EQ(gp.get_response_status(), tlm::TLM_OK_RESPONSE);
    EXPECT_GE(test::cycles(t, p.topo), p.topo.cube.hbm.latency_cycles);
    EXPECT_EQ(back, word);
    // transport_dbg too; DMI hands out the channel's page.
    back = 0;
    EXPECT_EQ(h.memory->transport_dbg(gp), 4u);
    EXPECT_EQ(back, word);
    tlm::tlm_dmi dmi;
    ASSERT_TRUE(h.memory->get_direct_mem_ptr(gp, dmi));
    EXPECT_LE(dmi.get_start_address(), a);
    EXPECT_GE(dmi.get_end_address(), a + 3);
    EXPECT_TRUE(dmi.is_read_write_allowed());
    EXPECT_EQ(std::memcmp(dmi.get_dmi_ptr() + (a - dmi.get_start_address()), &word, 4), 0);
    // Outside HBM: an address error, not a crash.
    request(tlm::TLM_READ_COMMAND, map.mailbox(0, 0), &back);
    t = sc_core::SC_ZERO_TIME;
    h.memory->b_transport(gp, t);
    EXPECT_EQ(gp.get_response_status(), tlm::TLM_ADDRESS_ERROR_RESPONSE);
    gp.release();
  };
  sc_core::sc_start();
  EXPECT_TRUE(p.monitor.violations().empty()) << p.monitor.violations().front();
}

// How an initiator ends a response: on the return of BEGIN_RESP (TLM_UPDATED with
// END_RESP, or TLM_COMPLETED), or later with its own END_RESP call; each annotated.
enum class EndStyle { Updated, Completed, Called };

// A bus master with nothing of kernbench in it: a tlm_utils socket that reads, and ends
// every response `end_delay` after it began. Its payloads live in a vector; its memory
// manager only clears a payload's extensions when the last hold on it goes.
struct PlainMaster : sc_core::sc_module, tlm::tlm_mm_interface {
  tlm_utils::simple_initiator_socket<PlainMaster> socket{"socket"};
  EndStyle style = EndStyle::Updated;
  sc_core::sc_time end_delay{7, sc_core::SC_NS};
  std::vector<sc_core::sc_time> begun, ended;  // BEGIN_RESP seen, END_RESP annotated
  explicit PlainMaster(const sc_core::sc_module_name& n) : sc_core::sc_module(n) {
    socket.register_nb_transport_bw(this, &PlainMaster::nb_transport_bw);
  }
  void free(tlm::tlm_generic_payload* gp) override { gp->free_all_extensions(); }
  tlm::tlm_sync_enum nb_transport_bw(tlm::tlm_generic_payload& gp, tlm::tlm_phase& phase, sc_core::sc_time& delay) {
    if (phase != tlm::BEGIN_RESP) return tlm::TLM_ACCEPTED;
    const sc_core::sc_time now = sc_core::sc_time_stamp() + delay;
    begun.push_back(now);
    ended.push_back(now + end_delay);
    if (style == EndStyle::Called) {
      sc_core::sc_spawn([this, &gp, t = ended.back()] {
        sc_core::wait(t - sc_core::sc_time_stamp());
        tlm::tlm_phase end = tlm::END_RESP;
        sc_core::sc_time zero = sc_core::SC_ZERO_TIME;
        socket->nb_transport_fw(gp, end, zero);
      });
      return tlm::TLM_ACCEPTED;
    }
    delay += end_delay;
    if (style == EndStyle::Completed) return tlm::TLM_COMPLETED;
    phase = tlm::END_RESP;
    return tlm::TLM_UPDATED;
  }
};

// A response ends when the initiator's END_RESP says, not when its call returns: the
// next BEGIN_RESP on the socket never comes before that time, however it is ended.
class VpEndResp : public testing::TestWithParam<EndStyle> {};

TEST_P(VpEndResp, ResponsesWaitForTheAnnotatedEndOfThePreviousOne) {
  const Topology topo = test::topology("small_1sip_2x2x2");
  Accelerator accel("accel", topo);
  ProtocolMonitor monitor("monitor");
  PlainMaster master("master"), regs("regs");  // every socket of a platform is bound
  master.style = GetParam();
  master.socket.bind(monitor.target);
  monitor.initiator.bind(accel.hbm);
  regs.socket.bind(accel.control);
  std::vector<std::uint32_t> words(4);
  std::vector<tlm::tlm_generic_payload> gps(4);
  sc_core::sc_spawn([&] {
    for (std::uint32_t i = 0; i < gps.size(); ++i) {  // a word from each channel of cubes 0 and 1
      tlm::tlm_generic_payload& gp = gps[i];
      gp.set_mm(&master);
      gp.acquire();  // the master's own hold, never given back: the payloads outlive the run
      gp.set_command(tlm::TLM_READ_COMMAND);
      gp.set_address(accel.address_map().hbm(i / 2, i % 2, 0x40));
      gp.set_data_ptr(reinterpret_cast<unsigned char*>(&words[i]));
      gp.set_data_length(4);
      gp.set_streaming_width(4);
      gp.set_response_status(tlm::TLM_INCOMPLETE_RESPONSE);
      tlm::tlm_phase phase = tlm::BEGIN_REQ;
      sc_core::sc_time delay = sc_core::SC_ZERO_TIME;
      master.socket->nb_transport_fw(gp, phase, delay);
    }
  });
  sc_core::sc_start();
  ASSERT_EQ(master.begun.size(), gps.size());
  for (std::size_t i = 1; i < master.begun.size(); ++i)
    EXPECT_GE(master.begun[i], master.ended[i - 1]) << "response " << i << " began at " << master.begun[i];
  EXPECT_TRUE(monitor.violations().empty()) << monitor.violations().front();
  for (const auto& gp : gps) {
    EXPECT_EQ(gp.get_response_status(), tlm::TLM_OK_RESPONSE);
    EXPECT_TRUE(gp.is_dmi_allowed()) << "HBM grants DMI, and its responses say so";
  }
}

INSTANTIATE_TEST_SUITE_P(EndStyles, VpEndResp, testing::Values(EndStyle::Updated, EndStyle::Completed, EndStyle::Called),
                         [](const testing::TestParamInfo<EndStyle>& p) {
                           return std::string(p.param == EndStyle::Updated     ? "UpdatedEndResp"
                                              : p.param == EndStyle::Completed ? "Completed"
                                                                                  : "EndRespCalled");
                         });

// DMI through the hbm socket: the region comes from the address alone (a request as long
// as a channel's last 64 KiB is granted), its latency is per access (the same whatever
// length the request carries), and a plain access says DMI may be asked for.
TEST(VpAccelerator, DmiDependsOnTheAddressAloneAndAccessesOfferIt) {
  const Topology topo = test::topology("small_1sip_2x2x2");
  Accelerator accel("accel", topo);
  PlainMaster master("master"), regs("regs");
  master.socket.bind(accel.hbm);
  regs.socket.bind(accel.control);
  sc_core::sc_spawn([&] {
    std::uint32_t word = 0;
    tlm::tlm_generic_payload gp;
    auto ask = [&](std::uint64_t address, unsigned length, tlm::tlm_dmi& dmi) {
      gp.set_command(tlm::TLM_READ_COMMAND);
      gp.set_address(address);
      gp.set_data_ptr(reinterpret_cast<unsigned char*>(&word));
      gp.set_data_length(length);
      gp.set_streaming_width(length);
      return master.socket->get_direct_mem_ptr(gp, dmi);
    };
    const std::uint64_t a = accel.address_map().hbm(1, 1, 0x100);
    tlm::tlm_dmi word_dmi, block_dmi;
    ASSERT_TRUE(ask(a, 4, word_dmi));
    ASSERT_TRUE(ask(a, 64 * 1024, block_dmi));
    EXPECT_EQ(block_dmi.get_read_latency(), word_dmi.get_read_latency());
    EXPECT_EQ(block_dmi.get_write_latency(), word_dmi.get_write_latency());
    EXPECT_GE(test::cycles(word_dmi.get_read_latency(), topo), topo.cube.hbm.latency_cycles);
    const std::uint64_t last = accel.address_map().hbm(1, 1, topo.cube.hbm.capacity - 4);
    tlm::tlm_dmi end_dmi;
    ASSERT_TRUE(ask(last, 64 * 1024, end_dmi)) << "refused: the region was decoded from address plus length";
    EXPECT_LE(end_dmi.get_start_address(), last);
    EXPECT_GE(end_dmi.get_end_address(), last + 3);
    // A plain blocking read: its response allows DMI.
    gp.set_dmi_allowed(false);
    gp.set_data_length(4);
    gp.set_streaming_width(4);
    gp.set_address(a);
    gp.set_response_status(tlm::TLM_INCOMPLETE_RESPONSE);
    sc_core::sc_time t = sc_core::SC_ZERO_TIME;
    master.socket->b_transport(gp, t);
    EXPECT_EQ(gp.get_response_status(), tlm::TLM_OK_RESPONSE);
    EXPECT_TRUE(gp.is_dmi_allowed());
  });
  sc_core::sc_start();
}

TEST(VpAccelerator, ATopologyOfSeveralSipsIsRefused) {
  EXPECT_THROW(
      {
        try {
          Accelerator a("a", test::topology("tiny_2sip_4x1x1"));
        } catch (const std::invalid_argument& e) {
          EXPECT_NE(std::string(e.what()).find("system.sips = 2"), std::string::npos) << e.what();
          throw;
        }
      },
      std::invalid_argument);
}

}  // namespace
}  // namespace kb
