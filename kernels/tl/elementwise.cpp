// Elementwise MATH ops: out = op(a, b) with b broadcast as one row or one column.
#include "kernels/tl/ctx.h"

namespace kb::tl {

Tensor Ctx::math(MathOp op, Name kind, const Tensor& a, const Tensor* b, const Tensor* c,
                 const Tensor* out, float scalar, const Positions* positions) {
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
  const Tensor o = op == MathOp::Trans ? result(kind, a.cols(), a.rows(), out, {a.cols(), a.rows()})
                                       : result(kind, a.rows(), a.cols(), out, a.shape());
  Command cmd;
  cmd.op = op;
  cmd.in0 = view_of(a);
  if (b) cmd.in1 = view_of(*b);
  if (c) cmd.in2 = view_of(*c);
  cmd.scalar = scalar;
  if (positions) {
    cmd.q_pos0 = positions->q_pos0;
    cmd.q_period = positions->q_period;
    cmd.k_pos0 = positions->k_pos0;
  }
  issue_math(std::move(cmd), kind, o, {&a, b, c});
  return o;
}

void Ctx::issue_math(Command&& cmd, Name kind, const Tensor& out, std::initializer_list<const Tensor*> operands) {
  const Tensor& a = **operands.begin();
  cmd.kind = Command::Kind::Math;
  cmd.out = view_of(out);
  cmd.elements = a.elements();
  OpRecord r;
  r.engine = "math";
  r.kind = kind;
  r.flops = a.elements();
  r.tensor = a.name();
  const Command& issued = issue(std::move(cmd), std::move(r));
  add_writer(out, issued);
  for (const Tensor* t : operands)
    if (t && t->buffer_ != out.buffer_) add_reader(*t, issued);
}

Tensor Ctx::result(Name kind, std::uint32_t rows, std::uint32_t cols, const Tensor* out, const Shape& shape) {
  if (!out) return alloc(shape, DType::fp32, Arena::Scratch, kind.str());
  check(*out, kind, "out");
  if (out->rows() != rows || out->cols() != cols)
    fail(kind, "out is " + shape_text(out->shape()) + ", the result is " + shape_text({rows, cols}));
  prepare_write(*out);
  return *out;
}

Tensor Ctx::add(const Tensor& a, const Tensor& b, const Tensor* out) { return math(MathOp::Add, "add", a, &b, nullptr, out); }
Tensor Ctx::sub(const Tensor& a, const Tensor& b, const Tensor* out) { return math(MathOp::Sub, "sub", a, &b, nullptr, out); }
Tensor Ctx::mul(const Tensor& a, const Tensor& b, const Tensor* out) { return math(MathOp::Mul, "mul", a, &b, nullptr, out); }
Tensor Ctx::div(const Tensor& a, const Tensor& b, const Tensor* out) { return math(MathOp::Div, "div", a, &b, nullptr, out); }
Tensor Ctx::maximum(const Tensor& a, const Tensor& b, const Tensor* out) {
  return math(MathOp::Maximum, "maximum", a, &b, nullptr, out);
}
Tensor Ctx::fma(const Tensor& a, const Tensor& b, const Tensor& c, const Tensor* out) {
  return math(MathOp::Fma, "fma", a, &b, &c, out);
}
Tensor Ctx::mul(const Tensor& a, float scalar, const Tensor* out) {
  return math(MathOp::Scale, "scale", a, nullptr, nullptr, out, scalar);
}
Tensor Ctx::exp(const Tensor& a, const Tensor* out) { return math(MathOp::Exp, "exp", a, nullptr, nullptr, out); }
Tensor Ctx::rsqrt(const Tensor& a, const Tensor* out) { return math(MathOp::Rsqrt, "rsqrt", a, nullptr, nullptr, out); }
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
Tensor Ctx::causal_mask(const Tensor& x, std::int64_t q_pos0, std::uint32_t q_period, std::int64_t k_pos0,
                        const Tensor* out) {
  if (q_period == 0) fail("causal_mask", "q_period must be at least 1");
  const Positions positions{q_pos0, q_period, k_pos0};
  return math(MathOp::CausalMask, "causal_mask", x, nullptr, nullptr, out ? out : &x, 0, &positions);
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

}  // namespace kb::tl
