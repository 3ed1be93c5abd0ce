#include "kernels/tl/ctx.h"
#include "models/common/clock.h"
#include "models/common/sim_time.h"

#include <algorithm>
#include <exception>

namespace kb::tl {
namespace {

constexpr std::uint64_t kAlign = 64;  // TCM allocation granule, bytes

std::uint64_t cycles_of(const sc_core::sc_time& t, const sc_core::sc_time& cycle) {
  return static_cast<std::uint64_t>(t / cycle + 0.5);
}

std::string bytes_text(std::uint64_t b) { return std::to_string(b) + " B"; }

std::uint64_t element_count(const Shape& s) {
  std::uint64_t n = 1;
  for (const auto d : s) n *= static_cast<std::uint64_t>(d);
  return n;
}

}  // namespace

const std::string& Tensor::name() const {
  static const std::string none;
  if (buffer_) return buffer_->name;
  if (ref_) return ref_->tensor.name();
  return none;
}

ScratchScope::ScratchScope(Ctx& ctx, std::uint64_t mark, std::size_t first)
    : ctx_(ctx), mark_(mark), first_(first) {
  ++ctx_.scopes_;
}

ScratchScope::~ScratchScope() {
  --ctx_.scopes_;
  ctx_.end_scope(mark_, first_);
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

// ---- memory ---------------------------------------------------------------------------

std::uint64_t tcm_bytes(const Shape& shape, DType dtype) {
  const std::uint64_t bytes = element_count(shape) * dtype_bytes(dtype);
  return (bytes + kAlign - 1) / kAlign * kAlign;
}

Tensor Ctx::alloc(const Shape& shape, DType dtype, Arena arena, const std::string& name) {
  for (const auto d : shape)
    if (d < 0) fail("alloc", "negative dimension in shape " + shape_text(shape));
  const std::uint64_t bytes = element_count(shape) * dtype_bytes(dtype);
  const std::uint64_t size = tcm_bytes(shape, dtype);
  if (size > scratch_bottom_ - persistent_top_)
    fail("alloc", "TCM overflow: '" + name + "' " + shape_text(shape) + " " + dtype_name(dtype) +
                      " needs " + bytes_text(size) + " but only " +
                      bytes_text(scratch_bottom_ - persistent_top_) + " of " +
                      bytes_text(topo_.pe.tcm_bytes) + " are free (persistent " +
                      bytes_text(use_.persistent) + ", scratch " + bytes_text(use_.scratch) + ")");
  auto b = std::make_shared<Buffer>();
  b->name = name;
  b->bytes = bytes;
  b->arena = arena;
  if (arena == Arena::Persistent) {
    b->offset = persistent_top_;
    persistent_top_ += size;
    use_.persistent += size;
  } else {
    scratch_bottom_ -= size;
    b->offset = scratch_bottom_;
    use_.scratch += size;
    scratch_.push_back(b);
  }
  use_.peak_persistent = std::max(use_.peak_persistent, use_.persistent);
  use_.peak_scratch = std::max(use_.peak_scratch, use_.scratch);
  use_.peak_total = std::max(use_.peak_total, use_.persistent + use_.scratch);
  Tensor t;
  t.buffer_ = std::move(b);
  t.shape_ = shape;
  t.dtype_ = dtype;
  return t;
}

ScratchScope Ctx::scratch_scope() { return ScratchScope(*this, scratch_bottom_, scratch_.size()); }

void Ctx::end_scope(std::uint64_t mark, std::size_t first) {
  const bool unwinding = std::uncaught_exceptions() > 0;
  for (std::size_t i = first; i < scratch_.size(); ++i) {
    Buffer& b = *scratch_[i];
    if (!unwinding) {
      while (!b.receives.empty()) take_message(b, b.receives.front().op);  // before the space is reused
      for (const Access& w : b.writers)
        block_on(*w.cmd, [&] { return "scope end: '" + b.name + "' still being written"; });
      for (const Access& r : b.readers)
        block_on(*r.cmd, [&] { return "scope end: '" + b.name + "' still being read"; });
    }
    b.alive = false;
  }
  scratch_.resize(first);
  use_.scratch -= mark - scratch_bottom_;
  scratch_bottom_ = mark;
}

Tensor Ctx::persistent(const Shape& shape, DType dtype, const std::string& name) {
  Tensor t = alloc(shape, dtype, Arena::Persistent, name.empty() ? "persistent" : name);
  record_cpu("alloc", "alloc", t.name());
  return t;
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

namespace {
// The bytes [begin, end) of its buffer that a tensor covers (worked out once per scan).
struct Span {
  std::uint64_t begin, end;
};
Span span(const Tensor& t) { return {t.span_begin(), t.span_end()}; }
bool overlaps(const Access& a, const Span& s) { return a.begin < s.end && s.begin < a.end; }
bool finished(const Access& a) { return a.cmd->done; }
// Whether the scheduler may hold the command back (it waits for others or a message).
bool held(const Command& c) { return !c.waits_for.empty() || c.receive.has_value(); }
}  // namespace

void Ctx::consume(const Tensor& t, std::string_view op) {
  check(t, op, "operand");
  if (!t.buffer_) return;
  Buffer& b = *t.buffer_;
  const Span s = span(t);
  take_messages(t);
  for (const Access& w : b.writers)
    if (overlaps(w, s)) block_on(*w.cmd, [&] { return "'" + b.name + "' for op '" + std::string(op) + "'"; });
  std::erase_if(b.writers, finished);
  std::erase_if(b.readers, finished);
}

void Ctx::add_reader(const Tensor& t, const Command& cmd) {
  t.buffer_->readers.push_back({CommandHandle(cmd), t.span_begin(), t.span_end()});
}

void Ctx::add_writer(const Tensor& t, const Command& cmd) {
  t.buffer_->writers.push_back({CommandHandle(cmd), t.span_begin(), t.span_end()});
}

void Ctx::prepare_write(const Tensor& t) {
  Buffer& b = *t.buffer_;
  const Span s = span(t);
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
  const Span s = span(t);
  for (const Access& r : b.readers)
    if (overlaps(r, s)) block_on(*r.cmd, [&] { return "readers of '" + b.name + "' before overwriting it"; });
  std::erase_if(b.readers, finished);
}

std::vector<CommandHandle> Ctx::pending_accesses(const Tensor& t, bool write) const {
  std::vector<CommandHandle> out;
  const Buffer& b = *t.buffer_;
  const Span s = span(t);
  for (const auto* list : {&b.writers, write ? &b.readers : nullptr})
    if (list)
      for (const Access& a : *list)
        if (!a.cmd->done && overlaps(a, s)) out.push_back(a.cmd);
  return out;
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
// What an engine command computes, for the op log: M x N x K of a GEMM (a flash tile's
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
  if (cmd.receive) log_.close(cmd.receive->op_id, [&](OpRecord& r) { r.end = cycles(cmd.receive->arrival); });
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

// ---- HBM <-> TCM ----------------------------------------------------------------------

RowRange Ctx::shard_rows(const DeviceTensor& t) const {
  if (t.device() != sip()) return {};
  const ShardPlacement* sh = t.shard_at(cube(), pe());
  return sh ? sh->rows : RowRange{};
}

namespace {
Shape rows_shape(const DeviceTensor& t, std::uint64_t rows) {
  Shape s{static_cast<std::int64_t>(rows)};
  if (t.shape().size() > 1) s.insert(s.end(), t.shape().begin() + 1, t.shape().end());
  return s;
}
}  // namespace

Tensor Ctx::ref(const DeviceTensor& t, RowRange rows) {
  Tensor x = hbm_rows("ref", t, rows);
  record_cpu("ref", "ref", t.name());
  return x;
}

Tensor Ctx::hbm_rows(std::string_view op, const DeviceTensor& t, RowRange rows) const {
  if (!t.valid()) fail(op, "empty device tensor");
  if (t.device() != sip())
    fail(op, "'" + t.name() + "' lives on sip" + std::to_string(t.device().value) + "; this PE is on sip" +
                 std::to_string(sip().value));
  // The rows must lie in one shard: this PE's own copy if it holds them, else the first
  // shard that does (its HBM is reached over the cube fabric or the NOC).
  auto holds = [&](const ShardPlacement* p) {
    return p && p->rows.count > 0 && rows.begin >= p->rows.begin && rows.end() <= p->rows.end();
  };
  const ShardPlacement* sh = t.shard_at(cube(), pe());
  if (!holds(sh)) {
    sh = nullptr;
    for (const ShardPlacement& p : t.placements())
      if (holds(&p)) {
        sh = &p;
        break;
      }
  }
  if (!sh)
    fail(op, "rows [" + std::to_string(rows.begin) + ", " + std::to_string(rows.end()) + ") of '" + t.name() +
                 "' " + shape_text(t.shape()) + " do not lie within one shard (placed " + t.policy().describe() +
                 ")");
  auto r = std::make_shared<HbmRef>();
  r->tensor = t;
  r->rows = rows;
  r->address = map_.hbm(sh->cube.value, sh->pe.value,
                        sh->offset + (rows.begin - sh->rows.begin) * t.row_bytes());
  Tensor x;
  x.ref_ = std::move(r);
  x.shape_ = rows_shape(t, rows.count);
  x.dtype_ = t.dtype();
  return x;
}

Tensor Ctx::load(const DeviceTensor& t, RowRange rows, const Tensor* into) {
  const Tensor src = hbm_rows("load", t, rows);
  charge("load");
  Tensor x;
  if (into) {
    check(*into, "load", "into");
    check_contiguous(*into, "load");
    if (into->dtype() != t.dtype() || into->cols() != src.cols() || into->rows() < src.rows())
      fail("load", "into is " + shape_text(into->shape()) + " " + dtype_name(into->dtype()) + ", rows of '" +
                       t.name() + "' are " + shape_text(src.shape()) + " " + dtype_name(t.dtype()));
    prepare_write(*into);
    x = *into;
    x.shape_ = src.shape_;
  } else {
    x = alloc(src.shape_, t.dtype(), Arena::Scratch, t.name());
  }
  std::erase_if(stores_, [](const PendingStore& st) { return st.cmd->done; });
  for (const PendingStore& st : stores_)
    if (st.tensor == &t.placements() && st.rows.begin < rows.end() && rows.begin < st.rows.end())
      block_on(*st.cmd, [&] { return "a store to rows of '" + t.name() + "' before loading them"; });
  add_writer(x, issue_dma(Command::Kind::DmaRead, "load", src.ref_->address, t, x));
  return x;
}

void Ctx::store(const DeviceTensor& t, RowRange rows, const Tensor& x) {
  const Name op = "store";
  const Tensor dst = hbm_rows(op, t, rows);
  charge("store");
  consume(x, op);
  if (x.is_ref()) fail(op, "the value stored must be in TCM, not a ref");
  check_contiguous(x, op);
  if (x.dtype() != t.dtype())
    fail(op, std::string("dtype mismatch: storing ") + dtype_name(x.dtype()) + " into " +
                 dtype_name(t.dtype()) + " tensor '" + t.name() + "' (cast it first)");
  if (x.elements() != dst.elements() || x.cols() != dst.cols())
    fail(op, "shape mismatch: value " + shape_text(x.shape()) + " into rows of '" + t.name() +
                 "' shaped " + shape_text(dst.shape()));
  const Command& cmd = issue_dma(Command::Kind::DmaWrite, op, dst.ref_->address, t, x);
  add_reader(x, cmd);
  stores_.push_back({&t.placements(), rows, CommandHandle(cmd)});
}

Command& Ctx::issue_dma(Command::Kind kind, Name op, std::uint64_t address, const DeviceTensor& t,
                        const Tensor& x) {
  Command c;
  c.kind = kind;
  c.address = address;
  c.bytes = x.bytes();
  if (data_) c.tcm = pe_.tcm.data(view_of(x).offset);
  OpRecord r;
  r.engine = "dma";
  r.kind = op;
  r.bytes = c.bytes;
  r.tensor = t.name();
  r.shape = shape_text(x.shape());
  return issue(std::move(c), std::move(r));
}

// ---- GEMM -----------------------------------------------------------------------------

Tensor Ctx::gemm_into(const Tensor& a, const Tensor& b, const CompositeOpts& opts, bool composite) {
  const Name op = composite ? Name("composite") : Name("dot");
  if (a.is_ref()) fail(op, "operand a must be in TCM");
  charge(composite ? "composite" : "dot");
  // A streamed composite whose a is still being loaded starts streaming b at once; its
  // GEMMs wait for the load in the scheduler (the first K tile streams while Q loads).
  CommandHandle a_load;
  if (composite && b.is_ref() && a.buffer_ && a.buffer_->receives.empty()) {
    const std::vector<CommandHandle> pending = pending_accesses(a, false);
    if (pending.size() == 1 && pending.front()->kind == Command::Kind::DmaRead) a_load = pending.front();
  }
  if (!a_load) consume(a, op);
  if (b.is_ref() && !composite) fail(op, "operand b is an HBM ref; only composite streams refs");
  if (!b.is_ref()) consume(b, op);
  check(b, op, "operand b");
  const std::uint32_t m = a.rows(), k = a.cols();
  const std::uint32_t bk = opts.trans_b ? b.cols() : b.rows();
  const std::uint32_t n = opts.trans_b ? b.rows() : b.cols();
  if (bk != k)
    fail(op, "shape mismatch: a " + shape_text(a.shape()) + " x b" + (opts.trans_b ? "^T " : " ") +
                 shape_text(b.shape()) + ": inner dimensions " + std::to_string(k) + " and " +
                 std::to_string(bk));
  if (composite && b.is_ref() && opts.tile_rows == 0) fail(op, "tile_rows must be at least 1");
  Tensor out;
  if (opts.out) {
    check(*opts.out, op, "out");
    if (opts.out->rows() != m || opts.out->cols() != n)
      fail(op, "out is " + shape_text(opts.out->shape()) + ", the product is [" + std::to_string(m) +
                   ", " + std::to_string(n) + "]");
    prepare_write(*opts.out);
    out = *opts.out;
  } else {
    if (opts.accumulate) fail(op, "accumulate needs an out tensor");
    out = alloc({m, n}, DType::fp32, Arena::Scratch, op.str());
  }
  Tensor stage;
  if (b.is_ref()) {
    const std::uint32_t tile = std::min<std::uint32_t>(opts.tile_rows, std::max<std::uint32_t>(b.rows(), 1));
    if (opts.stage) {
      check(*opts.stage, op, "stage");
      if (opts.stage->dtype() != b.dtype() || opts.stage->cols() != b.cols() || opts.stage->rows() < 2 * tile)
        fail(op, "stage is " + shape_text(opts.stage->shape()) + " " + dtype_name(opts.stage->dtype()) +
                     "; streaming b needs at least [" + std::to_string(2 * tile) + ", " +
                     std::to_string(b.cols()) + "] " + dtype_name(b.dtype()));
      prepare_write(*opts.stage);
      stage = *opts.stage;
      stage.shape_ = {opts.stage->rows() / tile * static_cast<std::int64_t>(tile), b.cols()};
    } else {
      stage = alloc({2 * static_cast<std::int64_t>(tile), b.cols()}, b.dtype(), Arena::Scratch, "stage");
    }
  }
  Command c;
  c.m = m;
  c.n = n;
  c.k = k;
  c.a = view_of(a);
  c.c = view_of(out);
  c.trans_b = opts.trans_b;
  c.accumulate = opts.accumulate;
  OpRecord r;
  r.engine = "gemm";
  r.kind = op;
  r.flops = 2ull * m * n * k;
  r.tensor = b.name();
  if (b.is_ref()) {
    c.kind = Command::Kind::Composite;
    c.after = a_load;
    c.address = b.ref_->address;
    c.b_row_bytes = b.ref_->tensor.row_bytes();
    c.b.dtype = b.dtype();
    c.b.rows = b.rows();
    c.b.cols = b.cols();
    c.tile_rows = std::min<std::uint32_t>(opts.tile_rows, std::max<std::uint32_t>(b.rows(), 1));
    c.stage_buffers = stage.rows() / c.tile_rows;
    c.stage = view_of(stage);
    c.stage.rows = c.tile_rows;
    r.bytes = b.bytes();
  } else {
    c.kind = Command::Kind::Gemm;
    c.b = view_of(b);
  }
  const Command& cmd = issue(std::move(c), std::move(r));
  add_writer(out, cmd);
  add_reader(a, cmd);
  if (b.buffer_) add_reader(b, cmd);
  if (stage.buffer_) add_writer(stage, cmd);
  return out;
}

namespace {

// One MATH step of a sequence command, made in place at the end of its steps (a
// command is large: building one elsewhere and moving it in copies it whole).
void add_math_step(std::vector<Command>& steps, MathOp op, TcmView in0, TcmView in1, TcmView out,
                   std::uint32_t reduce_width, float scalar, bool serial) {
  Command& x = steps.emplace_back();
  x.kind = Command::Kind::Math;
  x.op = op;
  x.in0 = in0;
  x.in1 = in1;
  x.out = out;
  x.scalar = scalar;
  x.elements = std::max(in0.elements(), out.elements());
  x.reduce_width = reduce_width;
  x.serial = serial;
}

}  // namespace

void Ctx::wait_unless_sequenced(const Tensor& t, std::string_view op) {
  Buffer& b = *t.buffer_;
  const Span s = span(t);
  take_messages(t);
  // A command the scheduler holds is not in its order yet: wait for it here.
  for (const Access& w : b.writers)
    if ((w.cmd->kind != Command::Kind::Sequence || held(*w.cmd)) && overlaps(w, s))
      block_on(*w.cmd, [&] { return "'" + b.name + "' for op '" + std::string(op) + "'"; });
}

Tensor Ctx::flash_tile(const FlashTile& f) {
  const Name op = "flash_tile";
  const bool streamed = f.k && f.k->is_ref();
  const Tensor* required[] = {f.q, f.k, f.v, f.m, f.l, f.o, f.s, f.p, f.pv, f.m_new, f.alpha, f.rowsum};
  for (const Tensor* t : required)
    if (t == nullptr) fail(op, "every tensor of the FlashTile must be given");
  for (const Tensor* t : required) check(*t, op, "operand");
  if (f.v->is_ref() != streamed) fail(op, "k and v must both be HBM refs or both be in TCM");
  if (streamed && (f.stage_k == nullptr || f.stage_v == nullptr)) fail(op, "streamed k and v need stage buffers");
  const std::uint32_t m = f.q->rows(), d = f.q->cols(), n = f.k->rows();
  if (f.k->cols() != d || f.v->cols() != d || f.v->rows() != n || f.o->rows() != m || f.o->cols() != d)
    fail(op, "shape mismatch: q " + shape_text(f.q->shape()) + ", k " + shape_text(f.k->shape()) + ", v " +
                 shape_text(f.v->shape()) + ", o " + shape_text(f.o->shape()));
  const std::uint32_t tile = std::min(f.stream_rows, std::max<std::uint32_t>(n, 1));
  if (streamed)
    for (const Tensor* st : {f.stage_k, f.stage_v})
      if (st->rows() < 2 * tile || st->cols() != d || st->dtype() != f.k->dtype())
      fail(op, "stage is " + shape_text(st->shape()) + "; streaming needs at least [" + std::to_string(2 * tile) +
                   ", " + std::to_string(d) + "] " + dtype_name(f.k->dtype()));
  for (const Tensor* b : {f.s, f.p})
    if (b->elements() < static_cast<std::uint64_t>(m) * n) fail(op, "work buffer '" + b->name() + "' is too small");
  charge("composite");
  consume(*f.q, op);
  if (!streamed) {
    consume(*f.k, op);
    consume(*f.v, op);
  }
  // The work buffers are this tile's own: wait until an earlier tile no longer uses them.
  // The state (m, l, o) is waited for only when something other than a flash tile wrote
  // it (e.g. a load from HBM): the scheduler orders the flash tiles' updates itself.
  for (const Tensor* st : {f.m, f.l, f.o}) wait_unless_sequenced(*st, op);
  std::vector<const Tensor*> work = {f.s, f.p, f.pv, f.m_new, f.alpha, f.rowsum};
  if (streamed) work.insert(work.end(), {f.stage_k, f.stage_v});
  for (const Tensor* b : work) prepare_write(*b);
  auto block_view = [&](const Tensor& flat, DType dt) {
    TcmView v = view_of(flat);
    v.dtype = dt;
    v.rows = m;
    v.cols = n;
    v.stride = n;
    return v;
  };
  const TcmView S = block_view(*f.s, DType::fp32), P = block_view(*f.p, f.p->dtype());
  for (const Tensor* b : {f.pv, f.m_new, f.alpha, f.rowsum})
    if (b->rows() < m) fail(op, "work buffer '" + b->name() + "' has fewer than " + std::to_string(m) + " rows");
  auto first_rows = [m](TcmView v) {  // the work buffers may be larger than this tile
    v.rows = m;
    return v;
  };
  const TcmView M = view_of(*f.m), L = view_of(*f.l), O = view_of(*f.o), PV = first_rows(view_of(*f.pv));
  const TcmView MN = first_rows(view_of(*f.m_new)), A = first_rows(view_of(*f.alpha));
  const TcmView RS = first_rows(view_of(*f.rowsum));

  Command seq;
  seq.kind = Command::Kind::Sequence;
  seq.steps.reserve(f.causal ? 15 : 14);  // the steps below: built in place, never moved
  auto stream = [&](const Tensor& ref, const Tensor* stage, TcmView a, TcmView c, bool trans_b) {
    Command& x = seq.steps.emplace_back();
    if (!streamed) {  // operands in TCM: one GEMM
      x.kind = Command::Kind::Gemm;
      x.m = m;
      x.n = trans_b ? n : d;
      x.k = trans_b ? d : n;
      x.a = a;
      x.b = view_of(ref);
      x.c = c;
      x.trans_b = trans_b;
      return;
    }
    x.kind = Command::Kind::Composite;
    x.m = m;
    x.n = trans_b ? n : d;
    x.k = trans_b ? d : n;
    x.a = a;
    x.c = c;
    x.trans_b = trans_b;
    x.address = ref.ref_->address;
    x.b_row_bytes = ref.ref_->tensor.row_bytes();
    x.b.dtype = ref.dtype();
    x.b.rows = n;
    x.b.cols = d;
    x.tile_rows = tile;
    x.stage = view_of(*stage);
    x.stage.rows = tile;
    x.stage_buffers = stage->rows() / tile;
  };
  auto math_step = [&](MathOp mop, TcmView in0, TcmView in1, TcmView out, std::uint32_t reduce_width = 0,
                       float scalar = 0, bool serial = false) {
    add_math_step(seq.steps, mop, in0, in1, out, reduce_width, scalar, serial);
  };
  stream(*f.k, f.stage_k, view_of(*f.q), S, true);
  math_step(MathOp::Scale, S, {}, S, 0, f.scale);
  if (f.causal) {
    Command& mask = seq.steps.emplace_back();
    mask.kind = Command::Kind::Math;
    mask.op = MathOp::CausalMask;
    mask.in0 = S;
    mask.out = S;
    mask.q_pos0 = f.q_pos0;
    mask.q_period = f.q_period;
    mask.k_pos0 = f.k_pos0;
    mask.elements = S.elements();
  }
  math_step(MathOp::RowMax, S, {}, MN, n);
  math_step(MathOp::Maximum, M, MN, MN, 0, 0, true);  // first touch of the state: after earlier tiles
  math_step(MathOp::ExpDiff, S, MN, S);
  math_step(MathOp::ExpDiff, M, MN, A);
  math_step(MathOp::RowSum, S, {}, RS, n);
  math_step(MathOp::Mul, L, A, L);
  math_step(MathOp::Add, L, RS, L);
  math_step(MathOp::Copy, MN, {}, M);
  math_step(MathOp::Copy, S, {}, P);
  math_step(MathOp::Mul, O, A, O);
  stream(*f.v, f.stage_v, P, PV, false);
  math_step(MathOp::Add, O, PV, O);

  OpRecord r;
  r.engine = "gemm";
  r.kind = op;
  r.bytes = streamed ? f.k->bytes() + f.v->bytes() : 0;
  r.flops = 4ull * m * n * d;
  r.tensor = f.k->name();
  const Command& cmd = issue(std::move(seq), std::move(r));
  for (const Tensor* b : work) add_writer(*b, cmd);
  for (const Tensor* b : {f.m, f.l, f.o}) add_writer(*b, cmd);
  add_reader(*f.q, cmd);
  if (!streamed) {
    add_reader(*f.k, cmd);
    add_reader(*f.v, cmd);
  }
  return *f.o;
}

Tensor Ctx::merge_state(const Tensor& state, const Tensor& other) {
  const Name op = "merge_state";
  check(state, op, "state");
  check(other, op, "other");
  if (state.shape() != other.shape() || state.cols() < 3 || state.dtype() != DType::fp32 ||
      other.dtype() != DType::fp32 || !state.contiguous() || !other.contiguous())
    fail(op, "state " + shape_text(state.shape()) + " " + dtype_name(state.dtype()) + " and other " +
                 shape_text(other.shape()) + " " + dtype_name(other.dtype()) +
                 ": both must be the same contiguous fp32 [rows, d + 2] (O | l | m)");
  // The program does not wait: the scheduler holds the merge until its message is in
  // and what writes or reads those rows of the state (or writes `other`) is done, and
  // starts it that moment. So a reduce of some rows runs while other rows are computed.
  const std::uint32_t rows = state.rows(), d = state.cols() - 2;
  const Tensor m_new = alloc({rows, 1}, DType::fp32, Arena::Scratch, "m_new");
  const Tensor alpha = alloc({rows, 1}, DType::fp32, Arena::Scratch, "alpha");
  const Tensor beta = alloc({rows, 1}, DType::fp32, Arena::Scratch, "beta");
  charge("composite");
  Command seq;
  seq.kind = Command::Kind::Sequence;
  seq.receive = receive_in_scheduler(other);
  seq.waits_for = pending_accesses(other, true);
  for (CommandHandle& c : pending_accesses(state, true)) seq.waits_for.push_back(std::move(c));
  seq.steps.reserve(7);  // the steps below
  auto columns = [&](const Tensor& t, std::uint32_t begin, std::uint32_t count) {
    TcmView v = view_of(t);
    v.offset += static_cast<std::uint64_t>(begin) * 4;
    v.stride = d + 2;
    v.cols = count;
    return v;
  };
  const TcmView ma = columns(state, d + 1, 1), mb = columns(other, d + 1, 1);
  const TcmView ola = columns(state, 0, d + 1), olb = columns(other, 0, d + 1);
  auto step = [&](MathOp mop, TcmView in0, TcmView in1, TcmView out, bool serial = false) {
    add_math_step(seq.steps, mop, in0, in1, out, 0, 0, serial);
  };
  const TcmView mn = view_of(m_new), ea = view_of(alpha), eb = view_of(beta);
  step(MathOp::Maximum, ma, mb, mn);
  step(MathOp::ExpDiff, ma, mn, ea);
  step(MathOp::ExpDiff, mb, mn, eb);
  step(MathOp::Mul, ola, ea, ola);  // O and l in one pass each
  step(MathOp::Mul, olb, eb, olb);
  step(MathOp::Add, ola, olb, ola);
  step(MathOp::Copy, mn, {}, ma);
  OpRecord r;
  r.engine = "math";
  r.kind = op;
  r.flops = 3ull * rows * (d + 1) + 4ull * rows;
  r.tensor = state.name();
  r.shape = shape_text(state.shape());
  const Command& cmd = issue(std::move(seq), std::move(r));
  for (const Tensor* t : {&m_new, &alpha, &beta, &other, &state}) add_writer(*t, cmd);
  if (cmd.receive) scheduler_receives_[{cmd.receive->src_cube, cmd.receive->src_pe, cmd.receive->tag}] = CommandHandle(cmd);
  return state;
}

Tensor Ctx::composite(const Tensor& a, const Tensor& b, const CompositeOpts& opts) {
  return gemm_into(a, b, opts, true);
}

Tensor Ctx::dot(const Tensor& a, const Tensor& b, bool trans_b) {
  CompositeOpts o;
  o.trans_b = trans_b;
  return gemm_into(a, b, o, false);
}

// ---- MATH -----------------------------------------------------------------------------

Tensor Ctx::math(MathOp op, Name kind, const Tensor& a, const Tensor* b, const Tensor* c,
                 const Tensor* out, float scalar) {
  charge(op == MathOp::Trans ? "trans" : "math");
  const Tensor* operands[] = {&a, b, c};
  for (const Tensor* t : operands) {
    if (!t) continue;
    consume(*t, kind);
    if (t->is_ref()) fail(kind, "operands must be in TCM, not refs");
  }
  for (const Tensor* t : {b, c}) {
    if (!t) continue;
    const bool rows_ok = t->rows() == a.rows() || t->rows() == 1;
    const bool cols_ok = t->cols() == a.cols() || t->cols() == 1;
    if (!rows_ok || !cols_ok)
      fail(kind, "shape mismatch: " + shape_text(a.shape()) + " and " + shape_text(t->shape()) +
                     " (the second must match or be one row / one column)");
  }
  const Shape shape = op == MathOp::Trans ? Shape{a.cols(), a.rows()} : Shape{a.rows(), a.cols()};
  Tensor o;
  if (out) {
    check(*out, kind, "out");
    if (out->rows() != static_cast<std::uint32_t>(shape[0]) || out->cols() != static_cast<std::uint32_t>(shape[1]))
      fail(kind, "out is " + shape_text(out->shape()) + ", the result is " + shape_text(shape));
    prepare_write(*out);
    o = *out;
  } else {
    o = alloc(op == MathOp::Trans ? shape : a.shape(), DType::fp32, Arena::Scratch, kind.str());
  }
  Command cmd;
  cmd.kind = Command::Kind::Math;
  cmd.op = op;
  cmd.in0 = view_of(a);
  if (b) cmd.in1 = view_of(*b);
  if (c) cmd.in2 = view_of(*c);
  cmd.out = view_of(o);
  cmd.scalar = scalar;
  cmd.elements = a.elements();
  OpRecord r;
  r.engine = "math";
  r.kind = kind;
  r.flops = a.elements();
  r.tensor = a.name();
  const Command& issued = issue(std::move(cmd), std::move(r));
  add_writer(o, issued);
  for (const Tensor* t : operands)
    if (t && t->buffer_ != o.buffer_) add_reader(*t, issued);
  return o;
}

Tensor Ctx::add(const Tensor& a, const Tensor& b, const Tensor* out) { return math(MathOp::Add, "add", a, &b, nullptr, out); }
Tensor Ctx::sub(const Tensor& a, const Tensor& b, const Tensor* out) { return math(MathOp::Sub, "sub", a, &b, nullptr, out); }
Tensor Ctx::mul(const Tensor& a, const Tensor& b, const Tensor* out) { return math(MathOp::Mul, "mul", a, &b, nullptr, out); }
Tensor Ctx::div(const Tensor& a, const Tensor& b, const Tensor* out) { return math(MathOp::Div, "div", a, &b, nullptr, out); }
Tensor Ctx::maximum(const Tensor& a, const Tensor& b, const Tensor* out) {
  return math(MathOp::Maximum, "maximum", a, &b, nullptr, out);
}
Tensor Ctx::mul(const Tensor& a, float scalar, const Tensor* out) {
  return math(MathOp::Scale, "scale", a, nullptr, nullptr, out, scalar);
}
Tensor Ctx::exp(const Tensor& a, const Tensor* out) { return math(MathOp::Exp, "exp", a, nullptr, nullptr, out); }
Tensor Ctx::exp_diff(const Tensor& a, const Tensor& b, const Tensor* out) {
  return math(MathOp::ExpDiff, "exp_diff", a, &b, nullptr, out);
}

Tensor Ctx::causal_bias(std::uint32_t rows, std::uint32_t cols, std::int64_t q_pos0, std::uint32_t q_period,
                        std::int64_t k_pos0) {
  if (q_period == 0) fail("causal_bias", "q_period must be at least 1");
  const Tensor t = alloc({rows, cols}, DType::fp32, Arena::Scratch, "causal_bias");
  charge("math");
  Command cmd;
  cmd.kind = Command::Kind::Math;
  cmd.op = MathOp::CausalBias;
  cmd.out = view_of(t);
  cmd.q_pos0 = q_pos0;
  cmd.q_period = q_period;
  cmd.k_pos0 = k_pos0;
  cmd.elements = t.elements();
  OpRecord r;
  r.engine = "math";
  r.kind = "causal_bias";
  r.flops = t.elements();
  add_writer(t, issue(std::move(cmd), std::move(r)));
  return t;
}
Tensor Ctx::where(const Tensor& mask, const Tensor& a, const Tensor& b, const Tensor* out) {
  return math(MathOp::Where, "where", mask, &a, &b, out);
}
Tensor Ctx::copy(const Tensor& a, const Tensor& out) { return math(MathOp::Copy, "copy", a, nullptr, nullptr, &out); }
Tensor Ctx::trans(const Tensor& x) { return math(MathOp::Trans, "trans", x, nullptr, nullptr, nullptr); }

Tensor Ctx::cast(const Tensor& a, DType dtype) {
  check(a, "cast", "operand");
  const Tensor out = alloc(a.shape(), dtype, Arena::Scratch, a.name());
  return math(MathOp::Copy, "cast", a, nullptr, nullptr, &out);
}

Tensor Ctx::full(const Shape& shape, float value, Arena arena) {
  const Tensor t = alloc(shape, DType::fp32, arena, "full");
  fill(t, value);
  return t;
}

void Ctx::fill(const Tensor& out, float value) { math(MathOp::Fill, "fill", out, nullptr, nullptr, &out, value); }

Tensor Ctx::reduce(MathOp op, Name kind, const Tensor& x, int axis) {
  if (axis != 0 && axis != 1) fail(kind, "axis " + std::to_string(axis) + " is not allowed; allowed: 0 or 1");
  charge("reduce");
  consume(x, kind);
  if (x.is_ref()) fail(kind, "operand must be in TCM, not a ref");
  const Tensor out = alloc(axis == 1 ? Shape{x.rows(), 1} : Shape{1, x.cols()}, DType::fp32,
                           Arena::Scratch, kind.str());
  Command cmd;
  cmd.kind = Command::Kind::Math;
  cmd.op = op;
  cmd.in0 = view_of(x);
  cmd.out = view_of(out);
  cmd.elements = x.elements();
  cmd.reduce_width = axis == 1 ? x.cols() : x.rows();
  OpRecord r;
  r.engine = "math";
  r.kind = kind;
  r.flops = x.elements();
  r.tensor = x.name();
  const Command& issued = issue(std::move(cmd), std::move(r));
  add_writer(out, issued);
  add_reader(x, issued);
  return out;
}

Tensor Ctx::max(const Tensor& x, int axis) { return reduce(MathOp::RowMax, "max", x, axis); }
Tensor Ctx::sum(const Tensor& x, int axis) { return reduce(MathOp::RowSum, "sum", x, axis); }

Tensor Ctx::view(const Tensor& x, const Shape& shape) {
  check(x, "view", "operand");
  if (x.is_ref()) fail("view", "operand must be in TCM, not a ref");
  check_contiguous(x, "view");
  if (element_count(shape) != x.elements())
    fail("view", "cannot view " + shape_text(x.shape()) + " (" + std::to_string(x.elements()) +
                     " elements) as " + shape_text(shape));
  record_cpu("view", "view", x.name());
  Tensor v = x;
  v.shape_ = shape;
  return v;
}

Tensor Ctx::cols(const Tensor& x, std::uint32_t begin, std::uint32_t count) {
  check(x, "cols", "operand");
  if (x.is_ref()) fail("cols", "operand must be in TCM, not a ref");
  if (x.shape().size() != 2 || begin + static_cast<std::uint64_t>(count) > x.cols())
    fail("cols", "columns [" + std::to_string(begin) + ", " + std::to_string(begin + count) + ") of " +
                     shape_text(x.shape()) + " do not exist (a 2-D tensor is needed)");
  record_cpu("cols", "view", x.name());
  Tensor v = x;
  v.stride_ = x.stride_ ? x.stride_ : x.cols();
  v.shape_[1] = count;
  v.byte_offset_ += static_cast<std::uint64_t>(begin) * dtype_bytes(x.dtype());
  return v;
}

Tensor Ctx::rows(const Tensor& x, std::uint32_t begin, std::uint32_t count) {
  check(x, "rows", "operand");
  if (x.is_ref()) fail("rows", "operand must be in TCM, not a ref");
  if (begin + static_cast<std::uint64_t>(count) > x.rows())
    fail("rows", "rows [" + std::to_string(begin) + ", " + std::to_string(begin + count) + ") of " +
                     shape_text(x.shape()) + " do not exist");
  record_cpu("rows", "view", x.name());
  Tensor v = x;
  v.shape_[0] = count;
  v.byte_offset_ += static_cast<std::uint64_t>(begin) * (x.stride_ ? x.stride_ : x.cols()) * dtype_bytes(x.dtype());
  return v;
}

// ---- messages -------------------------------------------------------------------------

void Ctx::send(const PeCoord& dst, const Tensor& x, std::uint32_t tag) {
  const Name op = "send";
  if (dst.sip != sip() || dst.cube.value >= num_cubes() || dst.pe.value >= num_pes())
    fail(op, "send to a PE that does not exist here: " + dst.str() + " (this is sip" +
                 std::to_string(sip().value) + ": cubes 0-" + std::to_string(num_cubes() - 1) +
                 ", PEs 0-" + std::to_string(num_pes() - 1) + ")");
  check(x, op, "operand");
  if (x.is_ref()) fail(op, "the value sent must be in TCM, not a ref");
  check_contiguous(x, op);
  charge("send");
  // Not waited for by the program: the scheduler sends it once x is written. A value
  // still arriving by one receive of exactly its bytes (a message passed on) is taken by
  // the scheduler for the send, which then writes x; the program waits only for others.
  Command c;
  const Buffer& b = *x.buffer_;
  const Span s = span(x);
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
  r.hops = topo_.mesh().hops(cube(), dst.cube);
  r.tensor = x.name();
  r.shape = shape_text(x.shape());
  const Command& cmd = issue(std::move(c), std::move(r));
  add_reader(x, cmd);
  if (!cmd.receive) return;
  add_writer(x, cmd);
  scheduler_receives_[{cmd.receive->src_cube, cmd.receive->src_pe, cmd.receive->tag}] = CommandHandle(cmd);
}

Tensor Ctx::recv_async(const PeCoord& src, const Shape& shape, DType dtype, std::uint32_t tag,
                       const Tensor* into) {
  const Name op = "recv";
  if (src.sip != sip() || src.cube.value >= num_cubes() || src.pe.value >= num_pes())
    fail(op, "receive from a PE that does not exist here: " + src.str());
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
  r.hops = topo_.mesh().hops(cube(), src.cube);
  r.issue = r.start = cycles(sim_time());
  Buffer& b = *t.buffer_;
  const std::uint64_t op_id = log_.append(std::move(r));
  b.receives.push_back({src, tag, op_id, t.bytes(), t.span_begin(), t.span_end(), view_of(t).offset});
  posted_[{src.cube.value, src.pe.value, tag}].emplace_back(t.buffer_, op_id);
  return t;
}

void Ctx::take_messages(const Tensor& t) {
  Buffer& b = *t.buffer_;
  const Span s = span(t);
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
  auto& posted = posted_[{it->from.cube.value, it->from.pe.value, it->tag}];
  for (bool mine = false; !mine;) {
    const auto [next, next_op] = posted.front();
    posted.pop_front();
    mine = next_op == op;
    take_one(*next, next_op);
  }
}

std::optional<Command::Receive> Ctx::receive_in_scheduler(const Tensor& t) {
  Buffer& b = *t.buffer_;
  const Span s = span(t);
  const auto it =
      std::find_if(b.receives.begin(), b.receives.end(), [&](const auto& r) { return r.begin < s.end && s.begin < r.end; });
  if (it == b.receives.end()) return std::nullopt;
  const Buffer::Receive r = *it;
  // The earlier receives of its sender and tag are taken first, as take_message does.
  auto& posted = posted_[{r.from.cube.value, r.from.pe.value, r.tag}];
  while (posted.front().second != r.op) {
    const auto [next, next_op] = posted.front();
    posted.pop_front();
    take_one(*next, next_op);
  }
  posted.pop_front();
  b.receives.erase(std::find_if(b.receives.begin(), b.receives.end(), [&](const auto& x) { return x.op == r.op; }));
  Command::Receive out;
  out.src_cube = r.from.cube.value;
  out.src_pe = r.from.pe.value;
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
  if (const auto held = scheduler_receives_.find({r.from.cube.value, r.from.pe.value, r.tag});
      held != scheduler_receives_.end())
    block_on(*held->second, [&] {
      return "a held receive from " + r.from.str() + " with tag " + std::to_string(r.tag);
    });
  std::optional<Message> m;
  while (!(m = pe_.ipcq.take(r.from.cube.value, r.from.pe.value, r.tag))) {
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
}

Tensor Ctx::recv(const PeCoord& src, const Shape& shape, DType dtype, std::uint32_t tag) {
  Tensor t = recv_async(src, shape, dtype, tag);
  wait(t);
  return t;
}

void Ctx::wait(const Tensor& t) {
  check(t, "wait", "operand");
  charge("wait");
  consume(t, "wait");
}

}  // namespace kb::tl
