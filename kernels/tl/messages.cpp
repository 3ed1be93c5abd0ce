// Messages between PEs, of one SIP or, over the links, of two: sends the scheduler holds
// until their value is written, receives posted ahead and filled in posting order per
// sender and tag.
#include <algorithm>

#include "base/sip_graph.h"
#include "kernels/tl/ctx.h"
#include "kernels/tl/detail.h"
#include "models/common/sim_time.h"

namespace kb::tl {

using detail::element_count;

void Ctx::check_peer(std::string_view op, const PeCoord& peer, const char* role) const {
  const std::string where = "sip" + std::to_string(sip().value) + ": cubes 0-" + std::to_string(num_cubes() - 1) +
                            ", PEs 0-" + std::to_string(num_pes() - 1);
  if (peer.cube.value >= num_cubes() || peer.pe.value >= num_pes() || peer.sip.value >= topo_.system.sips)
    fail(op, std::string(role) + " a PE that does not exist: " + peer.str() + " (this is " + where + ", of " +
                 std::to_string(topo_.system.sips) + " SIP(s))");
  if (peer.sip != sip() && topo_.system.links.kind == Topology::SystemSpec::Links::Kind::None)
    fail(op, std::string(role) + " " + peer.str() + ", another SIP, but the topology has no links between SIPs "
                 "(system.links, docs/topology.md)");
}

std::uint32_t Ctx::message_hops(const PeCoord& peer) const {
  const Mesh m = mesh();
  if (peer.sip == sip()) return m.hops(cube(), peer.cube);
  return m.hops(cube(), nearest_port(topo_, cube())) + m.hops(nearest_port(topo_, peer.cube), peer.cube);
}

void Ctx::log_crossings(const std::vector<LinkCrossing>& crossings, const PeCoord& from, std::uint32_t tag,
                        std::uint64_t bytes) {
  for (std::size_t i = 0; i < crossings.size(); ++i) {
    const LinkCrossing& c = crossings[i];
    OpRecord r;
    r.kernel = kernel_;
    r.pe = coord();
    r.engine = "link";
    r.kind = c.direction;
    r.bytes = bytes;
    r.peer = from;
    r.tag = tag;
    r.hops = static_cast<std::uint32_t>(i);  // which crossing of its message: the timeline's flows
    r.issue = r.start = cycles(sc_core::sc_time::from_value(c.start));
    r.end = cycles(sc_core::sc_time::from_value(c.arrive));
    log_.append_closed(std::move(r));
  }
}

void Ctx::send(const PeCoord& dst, const Tensor& x, std::uint32_t tag) {
  const Name op = "send";
  check_peer(op, dst, "send to");
  check(x, op, "operand");
  if (x.is_ref()) fail(op, "the value sent must be in TCM, not a ref");
  check_contiguous(x, op);
  charge("send");
  // Not waited for by the program: the scheduler sends it once x is written. A value
  // still arriving by one receive of exactly its bytes (a message passed on) is taken by
  // the scheduler for the send, which then writes x; the program waits only for others.
  Command c;
  const Buffer& b = *x.buffer_;
  const Region s = x.region();
  const auto overlapping = std::count_if(b.receives.begin(), b.receives.end(), [&](const Buffer::Receive& r) {
    return r.begin < s.end && s.begin < r.end;
  });
  const bool passed_on = overlapping == 1 && std::any_of(b.receives.begin(), b.receives.end(), [&](const auto& r) {
    return r.begin == s.begin && r.end == s.end;
  });
  if (passed_on) c.receive = receive_in_scheduler(x);
  else take_messages(x);
  c.waits_for = pending_accesses(x, false);
  c.kind = Command::Kind::Send;
  c.dst_sip = dst.sip.value;
  c.dst_cube = dst.cube.value;
  c.dst_pe = dst.pe.value;
  c.tag = tag;
  c.bytes = x.bytes();
  if (data_) c.tcm = pe_.tcm.data(view_of(x).offset);
  OpRecord r;
  r.engine = "ipcq";
  r.kind = op;
  r.bytes = c.bytes;
  r.peer = dst;
  r.tag = tag;
  r.hops = message_hops(dst);
  r.tensor = x.name();
  r.shape = shape_text(x.shape());
  const Command& cmd = issue(std::move(c), std::move(r));
  add_reader(x, cmd);
  if (!cmd.receive) return;
  add_writer(x, cmd);
  scheduler_receives_[{cmd.receive->src, cmd.receive->tag}] = CommandHandle(cmd);
}

Tensor Ctx::recv_async(const PeCoord& src, const Shape& shape, DType dtype, std::uint32_t tag,
                       const Tensor* into) {
  const Name op = "recv";
  check_peer(op, src, "receive from");
  charge("recv");
  Tensor t;
  if (into) {
    check(*into, op, "into");
    check_contiguous(*into, op);
    if (into->elements() != element_count(shape) || into->dtype() != dtype)
      fail(op, "into is " + shape_text(into->shape()) + " " + dtype_name(into->dtype()) +
                   ", the message is " + shape_text(shape) + " " + dtype_name(dtype));
    prepare_write(*into);
    t = *into;
    t.shape_ = shape;
  } else {
    t = alloc(shape, dtype, Arena::Scratch, "recv");
  }
  OpRecord r;
  r.kernel = kernel_;
  r.pe = coord();
  r.engine = "ipcq";
  r.kind = op;
  r.bytes = t.bytes();
  r.shape = shape_text(shape);
  r.peer = src;
  r.tag = tag;
  r.hops = message_hops(src);
  r.issue = r.start = cycles(sim_time());
  Buffer& b = *t.buffer_;
  const std::uint64_t op_id = log_.append(std::move(r));
  b.receives.push_back({src, tag, op_id, t.bytes(), t.span_begin(), t.span_end(), view_of(t).offset});
  posted_[{src, tag}].emplace_back(t.buffer_, op_id);
  return t;
}

void Ctx::take_messages(const Tensor& t) {
  Buffer& b = *t.buffer_;
  const Region s = t.region();
  auto into_t = [&](const Buffer::Receive& r) { return r.begin < s.end && s.begin < r.end; };
  for (auto it = std::find_if(b.receives.begin(), b.receives.end(), into_t); it != b.receives.end();
       it = std::find_if(b.receives.begin(), b.receives.end(), into_t))
    take_message(b, it->op);
}

void Ctx::take_message(Buffer& b, std::uint64_t op) {
  // Messages of one sender and tag fill the receives in the order they were posted,
  // whichever buffer the program uses first: the earlier receives are taken first.
  const auto it = std::find_if(b.receives.begin(), b.receives.end(), [&](const auto& r) { return r.op == op; });
  if (it == b.receives.end()) return;
  auto& posted = posted_[{it->from, it->tag}];
  for (bool mine = false; !mine;) {
    const auto [next, next_op] = posted.front();
    posted.pop_front();
    mine = next_op == op;
    take_one(*next, next_op);
  }
}

std::optional<Command::Receive> Ctx::receive_in_scheduler(const Tensor& t) {
  Buffer& b = *t.buffer_;
  const Region s = t.region();
  const auto it =
      std::find_if(b.receives.begin(), b.receives.end(), [&](const auto& r) { return r.begin < s.end && s.begin < r.end; });
  if (it == b.receives.end()) return std::nullopt;
  const Buffer::Receive r = *it;
  // The earlier receives of its sender and tag are taken first, as take_message does.
  auto& posted = posted_[{r.from, r.tag}];
  while (posted.front().second != r.op) {
    const auto [next, next_op] = posted.front();
    posted.pop_front();
    take_one(*next, next_op);
  }
  posted.pop_front();
  b.receives.erase(std::find_if(b.receives.begin(), b.receives.end(), [&](const auto& x) { return x.op == r.op; }));
  Command::Receive out;
  out.src = r.from;
  out.tag = r.tag;
  out.bytes = r.bytes;
  if (data_) out.tcm = pe_.tcm.data(r.offset);
  out.op_id = r.op;
  return out;
}

void Ctx::take_one(Buffer& b, std::uint64_t op) {
  const auto it = std::find_if(b.receives.begin(), b.receives.end(), [&](const auto& r) { return r.op == op; });
  if (it == b.receives.end()) return;  // taken already
  const Buffer::Receive r = *it;
  // A receive of the same sender and tag that the scheduler holds takes its message first.
  if (const auto held = scheduler_receives_.find({r.from, r.tag});
      held != scheduler_receives_.end())
    block_on(*held->second, [&] {
      return "a held receive from " + r.from.str() + " with tag " + std::to_string(r.tag);
    });
  std::optional<Message> m;
  while (!(m = pe_.ipcq.take(r.from, r.tag))) {
    waiting_for_ = "a message from " + r.from.str() + " with tag " + std::to_string(r.tag);
    sc_core::wait(pe_.ipcq.message_event());
  }
  waiting_for_.clear();
  // The program waited for the message if it came after the program got here: the
  // message's path (its sender's) then holds the program back.
  PathAccount& path = pe_.cpu.path();
  const bool held = m->account.at > path.at;
  path.join(m->account);
  path.advance(ticks(sim_time()), Cause::Sync);
  if (held) path.enter(r.op);
  if (m->bytes != r.bytes)
    fail("recv", "message from " + r.from.str() + " tag " + std::to_string(r.tag) + " has " +
                     std::to_string(m->bytes) + " bytes, the receive expects " + std::to_string(r.bytes));
  if (data_ && !m->data.empty()) std::copy(m->data.begin(), m->data.end(), pe_.tcm.data(r.offset));
  b.receives.erase(std::find_if(b.receives.begin(), b.receives.end(), [&](const auto& x) { return x.op == op; }));
  log_.close(r.op, [&](OpRecord& record) { record.end = cycles(m->arrival); });
  log_crossings(m->crossings, r.from, r.tag, m->bytes);
}

Tensor Ctx::recv(const PeCoord& src, const Shape& shape, DType dtype, std::uint32_t tag) {
  Tensor t = recv_async(src, shape, dtype, tag);
  wait(t);
  return t;
}

bool Ctx::ready(const Tensor& t) {
  check(t, "ready", "operand");
  charge("wait");
  if (!t.buffer_) return true;
  const Buffer& b = *t.buffer_;
  const Region s = t.region();
  for (const Access& w : b.writers)
    if (!w.cmd->done && w.region.overlaps(s)) return false;
  for (const Buffer::Receive& r : b.receives) {
    if (!(r.begin < s.end && s.begin < r.end)) continue;
    const Source key{r.from, r.tag};
    // The scheduler takes its held receive's message first.
    if (const auto held = scheduler_receives_.find(key); held != scheduler_receives_.end() && !held->second->done)
      return false;
    // This receive and those posted before it of its sender and tag fill in order.
    const auto& queue = posted_.at(key);
    const auto at = std::find_if(queue.begin(), queue.end(), [&](const auto& p) { return p.second == r.op; });
    const auto needed = static_cast<std::size_t>(at - queue.begin()) + 1;
    if (pe_.ipcq.count(r.from, r.tag) < needed) return false;
  }
  return true;
}

void Ctx::wait(const Tensor& t) {
  check(t, "wait", "operand");
  charge("wait");
  consume(t, "wait");
}

}  // namespace kb::tl
