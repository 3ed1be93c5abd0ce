#include "models/pe/pe_engine.h"
#include "models/common/clock.h"
#include "models/common/sim_time.h"

namespace kb {

using sc_core::sc_time;

PeEngine::PeEngine(const sc_core::sc_module_name& name, const Topology& topo, std::size_t lanes, Cause cause)
    : sc_core::sc_module(name),
      command("command"),
      topo_(topo),
      cycle_(cycle_time(topo)),
      cause_(cause),
      lanes_(lanes),
      responder_([this] { return command.operator->(); }),
      timer_(this, &PeEngine::on_timer) {
  command.register_nb_transport_fw(this, &PeEngine::nb_transport_fw);
}

std::size_t PeEngine::queued() const {
  std::size_t n = 0;
  for (const Lane& l : lanes_) n += l.waiting.size() + (l.current ? 1 : 0);
  return n;
}

tlm::tlm_sync_enum PeEngine::nb_transport_fw(tlm::tlm_generic_payload& gp, tlm::tlm_phase& phase,
                                             sc_time& delay) {
  // Commands are accepted and queued at once.
  return responder_.forward(name(), gp, phase, delay, [this](tlm::tlm_generic_payload& cmd_gp, const sc_time&) {
    const Command* cmd = admit_command(cmd_gp);
    if (cmd == nullptr) return false;
    if (cmd_gp.has_mm()) cmd_gp.acquire();
    Lane& lane = lanes_.at(lane_of(*cmd));
    lane.waiting.push_back(&cmd_gp);
    traced(queue_signal_, ++depth_);
    if (!lane.current) start_next(lane);
    return true;
  });
}

void PeEngine::record_to(Waveform& wave) {
  if (!wave.wants(name())) return;
  wave_ = &wave;
  for (std::size_t i = 0; i < lanes_.size(); ++i) {
    const std::string lane = lane_name(i);
    lanes_[i].busy_signal = wave.add(name(), lane.empty() ? "busy" : lane + "_busy", 1);
  }
  queue_signal_ = wave.add(name(), "queue", 16);
}

void PeEngine::start_next(Lane& lane) {
  if (lane.waiting.empty()) return;
  tlm::tlm_generic_payload& gp = *lane.waiting.front();
  lane.waiting.pop_front();
  lane.current = &gp;
  if (lane.in_service++ == 0) traced(lane.busy_signal, 1);
  if (in_service_++ == 0) active_since_ = sim_time();
  Command& cmd = CommandExtension::of(gp);
  cmd.started = sim_time();
  cmd.path.join(lane.freed);  // it waited for the lane, if the lane freed after it came
  cmd.path.enter(cmd.op_id);
  start(gp, cmd);
}

void PeEngine::finish_after(tlm::tlm_generic_payload& gp, const sc_time& delay) {
  timer_.notify(gp, tlm::BEGIN_RESP, delay);
}

void PeEngine::on_timer(tlm::tlm_generic_payload& gp, const tlm::tlm_phase&) { finish(gp); }

void PeEngine::finish(tlm::tlm_generic_payload& gp) {
  Command& cmd = CommandExtension::of(gp);
  cmd.finished = sim_time();
  cmd.served = true;
  if (cmd.holding > 0 && blockers_served_ != nullptr) *blockers_served_ = true;
  cmd.path.advance(ticks(cmd.finished), cause_);
  cmd.path.enter(cmd.op_id);
  busy_ += cmd.finished - cmd.started;
  completed(cmd);
  ++commands_done_;
  Lane& lane = lanes_.at(lane_of(cmd));
  if (--lane.in_service == 0) traced(lane.busy_signal, 0);
  if (--in_service_ == 0) active_ += cmd.finished - active_since_;
  traced(queue_signal_, --depth_);
  gp.set_response_status(tlm::TLM_OK_RESPONSE);
  responder_.respond(gp, sc_core::SC_ZERO_TIME);
  release(lane, gp, cmd.path);
}

void PeEngine::release(tlm::tlm_generic_payload& gp, const PathAccount& path) {
  release(lanes_.at(lane_of(CommandExtension::of(gp))), gp, path);
}

void PeEngine::release(Lane& lane, tlm::tlm_generic_payload& gp, const PathAccount& path) {
  if (lane.current != &gp) return;  // released earlier
  lane.current = nullptr;
  lane.freed = path;
  start_next(lane);
}

}  // namespace kb
