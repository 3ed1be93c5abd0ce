// tl::Ctx's core: what every op shares. An op's issue cost, its record in the op log,
// and the auto-wait on the commands still writing (or reading) the bytes it touches.
#include "kernels/tl/ctx.h"

#include <algorithm>

#include "kernels/tl/detail.h"
#include "models/common/clock.h"
#include "models/common/sim_time.h"

namespace kb::tl {

using detail::finished;
using detail::overlaps;

namespace {

std::uint64_t cycles_of(const sc_core::sc_time& t, const sc_core::sc_time& cycle) {
  return static_cast<std::uint64_t>(t / cycle + 0.5);
}

}  // namespace

const std::string& Tensor::name() const {
  static const std::string none;
  if (buffer_) return buffer_->name;
  if (ref_) return ref_->tensor.name();
  return none;
}

Ctx::Ctx(Pe& pe, const Topology& topo, const AddressMap& map, OpLog& log, std::string kernel, bool data,
         const sc_core::sc_time& origin)
    : pe_(pe), topo_(topo), map_(map), log_(log), kernel_(Name::intern(kernel)), data_(data), origin_(origin),
      cycle_(cycle_time(topo)), scratch_bottom_(topo.pe.tcm_bytes) {}

std::uint64_t Ctx::cycles(const sc_core::sc_time& t) const { return cycles_of(t - origin_, cycle_); }

Ctx::~Ctx() = default;

void Ctx::fail(std::string_view op, const std::string& what) const {
  throw KernelError("kernel '" + kernel_.str() + "' on " + coord().str() + ": op '" + std::string(op) + "': " + what);
}

// ---- bookkeeping ----------------------------------------------------------------------

void Ctx::check(const Tensor& t, std::string_view op, const char* role) const {
  if (!t.valid()) fail(op, std::string(role) + " is an empty handle");
  if (t.buffer_ && !t.buffer_->alive)
    fail(op, std::string(role) + " '" + t.buffer_->name + "' is used after its scratch scope ended");
}

void Ctx::check_contiguous(const Tensor& t, std::string_view op) const {
  if (!t.contiguous())
    fail(op, "'" + t.name() + "' " + shape_text(t.shape()) + " is a column slice; this op needs contiguous rows "
             "(copy it first)");
}

void Ctx::wait_on(const Command& cmd, std::string what) {
  waiting_for_ = std::move(what);
  pe_.cpu.wait(cmd);
  waiting_for_.clear();
}

void Ctx::consume(const Tensor& t, std::string_view op) {
  check(t, op, "operand");
  if (!t.buffer_) return;
  Buffer& b = *t.buffer_;
  const Region s = t.region();
  take_messages(t);
  for (const Access& w : b.writers)
    if (overlaps(w, s)) block_on(*w.cmd, [&] { return "'" + b.name + "' for op '" + std::string(op) + "'"; });
  std::erase_if(b.writers, finished);
  std::erase_if(b.readers, finished);
}

void Ctx::add_reader(const Tensor& t, const Command& cmd) {
  t.buffer_->readers.push_back({CommandHandle(cmd), t.region()});
}

void Ctx::add_writer(const Tensor& t, const Command& cmd) {
  t.buffer_->writers.push_back({CommandHandle(cmd), t.region()});
}

void Ctx::prepare_write(const Tensor& t) {
  Buffer& b = *t.buffer_;
  const Region s = t.region();
  take_messages(t);
  for (const Access& w : b.writers)
    if (overlaps(w, s)) block_on(*w.cmd, [&] { return "'" + b.name + "' before overwriting it"; });
  std::erase_if(b.writers, finished);
  wait_for_readers(t);
}

void Ctx::wait_for_readers(const Tensor& t) {
  // Only readers of the bytes written: rows of a state can be merged while other rows
  // are still being sent.
  Buffer& b = *t.buffer_;
  const Region s = t.region();
  for (const Access& r : b.readers)
    if (overlaps(r, s)) block_on(*r.cmd, [&] { return "readers of '" + b.name + "' before overwriting it"; });
  std::erase_if(b.readers, finished);
}

std::vector<CommandHandle> Ctx::pending_accesses(const Tensor& t, bool write) const {
  std::vector<CommandHandle> out;
  const Buffer& b = *t.buffer_;
  const Region s = t.region();
  for (const auto* list : {&b.writers, write ? &b.readers : nullptr})
    if (list)
      for (const Access& a : *list)
        if (!a.cmd->done && overlaps(a, s)) out.push_back(a.cmd);
  return out;
}

void Ctx::wait_unless_sequenced(const Tensor& t, std::string_view op) {
  Buffer& b = *t.buffer_;
  const Region s = t.region();
  take_messages(t);
  // A command the scheduler holds is not in its order yet: wait for it here.
  for (const Access& w : b.writers)
    if ((w.cmd->kind != Command::Kind::Sequence || detail::held(*w.cmd)) && overlaps(w, s))
      block_on(*w.cmd, [&] { return "'" + b.name + "' for op '" + std::string(op) + "'"; });
}

TcmView Ctx::view_of(const Tensor& t) const {
  TcmView v;
  v.offset = t.buffer_->offset + t.byte_offset_;
  v.dtype = t.dtype_;
  v.rows = t.rows();
  v.cols = t.cols();
  v.stride = t.stride_ ? t.stride_ : v.cols;
  return v;
}

// Every op spends its issue cycles before it waits for its operands: the CPU builds the
// command while they are still in flight and sends it the cycle they are ready.
void Ctx::charge(const char* cpu_op) {
  const auto known = std::find_if(charges_.begin(), charges_.end(), [&](const auto& c) { return c.first == cpu_op; });
  if (known != charges_.end()) {
    pe_.cpu.spend(known->second);
    return;
  }
  const std::uint64_t cycles = cost_of(topo_.pe.cpu.issue_cycles, cpu_op);
  charges_.emplace_back(cpu_op, cycles);
  pe_.cpu.spend(cycles);
}

namespace {
// What an engine command computes, for the op log: M x N x K of a GEMM (a sequence's
// first GEMM), the output's rows x cols of a vector op.
std::string command_shape(const Command& c) {
  const Command& g = c.kind == Command::Kind::Sequence && !c.steps.empty() ? c.steps.front() : c;
  if (g.kind == Command::Kind::Gemm || g.kind == Command::Kind::Composite) {
    const std::int64_t mnk[] = {g.m, g.n, g.k};
    return numbers_text(mnk, 3, "", "x", "");
  }
  if (g.kind == Command::Kind::Math)
    return shape_text({static_cast<std::int64_t>(g.out.rows), static_cast<std::int64_t>(g.out.cols)});
  return "";
}
}  // namespace

Command& Ctx::issue(Command&& cmd, OpRecord&& record) {
  if (record.shape.empty()) record.shape = command_shape(cmd);
  record.kernel = kernel_;
  record.pe = coord();
  record.issue = cycles(sim_time());
  cmd.op_id = log_.append(std::move(record));
  cmd.data = data_;
  return pe_.cpu.issue(std::move(cmd));
}

std::uint64_t Ctx::record_cpu(Name kind, const char* cpu_op, const std::string& tensor) {
  OpRecord r;
  r.kernel = kernel_;
  r.pe = coord();
  r.engine = "cpu";
  r.kind = kind;
  r.tensor = tensor;
  r.issue = r.start = cycles(sim_time());
  charge(cpu_op);
  r.end = cycles(sim_time());
  return log_.append_closed(std::move(r));
}

void Ctx::completed(const Command& cmd) {
  log_.close(cmd.op_id, [&](OpRecord& r) {
    r.start = cycles(cmd.started);
    r.end = cycles(cmd.finished);
  });
  if (!cmd.receive) return;
  log_.close(cmd.receive->op_id, [&](OpRecord& r) { r.end = cycles(cmd.receive->arrival); });
  log_crossings(cmd.receive->crossings, cmd.receive->src, cmd.receive->tag, cmd.receive->bytes);
}

void Ctx::finish() {
  // A posted receive completes before the program ends, read or not: its message must
  // not stay in the mailbox for a later run to take.
  for (auto& [key, posted] : posted_)
    while (!posted.empty()) {
      const auto [b, op] = posted.front();
      take_message(*b, op);
    }
  waiting_for_ = "its last commands to finish";
  pe_.cpu.wait_all();
  waiting_for_.clear();
  end_phase();
}

void Ctx::phase(const std::string& name) {
  end_phase();
  OpRecord r;
  r.kernel = kernel_;
  r.pe = coord();
  r.engine = "phase";
  r.kind = Name::intern(name);
  r.issue = r.start = r.end = cycles(sim_time());
  phase_ = log_.append(std::move(r));
}

void Ctx::end_phase() {
  if (!phase_) return;
  log_.close(*phase_, [this](OpRecord& r) { r.end = cycles(sim_time()); });
  phase_.reset();
}


}  // namespace kb::tl
