// The GEMM ops: a composite streams a `ref` b through the scheduler's tile plan; a dot
// is one GEMM on operands in TCM.
#include <algorithm>

#include "kernels/tl/ctx.h"

namespace kb::tl {

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
  if (opts.preloaded_rows && (!composite || !b.is_ref() || !opts.stage))
    fail(op, "preloaded_rows needs a composite streaming a ref through a given stage");
  if (b.is_ref()) {
    const std::uint32_t tile = std::min<std::uint32_t>(opts.tile_rows, std::max<std::uint32_t>(b.rows(), 1));
    if (opts.preloaded_rows && (opts.preloaded_rows > b.rows() ||
                                (opts.preloaded_rows % tile && opts.preloaded_rows != b.rows()) ||
                                (opts.preloaded_rows < b.rows() && opts.stage->rows() < opts.preloaded_rows + 2 * tile)))
      fail(op, "preloaded_rows " + std::to_string(opts.preloaded_rows) + " of b's " + std::to_string(b.rows()) +
                   ": a whole number of tiles of " + std::to_string(tile) +
                   " rows (or all of b), with two more tiles' room in the stage for the rest");
    if (opts.stage) {
      check(*opts.stage, op, "stage");
      const std::uint32_t least = opts.preloaded_rows == b.rows() ? b.rows() : 2 * tile;  // all of b preloaded: no stream
      if (opts.stage->dtype() != b.dtype() || opts.stage->cols() != b.cols() || opts.stage->rows() < least)
        fail(op, "stage is " + shape_text(opts.stage->shape()) + " " + dtype_name(opts.stage->dtype()) +
                     "; streaming b needs at least [" + std::to_string(least) + ", " +
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
    c.preloaded_tiles = (opts.preloaded_rows + c.tile_rows - 1) / c.tile_rows;
    if (opts.preloaded_rows == b.rows()) c.stage_buffers = c.preloaded_tiles;  // the last tile may be short
    c.stage = view_of(stage);
    c.stage.rows = c.tile_rows;
    r.bytes = b.bytes() - std::uint64_t{opts.preloaded_rows} * c.b_row_bytes;  // the preloaded rows came by their own load
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

Tensor Ctx::composite(const Tensor& a, const Tensor& b, const CompositeOpts& opts) {
  return gemm_into(a, b, opts, true);
}

void Ctx::preload(const Tensor& b, std::uint32_t rows, const Tensor& stage) {
  if (!b.is_ref()) fail("preload", "b must be an HBM ref");
  if (rows > b.rows()) fail("preload", std::to_string(rows) + " rows of a ref of " + std::to_string(b.rows()));
  const Tensor head = row_slice("preload", stage, 0, rows);
  load(b.ref_->tensor, {b.ref_->rows.begin, rows}, &head);
}

Tensor Ctx::dot(const Tensor& a, const Tensor& b, bool trans_b) {
  CompositeOpts o;
  o.trans_b = trans_b;
  return gemm_into(a, b, o, false);
}

}  // namespace kb::tl
