#include "models/pe/pe_dma.h"

#include <algorithm>
#include <sstream>

#include "models/common/sim_time.h"

namespace kb {

PeDma::PeDma(const sc_core::sc_module_name& name, const Topology& topo)
    : PeEngine(name, topo, 2, Cause::Dma),
      memory("memory", [this](tlm::tlm_generic_payload& gp) { burst_done(gp); }),
      timing_buffer_(topo.pe.dma.burst_bytes) {}

std::size_t PeDma::lane_of(const Command& cmd) const {
  return cmd.kind == Command::Kind::DmaWrite ? 1 : 0;
}

void PeDma::start(tlm::tlm_generic_payload& gp, Command& cmd) {
  if (cmd.bytes == 0) {
    finish(gp);
    return;
  }
  channels_[lane_of(cmd)].active.push_back(Transfer{&gp, &cmd, 0, 0});
  issue_bursts(lane_of(cmd), cmd.path);
}

void PeDma::issue_bursts(std::size_t lane, const PathAccount& path) {
  Channel& ch = channels_[lane];
  if (ch.active.empty()) return;
  Transfer& t = ch.active.back();
  const Command& cmd = *t.cmd;
  if (ch.in_flight == topo_.pe.dma.outstanding || t.issued == cmd.bytes) return;  // nothing to issue
  PathAccount issuer = cmd.path;
  issuer.join(path);
  issuer.enter(cmd.op_id);
  while (ch.in_flight < topo_.pe.dma.outstanding && t.issued < cmd.bytes) {
    const std::uint64_t len = std::min(topo_.pe.dma.burst_bytes, cmd.bytes - t.issued);
    tlm::tlm_generic_payload* burst = cmd.tcm != nullptr ? data_pool_.allocate() : timing_pool_.allocate();
    burst->set_command(lane == 0 ? tlm::TLM_READ_COMMAND : tlm::TLM_WRITE_COMMAND);
    burst->set_address(cmd.address + t.issued);
    burst->set_data_length(static_cast<unsigned int>(len));
    burst->set_streaming_width(static_cast<unsigned int>(len));
    burst->set_response_status(tlm::TLM_INCOMPLETE_RESPONSE);
    burst->set_data_ptr(cmd.tcm != nullptr ? cmd.tcm + t.issued : timing_buffer_.data());
    BurstExtension& state = burst_state(*burst);
    state.transfer = &t;
    state.account = issuer;
    t.issued += len;
    ++ch.in_flight;
    memory.send(*burst);
  }
  // All bursts out: the channel takes its next command while these complete.
  if (t.issued == cmd.bytes) release(*t.command, issuer);
}

PeDma::BurstExtension& PeDma::burst_state(tlm::tlm_generic_payload& burst) {
  // The DMA's own pools' payloads: their PathExtension is always a BurstExtension.
  if (auto* state = burst.get_extension<PathExtension>()) return *static_cast<BurstExtension*>(state);
  auto* state = new BurstExtension;
  burst.set_extension<PathExtension>(state);
  return *state;
}

void PeDma::burst_done(tlm::tlm_generic_payload& burst) {
  if (!burst.is_response_ok()) {
    std::ostringstream msg;
    msg << "DMA burst to address 0x" << std::hex << burst.get_address() << " failed: "
        << burst.get_response_string();
    SC_REPORT_ERROR(name(), msg.str().c_str());
  }
  const std::size_t lane = burst.is_write() ? 1 : 0;
  Channel& ch = channels_[lane];
  BurstExtension& state = burst_state(burst);
  Transfer& t = *state.transfer;
  PathAccount& path = state.account;  // the burst is released last
  path.advance(ticks(sim_time()), Cause::Dma);
  t.completed += burst.get_data_length();
  bytes_[lane] += burst.get_data_length();
  add_work(burst.get_data_length(), 0);
  tally(burst.is_write() ? Act::TcmRead : Act::TcmWrite,
        burst.get_data_length());  // a store's bytes came from the TCM
  --ch.in_flight;
  // Commands complete in order: responses of one channel come back in issue order.
  while (!ch.active.empty()) {
    Transfer& front = ch.active.front();
    if (front.completed < front.cmd->bytes) break;
    tlm::tlm_generic_payload* done = front.command;
    front.cmd->path.join(path);
    ch.active.pop_front();
    finish(*done);
  }
  issue_bursts(lane, path);
  burst.release();
}

}  // namespace kb
