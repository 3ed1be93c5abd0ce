#include "models/pe/pe_scheduler.h"

#include <algorithm>
#include <utility>

#include "models/common/path_extension.h"
#include "models/common/sim_time.h"

namespace kb {

PeScheduler::PeScheduler(const sc_core::sc_module_name& name, PeTcm& tcm)
    : sc_core::sc_module(name),
      cpu("cpu"),
      dma("dma", [this](tlm::tlm_generic_payload& gp) { engine_done(gp); }),
      gemm("gemm", [this](tlm::tlm_generic_payload& gp) { engine_done(gp); }),
      math("math", [this](tlm::tlm_generic_payload& gp) { engine_done(gp); }),
      ipcq("ipcq", [this](tlm::tlm_generic_payload& gp) { engine_done(gp); }),
      tcm_(tcm),
      responder_([this] { return cpu.operator->(); }) {
  cpu.register_nb_transport_fw(this, &PeScheduler::nb_transport_fw);
}

InitiatorPort& PeScheduler::engine(EngineKind e) {
  switch (e) {
    case EngineKind::Dma: return dma;
    case EngineKind::Gemm: return gemm;
    case EngineKind::Math: return math;
    case EngineKind::Ipcq: return ipcq;
  }
  return dma;
}

tlm::tlm_sync_enum PeScheduler::nb_transport_fw(tlm::tlm_generic_payload& gp, tlm::tlm_phase& phase,
                                                sc_core::sc_time& delay) {
  return responder_.forward(name(), gp, phase, delay, [this](tlm::tlm_generic_payload& cmd_gp, const sc_core::sc_time&) {
    const Command* admitted = admit_command(cmd_gp);
    if (admitted == nullptr) return false;
    if (cmd_gp.has_mm()) cmd_gp.acquire();
    const Command& cmd = *admitted;
    if (cmd.waits_for.empty() && !cmd.receive && !(cmd.kind == Command::Kind::Send && holds_send_like(cmd))) {
      dispatch(cmd_gp);
    } else {
      held_.emplace_back(&cmd_gp, cmd);
      if (cmd.receive) unmatched_mail_ = true;
      release_held(held_.size() - 1);
    }
    return true;
  });
}

void PeScheduler::attach(PeIpcq& mailbox) {
  mailbox_ = &mailbox;
  mailbox.on_message([this] {
    unmatched_mail_ = true;
    release_held(held_.size());
  });
}

void PeScheduler::watch(PeEngine& engine) { engine.report_blockers_served(blocker_served_); }

void PeScheduler::drop_held() {
  for (Held& h : std::exchange(held_, {})) {
    if (h.blocker) --h.blocker->holding;
    Command& cmd = CommandExtension::of(*h.gp);
    cmd.started = cmd.finished = sim_time();
    h.gp->set_response_status(tlm::TLM_GENERIC_ERROR_RESPONSE);
    responder_.respond(*h.gp, sc_core::SC_ZERO_TIME);
  }
  ++held_epoch_;
  unmatched_mail_ = blocker_served_ = false;
}

namespace {
// Two sends whose messages one receive queue matches in arrival order.
bool same_queue(const Command& a, const Command& b) {
  return a.kind == Command::Kind::Send && b.kind == Command::Kind::Send && a.dst_sip == b.dst_sip &&
         a.dst_cube == b.dst_cube && a.dst_pe == b.dst_pe && a.tag == b.tag;
}
}  // namespace

PeScheduler::Held::Held(tlm::tlm_generic_payload* payload, const Command& command)
    : gp(payload),
      cmd(&command),
      blocker(command.waits_for.empty() ? nullptr : command.waits_for.front().get()),
      receives(command.receive.has_value()),
      send(command.kind == Command::Kind::Send) {
  if (blocker) ++blocker->holding;
}

bool PeScheduler::Held::dependencies_served() {
  while (blocker != nullptr) {
    if (!blocker->served) return false;
    --blocker->holding;
    blocker = ++next_wait < cmd->waits_for.size() ? cmd->waits_for[next_wait].get() : nullptr;
    if (blocker) ++blocker->holding;
  }
  return true;
}

bool PeScheduler::holds_send_like(const Command& send) const {
  return std::any_of(held_.begin(), held_.end(), [&](const Held& h) { return h.send && same_queue(*h.cmd, send); });
}

void PeScheduler::dispatch(tlm::tlm_generic_payload& gp) {
  const Command& cmd = CommandExtension::of(gp);
  if (cmd.kind == Command::Kind::Composite) start_composite(gp);
  else if (cmd.kind == Command::Kind::Sequence) start_sequence(gp);
  else engine(cmd.engine()).send(gp);
}

void PeScheduler::release_held(std::size_t from) {
  ++held_epoch_;
  // The last scan left none ready. Since then a held command can have become ready only
  // if a command it waits for was served (its engine said so at once) or its message
  // came; else only what came since (from `from` on, receives that find their message)
  // is looked at, the others passed by for their place in the send order.
  std::size_t first = std::exchange(blocker_served_, false) ? 0 : from;
  if (std::exchange(unmatched_mail_, false)) {
    std::size_t i = 0;
    for (Held& h : held_) {  // messages go to the receives in the order they were issued
      if (h.receives && !h.message && mailbox_) {
        const Command::Receive& r = *h.cmd->receive;
        h.message = mailbox_->take(r.src, r.tag);
        if (h.message) first = std::min(first, i);
      }
      ++i;
    }
  }
  // The first ready command in issue order goes, then the first of those left, and so on.
  // Sends to one PE with one tag leave in the order they were issued: the receiver
  // matches them in the order they arrive. Others may overtake them. A command the scan
  // passed stays unready while nothing is served, so the scan goes on from where it
  // dispatched unless dispatching served a command or re-entered (held_epoch_).
  std::vector<const Command*>& sends_ahead = sends_ahead_;  // the held sends before position i
  sends_ahead.clear();
  std::size_t i = std::min(first, held_.size());
  for (auto h = held_.begin(); h != held_.begin() + static_cast<std::ptrdiff_t>(i); ++h)
    if (h->send) sends_ahead.push_back(h->cmd);
  while (i < held_.size()) {
    Held& h = held_[i];
    // The cheap conditions first; whether a send is in turn last.
    const bool can_go = (!h.receives || h.message) && h.dependencies_served() &&
                        (!h.send || std::none_of(sends_ahead.begin(), sends_ahead.end(),
                                                 [&](const Command* s) { return same_queue(*s, *h.cmd); }));
    if (!can_go) {
      if (h.send) sends_ahead.push_back(h.cmd);
      ++i;
      continue;
    }
    tlm::tlm_generic_payload* gp = h.gp;
    const std::optional<Message> message = std::move(h.message);
    held_.erase(held_.begin() + static_cast<std::ptrdiff_t>(i));
    Command& ready = CommandExtension::of(*gp);
    for (const CommandHandle& c : ready.waits_for) ready.path.join(c->path);
    if (message) {
      Command::Receive& r = *ready.receive;
      if (message->bytes != r.bytes)
        SC_REPORT_ERROR(name(), ("message from " + r.src.str() + " tag " + std::to_string(r.tag) + " has " + std::to_string(message->bytes) +
                                 " bytes, the receive expects " + std::to_string(r.bytes))
                                    .c_str());
      if (r.tcm && !message->data.empty()) std::copy(message->data.begin(), message->data.end(), r.tcm);
      r.arrival = message->arrival;
      r.crossings = message->crossings;
      ready.path.join(message->account);
    }
    ready.path.advance(ticks(sim_time()), Cause::Sync);
    const std::uint64_t epoch = held_epoch_;
    dispatch(*gp);
    if (held_epoch_ != epoch) {  // start again from the front, looking at all, as after any change
      i = 0;
      sends_ahead.clear();
    }
  }
}

void PeScheduler::finished(tlm::tlm_generic_payload& macro, Command& cmd, sc_core::sc_time started) {
  if (Sequence* const s = std::exchange(cmd.sequence, nullptr)) {  // a step
    cmd.started = started;
    step_done(*s, macro, cmd);
    return;
  }
  responder_.respond(macro, sc_core::SC_ZERO_TIME);
}

void PeScheduler::serve(Command& macro) {
  macro.served = true;
  if (macro.holding > 0) blocker_served_ = true;
  ++held_epoch_;
}

void PeScheduler::engine_done(tlm::tlm_generic_payload& gp) {
  ++held_epoch_;
  served(gp);
  if (!held_.empty() && (blocker_served_ || unmatched_mail_)) release_held(held_.size());  // what waited for it may start
}

void PeScheduler::served(tlm::tlm_generic_payload& gp) {
  Command& done = CommandExtension::of(gp);
  if (done.composite == nullptr) {  // a plain command: back to the CPU, or the next step
    for (Composite& c : composites_)  // GEMMs held for this load may go now
      if (!c.held.empty() && CommandExtension::of(*c.macro).after.get() == &done)
        for (auto& [tile, path] : std::exchange(c.held, {})) {
          path.join(done.path);
          issue_gemm(c, tile, path);
        }
    finished(gp, done, done.started);
    return;
  }
  Composite& c = *done.composite;
  const std::uint32_t tile = done.tile;
  gp.release();
  if (done.kind == Command::Kind::DmaRead) {
    tile_ready(c, tile, done.path);
    return;
  }
  ++c.gemms_done;
  if (c.loads < c.tiles) issue_load(c, c.loads, done.path);  // the buffer of this tile is free again
  if (c.gemms_done < c.tiles) return;
  Command& macro = CommandExtension::of(*c.macro);
  sc_core::sc_time started = sim_time();
  for (const Command& s : c.subs) started = std::min(started, s.started);
  macro.started = started;
  macro.finished = sim_time();
  macro.path = done.path;  // the last GEMM's end
  serve(macro);
  c.macro->set_response_status(tlm::TLM_OK_RESPONSE);
  tlm::tlm_generic_payload* whole = c.macro;
  // Composites finish in issue order (one GEMM FIFO); drop the finished ones at the front.
  c.macro = nullptr;
  while (!composites_.empty() && composites_.front().macro == nullptr) composites_.pop_front();
  finished(*whole, macro, started);
}

void PeScheduler::start_sequence(tlm::tlm_generic_payload& gp) {
  Sequence& s = sequences_.emplace_back();
  s.macro = &gp;
  Command& cmd = CommandExtension::of(gp);
  s.path = cmd.path;
  s.path.enter(cmd.op_id);
  // The scheduler owns the steps from here on; the CPU's copy of the command keeps only
  // its lifecycle (its step list would otherwise stay in memory for the whole run).
  s.steps = std::move(cmd.steps);
  cmd.steps.clear();
  for (Command& mine : s.steps) {
    mine.data = cmd.data;
    mine.op_id = cmd.op_id;
  }
  advance(s);
}

void PeScheduler::advance(Sequence& s) {
  if (s.in_step || s.done) return;
  if (s.next == s.steps.size()) {
    s.done = true;
    Command& macro = CommandExtension::of(*s.macro);
    macro.started = s.steps.empty() ? sim_time() : s.steps.front().started;
    macro.finished = sim_time();
    macro.path = s.path;
    serve(macro);
    s.macro->set_response_status(tlm::TLM_OK_RESPONSE);
    responder_.respond(*s.macro, sc_core::SC_ZERO_TIME);
    while (!sequences_.empty() && sequences_.front().done) sequences_.pop_front();
    if (!sequences_.empty()) {
      Sequence& next = sequences_.front();
      if (!next.in_step) next.path.join(macro.path);  // its serial step waited for this one
      advance(next);
    }
    return;
  }
  Command& step = s.steps[s.next];
  if (step.serial && &sequences_.front() != &s) return;  // earlier sequences still run
  s.in_step = true;
  ++s.next;
  step.issued = sim_time();
  step.path = s.path;
  tlm::tlm_generic_payload* gp = command_payload(pool_, step);
  step.sequence = &s;
  if (step.kind == Command::Kind::Composite) start_composite(*gp);
  else engine(step.engine()).send(*gp);
}

void PeScheduler::step_done(Sequence& s, tlm::tlm_generic_payload& gp, const Command& step) {
  s.path.join(step.path);
  gp.release();
  s.in_step = false;
  advance(s);
}

void PeScheduler::start_composite(tlm::tlm_generic_payload& gp) {
  const Command& cmd = CommandExtension::of(gp);
  composites_.emplace_back();
  Composite& c = composites_.back();
  c.macro = &gp;
  c.tiles = static_cast<std::uint32_t>((cmd.b.rows + cmd.tile_rows - 1) / cmd.tile_rows);
  c.subs.reserve(2 * c.tiles);  // a load and a GEMM a tile, never moved (they point to c)
  PathAccount path = cmd.path;
  path.enter(cmd.op_id);
  const std::uint32_t preloaded = std::min(cmd.preloaded_tiles, c.tiles);
  c.loads = preloaded;
  for (std::uint32_t t = preloaded; t < std::min(c.tiles, cmd.stage_buffers); ++t) issue_load(c, t, path);
  for (std::uint32_t t = 0; t < preloaded; ++t) tile_ready(c, t, path);
}

void PeScheduler::tile_ready(Composite& c, std::uint32_t tile, const PathAccount& path) {
  const CommandHandle& after = CommandExtension::of(*c.macro).after;
  if (after && !after->served) c.held.emplace_back(tile, path);
  else issue_gemm(c, tile, path);
}

void PeScheduler::issue_load(Composite& c, std::uint32_t tile, const PathAccount& path) {
  const Command& m = CommandExtension::of(*c.macro);
  const std::uint32_t first = tile * m.tile_rows;
  const std::uint32_t rows = std::min(m.tile_rows, m.b.rows - first);
  Command& load = c.subs.emplace_back();
  load.kind = Command::Kind::DmaRead;
  load.address = m.address + first * m.b_row_bytes;
  load.bytes = rows * m.b_row_bytes;
  load.data = m.data;
  load.op_id = m.op_id;
  if (m.data) load.tcm = tcm_.data(m.stage.offset + (tile % m.stage_buffers) * m.stage.bytes());
  ++c.loads;
  load.composite = &c;
  load.tile = tile;
  issue_sub(load, dma, path);
}

void PeScheduler::issue_gemm(Composite& c, std::uint32_t tile, const PathAccount& path) {
  const Command& m = CommandExtension::of(*c.macro);
  const std::uint32_t first = tile * m.tile_rows;
  const std::uint32_t rows = std::min(m.tile_rows, m.b.rows - first);
  Command& g = c.subs.emplace_back();
  g.kind = Command::Kind::Gemm;
  g.data = m.data;
  g.op_id = m.op_id;
  g.trans_b = m.trans_b;
  g.a = m.a;
  g.c = m.c;
  g.b = m.b;
  g.b.offset = m.stage.offset + (tile % m.stage_buffers) * m.stage.bytes();
  g.b.rows = rows;
  g.b.stride = g.b.cols;
  if (m.trans_b) {  // B rows are output columns: c[:, first:first+rows] = a x tile^T
    g.m = m.m;
    g.n = rows;
    g.k = m.k;
    g.c.offset += first * dtype_bytes(m.c.dtype);
    g.c.cols = rows;
    g.accumulate = m.accumulate;
  } else {  // B rows are the reduction dim: c += a[:, first:first+rows] x tile
    g.m = m.m;
    g.n = m.n;
    g.k = rows;
    g.a.offset += first * dtype_bytes(m.a.dtype);
    g.a.cols = rows;
    g.accumulate = m.accumulate || tile > 0;
  }
  g.composite = &c;
  g.tile = tile;
  issue_sub(g, gemm, path);
}

void PeScheduler::issue_sub(Command& sub, InitiatorPort& port, const PathAccount& path) {
  sub.issued = sim_time();
  sub.path = path;
  port.send(*command_payload(pool_, sub));
}

}  // namespace kb
