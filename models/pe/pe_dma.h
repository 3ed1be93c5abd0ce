#pragma once
// PeDma: moves bytes between HBM (anywhere in the SIP) and the PE's TCM. A read channel
// and a write channel each serve one command at a time; a command is cut into bursts of
// pe.dma.burst bytes with up to pe.dma.outstanding bursts in flight.
#include <array>
#include <vector>

#include "models/common/payload_pool.h"
#include "models/common/ports.h"
#include "models/pe/pe_engine.h"

namespace kb {

class PeDma : public PeEngine {
 public:
  InitiatorPort memory;  // to the cube fabric

  PeDma(const sc_core::sc_module_name& name, const Topology& topo);

  std::uint64_t bytes_read() const { return bytes_[0]; }
  std::uint64_t bytes_written() const { return bytes_[1]; }

 private:
  struct Transfer {
    tlm::tlm_generic_payload* command = nullptr;
    std::uint64_t issued = 0, completed = 0;
    std::uint32_t in_flight = 0;
  };
  std::size_t lane_of(const Command& cmd) const override;
  void start(tlm::tlm_generic_payload& gp, Command& cmd) override;
  void issue_bursts(std::size_t lane);
  void burst_done(tlm::tlm_generic_payload& burst);

  std::array<Transfer, 2> transfers_;  // read, write
  std::array<std::uint64_t, 2> bytes_{};
  PayloadPool pool_;
  std::vector<std::uint8_t> timing_buffer_;  // payload target for timing-only bursts
};

}  // namespace kb
