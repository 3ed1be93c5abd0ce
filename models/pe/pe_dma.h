#pragma once
// PeDma: moves bytes between HBM (anywhere in the SIP) and the PE's TCM. A read channel
// and a write channel each take their commands in order and cut each into bursts of
// pe.dma.burst bytes; at most pe.dma.outstanding bursts of a channel are in flight.
// One command at a time issues bursts; the next starts issuing as soon as the previous
// has issued its last one, so a queue of commands streams like one long transfer.
#include <array>
#include <deque>
#include <vector>

#include "models/common/path_extension.h"
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
    Command* cmd = nullptr;  // command's (looked up once, not at every burst)
    std::uint64_t issued = 0, completed = 0;
  };
  struct Channel {
    std::deque<Transfer> active;  // the front ones may be completing; the back one issues
    std::uint32_t in_flight = 0;
  };
  std::size_t lane_of(const Command& cmd) const override;
  const char* lane_name(std::size_t lane) const override { return lane == 0 ? "read" : "write"; }
  void start(tlm::tlm_generic_payload& gp, Command& cmd) override;
  // Issues what the window allows; `path`: the account of what let them go (the
  // command's start, or the burst whose completion freed a place in the window).
  void issue_bursts(std::size_t lane, const PathAccount& path);
  void burst_done(tlm::tlm_generic_payload& burst);

  // A burst's critical-path account (what the blocks it crosses read as its
  // PathExtension) and the transfer it belongs to, in one extension set once on each of
  // the DMA's payloads: one lookup a burst where two were.
  struct BurstExtension : PathExtension {
    Transfer* transfer = nullptr;
    tlm::tlm_extension_base* clone() const override { return new BurstExtension(*this); }
    void copy_from(const tlm::tlm_extension_base& other) override {
      *this = static_cast<const BurstExtension&>(other);
    }
  };
  static BurstExtension& burst_state(tlm::tlm_generic_payload& burst);

  std::array<Channel, 2> channels_;  // read, write
  std::array<std::uint64_t, 2> bytes_{};
  PayloadPool data_pool_, timing_pool_{true};
  std::vector<std::uint8_t> timing_buffer_;  // payload target for timing-only bursts
};

}  // namespace kb
