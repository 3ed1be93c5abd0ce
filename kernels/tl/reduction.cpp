// Reductions on the MATH engine: one value per row (axis 1) or per column (axis 0).
#include "kernels/tl/ctx.h"

namespace kb::tl {

Tensor Ctx::reduce(MathOp op, Name kind, const Tensor& x, int axis, const Tensor* into) {
  if (axis != 0 && axis != 1) fail(kind, "axis " + std::to_string(axis) + " is not allowed; allowed: 0 or 1");
  charge("reduce");
  consume(x, kind);
  if (x.is_ref()) fail(kind, "operand must be in TCM, not a ref");
  const std::uint32_t rows = axis == 1 ? x.rows() : 1, cols = axis == 1 ? 1 : x.cols();
  const Tensor out = result(kind, rows, cols, into, {rows, cols});
  Command cmd;
  cmd.op = op;
  cmd.in0 = view_of(x);
  cmd.reduce_width = axis == 1 ? x.cols() : x.rows();
  issue_math(std::move(cmd), kind, out, {&x});
  return out;
}

Tensor Ctx::max(const Tensor& x, int axis, const Tensor* out) { return reduce(MathOp::RowMax, "max", x, axis, out); }
Tensor Ctx::sum(const Tensor& x, int axis, const Tensor* out) { return reduce(MathOp::RowSum, "sum", x, axis, out); }
Tensor Ctx::argmax(const Tensor& x, int axis, const Tensor* out) {
  return reduce(MathOp::RowArgMax, "argmax", x, axis, out);
}

}  // namespace kb::tl
