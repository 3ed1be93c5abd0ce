#pragma once
// A platform around a vp::Accelerator for the tests: a host CPU with a memory socket
// (through a protocol monitor to the hbm socket) and a plain tlm_utils socket to the
// register block, and what a driver does with them.
#include <gtest/gtest.h>

#include <functional>
#include <string>
#include <vector>

#include <tlm_utils/simple_initiator_socket.h>

#include "models/common/binding.h"
#include "models/common/ports.h"
#include "models/common/protocol_monitor.h"
#include "tests/support.h"
#include "vp/accelerator.h"
#include "vp/host_access.h"

namespace kb::test {

// The platform's host CPU: two sockets, a thread running `program`. Its memory socket
// speaks both blocking and 4-phase non-blocking transport (InitiatorPort).
struct Host : sc_core::sc_module {
  InitiatorPort memory{"memory", [this](tlm::tlm_generic_payload&) { responded.notify(); }};
  tlm_utils::simple_initiator_socket<Host> regs{"regs"};
  sc_core::sc_event responded;
  std::function<void(Host&)> program;
  explicit Host(const sc_core::sc_module_name& n) : sc_core::sc_module(n) {
    SC_HAS_PROCESS(Host);
    SC_THREAD(run);
  }
  void run() { program(*this); }

  tlm::tlm_response_status reg(tlm::tlm_command cmd, std::uint64_t offset, std::uint32_t& value,
                               unsigned length = 4, unsigned char* byte_enables = nullptr) {
    tlm::tlm_generic_payload gp;
    gp.set_command(cmd);
    gp.set_address(offset);
    gp.set_data_ptr(reinterpret_cast<unsigned char*>(&value));
    gp.set_data_length(length);
    gp.set_streaming_width(length);
    gp.set_byte_enable_ptr(byte_enables);
    gp.set_byte_enable_length(byte_enables ? length : 0);
    gp.set_response_status(tlm::TLM_INCOMPLETE_RESPONSE);
    sc_core::sc_time t = sc_core::SC_ZERO_TIME;
    regs->b_transport(gp, t);
    return gp.get_response_status();
  }
  std::uint32_t read(std::uint64_t offset) {
    std::uint32_t v = 0;
    EXPECT_EQ(reg(tlm::TLM_READ_COMMAND, offset, v), tlm::TLM_OK_RESPONSE);
    return v;
  }
  tlm::tlm_response_status write(std::uint64_t offset, std::uint32_t v) { return reg(tlm::TLM_WRITE_COMMAND, offset, v); }
  // Queues the descriptor at `address` (already in HBM): its address, then the doorbell.
  tlm::tlm_response_status ring(std::uint64_t address) {
    EXPECT_EQ(write(vp::reg::kDescLo, static_cast<std::uint32_t>(address)), tlm::TLM_OK_RESPONSE);
    EXPECT_EQ(write(vp::reg::kDescHi, static_cast<std::uint32_t>(address >> 32)), tlm::TLM_OK_RESPONSE);
    return write(vp::reg::kDoorbell, vp::reg::kRing);
  }
  // Waits until `jobs` jobs have ended since reset, acknowledging each interrupt.
  void wait_completed(std::uint32_t jobs, const sc_core::sc_signal<bool>& irq) {
    while (read(vp::reg::kCompleted) < jobs) {
      if (!irq.read()) sc_core::wait(irq.posedge_event());
      EXPECT_EQ(write(vp::reg::kIrqAck, vp::reg::kRing), tlm::TLM_OK_RESPONSE);
      sc_core::wait(sc_core::SC_ZERO_TIME);  // the line falls a delta later
    }
  }
};

// One SIP of 2x2 cubes of 2 PEs (or, with sets, e.g. a single cube); irq drives `irq`.
struct Platform {
  explicit Platform(const std::vector<std::string>& sets = {}) : topo(test::topology("small_1sip_2x2x2", sets)) {
    bind_sockets(host.memory, monitor.target);
    monitor.initiator.bind(accel.hbm);
    host.regs.bind(accel.control);
    accel.irq.bind(irq);
  }
  Topology topo;
  vp::Accelerator accel{"accel", topo};
  ProtocolMonitor monitor{"monitor"};
  Host host{"host"};
  sc_core::sc_signal<bool> irq{"irq"};
};

}  // namespace kb::test
