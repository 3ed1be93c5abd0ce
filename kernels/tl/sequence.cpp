#include "kernels/tl/sequence.h"

#include <algorithm>

namespace kb::tl {

Sequence::Sequence(Ctx& tl, Name kind, Issue issue) : tl_(tl), kind_(kind), issue_(issue) {
  cmd_.kind = Command::Kind::Sequence;
}

Tensor Sequence::rows(const Tensor& t, std::uint32_t begin, std::uint32_t count) const {
  return tl_.row_slice(kind_, t, begin, count);
}

Tensor Sequence::cols(const Tensor& t, std::uint32_t begin, std::uint32_t count) const {
  return tl_.col_slice(kind_, t, begin, count);
}

Tensor Sequence::view(const Tensor& t, const Shape& shape) const { return tl_.reshaped(kind_, t, shape); }

Tensor Sequence::scratch(const Shape& shape, DType dtype, const std::string& name) const {
  return tl_.alloc(shape, dtype, Arena::Scratch, name);
}

void Sequence::state(const Tensor& t) {
  tl_.check(t, kind_, "state");
  if (!cmd_.steps.empty()) tl_.fail(kind_, "a sequence's state is declared before its steps");
  if (t.is_ref()) tl_.fail(kind_, "a state must be in TCM, not a ref");
  states_.push_back(t);
}

void Sequence::describe(const Tensor& t) { described_ = t; }

Command& Sequence::step() {
  if (issued_) tl_.fail(kind_, "a step added to a sequence already issued");
  return cmd_.steps.emplace_back();  // made in place: a command is large
}

bool Sequence::shares_bytes(const Tensor& a, const Tensor& b) {
  return a.buffer_ && a.buffer_ == b.buffer_ && a.region().overlaps(b.region());
}

bool Sequence::same_view(const Tensor& a, const Tensor& b) {
  return a.buffer_ == b.buffer_ && a.byte_offset_ == b.byte_offset_ && a.shape_ == b.shape_ && a.stride_ == b.stride_;
}

void Sequence::touch(const Tensor& t, bool write) {
  if (t.is_ref()) return;  // streamed by the scheduler, tracked by nothing
  if (!state_touched_ &&
      std::any_of(states_.begin(), states_.end(), [&](const Tensor& s) { return shares_bytes(s, t); })) {
    state_touched_ = true;
    cmd_.steps.back().serial = true;  // the first touch of the state: after earlier sequences
  }
  const auto same = std::find_if(operands_.begin(), operands_.end(), [&](const Operand& o) { return same_view(o.t, t); });
  if (same != operands_.end()) {
    same->written = same->written || write;
    return;
  }
  const bool state = std::any_of(states_.begin(), states_.end(), [&](const Tensor& s) { return same_view(s, t); });
  operands_.push_back({t, write, state});
}

void Sequence::gemm(const Tensor& a, const Tensor& b, const Tensor& out, const CompositeOpts& opts) {
  for (const Tensor* t : {&a, &b, &out}) tl_.check(*t, kind_, "operand");
  if (a.is_ref() || out.is_ref()) tl_.fail(kind_, "a GEMM step's a and out must be in TCM");
  const std::uint32_t m = a.rows(), k = a.cols();
  const std::uint32_t bk = opts.trans_b ? b.cols() : b.rows(), n = opts.trans_b ? b.rows() : b.cols();
  if (bk != k || out.rows() != m || out.cols() != n)
    tl_.fail(kind_, "shape mismatch: a " + shape_text(a.shape()) + " x b" + (opts.trans_b ? "^T " : " ") +
                        shape_text(b.shape()) + " into out " + shape_text(out.shape()));
  Command& x = step();
  x.m = m;
  x.n = n;
  x.k = k;
  x.a = tl_.view_of(a);
  x.c = tl_.view_of(out);
  x.trans_b = opts.trans_b;
  x.accumulate = opts.accumulate;
  if (!b.is_ref()) {  // operands in TCM: one GEMM
    x.kind = Command::Kind::Gemm;
    x.b = tl_.view_of(b);
  } else {  // a composite: b streamed in tiles through the staging buffers
    const std::uint32_t tile = std::min(opts.tile_rows, std::max<std::uint32_t>(b.rows(), 1));
    if (tile == 0) tl_.fail(kind_, "tile_rows must be at least 1");
    const Tensor* st = opts.stage;
    if (st == nullptr) tl_.fail(kind_, "a streamed b needs a stage buffer");
    tl_.check(*st, kind_, "stage");
    if (st->rows() < 2 * tile || st->cols() != b.cols() || st->dtype() != b.dtype())
      tl_.fail(kind_, "stage is " + shape_text(st->shape()) + "; streaming needs at least [" +
                          std::to_string(2 * tile) + ", " + std::to_string(b.cols()) + "] " + dtype_name(b.dtype()));
    x.kind = Command::Kind::Composite;
    x.address = b.ref_->address;
    x.b_row_bytes = b.ref_->tensor.row_bytes();
    x.b.dtype = b.dtype();
    x.b.rows = b.rows();
    x.b.cols = b.cols();
    x.tile_rows = tile;
    x.stage = tl_.view_of(*st);
    x.stage.rows = tile;
    x.stage_buffers = st->rows() / tile;
    touch(*st, true);
  }
  touch(a, false);
  touch(b, false);
  touch(out, true);
}

void Sequence::math(MathOp op, const Tensor& a, const Tensor* b, const Tensor& out, float scalar,
                    std::uint32_t reduce_width) {
  for (const Tensor* t : {&a, b, &out})
    if (t) {
      tl_.check(*t, kind_, "operand");
      if (t->is_ref()) tl_.fail(kind_, "a MATH step's operands must be in TCM, not refs");
    }
  const bool reduction = reduce_width > 0;
  const bool b_ok = !b || ((b->rows() == a.rows() || b->rows() == 1) && (b->cols() == a.cols() || b->cols() == 1));
  const bool out_ok = out.rows() == a.rows() && out.cols() == (reduction ? 1 : a.cols());
  if (!b_ok || !out_ok)
    tl_.fail(kind_, std::string("shape mismatch in a ") + math_op_name(op) + " step: " + shape_text(a.shape()) +
                        (b ? " and " + shape_text(b->shape()) : std::string()) + " into " + shape_text(out.shape()));
  Command& x = step();
  x.kind = Command::Kind::Math;
  x.op = op;
  x.in0 = tl_.view_of(a);
  if (b) x.in1 = tl_.view_of(*b);
  x.out = tl_.view_of(out);
  x.scalar = scalar;
  x.elements = std::max(x.in0.elements(), x.out.elements());
  x.reduce_width = reduce_width;
  touch(a, false);
  if (b) touch(*b, false);
  touch(out, true);
}

void Sequence::add(const Tensor& a, const Tensor& b, const Tensor& out) { math(MathOp::Add, a, &b, out); }
void Sequence::mul(const Tensor& a, const Tensor& b, const Tensor& out) { math(MathOp::Mul, a, &b, out); }
void Sequence::mul(const Tensor& a, float scalar, const Tensor& out) { math(MathOp::Scale, a, nullptr, out, scalar); }
void Sequence::maximum(const Tensor& a, const Tensor& b, const Tensor& out) { math(MathOp::Maximum, a, &b, out); }
void Sequence::exp_diff(const Tensor& a, const Tensor& b, const Tensor& out) { math(MathOp::ExpDiff, a, &b, out); }
void Sequence::copy(const Tensor& a, const Tensor& out) { math(MathOp::Copy, a, nullptr, out); }
void Sequence::max(const Tensor& x, const Tensor& out) { math(MathOp::RowMax, x, nullptr, out, 0, x.cols()); }
void Sequence::sum(const Tensor& x, const Tensor& out) { math(MathOp::RowSum, x, nullptr, out, 0, x.cols()); }

void Sequence::causal_mask(const Tensor& x, std::int64_t q_pos0, std::uint32_t q_period, std::int64_t k_pos0) {
  if (q_period == 0) tl_.fail(kind_, "q_period must be at least 1");
  math(MathOp::CausalMask, x, nullptr, x);
  Command& mask = cmd_.steps.back();
  mask.q_pos0 = q_pos0;
  mask.q_period = q_period;
  mask.k_pos0 = k_pos0;
}

void Sequence::issue() {
  if (issued_) tl_.fail(kind_, "a sequence is issued once");
  if (cmd_.steps.empty()) tl_.fail(kind_, "a sequence needs at least one step");
  issued_ = true;
  tl_.issue_sequence(*this);
}

// ---- issue ----------------------------------------------------------------------------

namespace {

Name engine_of(const Command& c) {
  switch (c.engine()) {
    case EngineKind::Dma: return "dma";
    case EngineKind::Gemm: return "gemm";
    case EngineKind::Math: return "math";
    case EngineKind::Ipcq: return "ipcq";
  }
  return "gemm";
}

bool is_gemm(const Command& c) { return c.kind == Command::Kind::Gemm || c.kind == Command::Kind::Composite; }

}  // namespace

void Ctx::issue_sequence(Sequence& s) {
  const Name op = s.kind_;
  charge("sequence");
  Command& seq = s.cmd_;
  if (s.issue_ == Sequence::Issue::Wait) {
    // Read operands first, then the running state, then what the steps write.
    for (const Sequence::Operand& o : s.operands_)
      if (!o.written && !o.state) consume(o.t, op);
    for (const Sequence::Operand& o : s.operands_)
      if (o.state) wait_unless_sequenced(o.t, op);
    for (const Sequence::Operand& o : s.operands_)
      if (o.written && !o.state) prepare_write(o.t);
  } else {
    for (const Sequence::Operand& o : s.operands_) {
      std::optional<Command::Receive> r = o.t.buffer_->receives.empty() ? std::nullopt : receive_in_scheduler(o.t);
      if (!r) continue;
      if (seq.receive) fail(op, "at most one operand of a held sequence may still be arriving by a message");
      seq.receive = std::move(r);
    }
    for (const Sequence::Operand& o : s.operands_)
      for (CommandHandle& c : pending_accesses(o.t, o.written)) seq.waits_for.push_back(std::move(c));
  }
  // The record counts the bytes streamed and the work of the engine of its first step.
  OpRecord r;
  const Command& first = seq.steps.front();
  r.engine = engine_of(first);
  r.kind = op;
  for (const Command& x : seq.steps) {
    if (x.kind == Command::Kind::Composite) r.bytes += static_cast<std::uint64_t>(x.b.rows) * x.b_row_bytes;
    if (x.engine() != first.engine()) continue;
    r.flops += is_gemm(x) ? 2ull * x.m * x.n * x.k : x.elements;
  }
  if (s.described_.valid()) {
    r.tensor = s.described_.name();
    if (!is_gemm(first)) r.shape = shape_text(s.described_.shape());
  }
  const Command& cmd = issue(std::move(seq), std::move(r));
  for (const Sequence::Operand& o : s.operands_) {
    if (o.written) add_writer(o.t, cmd);
    else add_reader(o.t, cmd);
  }
  if (cmd.receive) scheduler_receives_[{cmd.receive->src, cmd.receive->tag}] = CommandHandle(cmd);
}

}  // namespace kb::tl
