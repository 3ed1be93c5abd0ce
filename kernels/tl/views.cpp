// Views: the same bytes under a new shape, a row slice or a column slice. As ops each
// costs the CPU its `view` issue cycles and moves nothing; a sequence's steps make them
// as part of its one issue.
#include "kernels/tl/ctx.h"
#include "kernels/tl/detail.h"

namespace kb::tl {

using detail::element_count;

Tensor Ctx::view(const Tensor& x, const Shape& shape) {
  Tensor v = reshaped("view", x, shape);
  record_cpu("view", "view", x.name());
  return v;
}

Tensor Ctx::cols(const Tensor& x, std::uint32_t begin, std::uint32_t count) {
  Tensor v = col_slice("cols", x, begin, count);
  record_cpu("cols", "view", x.name());
  return v;
}

Tensor Ctx::rows(const Tensor& x, std::uint32_t begin, std::uint32_t count) {
  Tensor v = row_slice("rows", x, begin, count);
  record_cpu("rows", "view", x.name());
  return v;
}

Tensor Ctx::reshaped(std::string_view op, const Tensor& x, const Shape& shape) const {
  check(x, op, "operand");
  if (x.is_ref()) fail(op, "operand must be in TCM, not a ref");
  check_contiguous(x, op);
  if (element_count(shape) != x.elements())
    fail(op, "cannot view " + shape_text(x.shape()) + " (" + std::to_string(x.elements()) + " elements) as " +
                 shape_text(shape));
  Tensor v = x;
  v.shape_ = shape;
  return v;
}

Tensor Ctx::col_slice(std::string_view op, const Tensor& x, std::uint32_t begin, std::uint32_t count) const {
  check(x, op, "operand");
  if (x.is_ref()) fail(op, "operand must be in TCM, not a ref");
  if (x.shape().size() != 2 || begin + static_cast<std::uint64_t>(count) > x.cols())
    fail(op, "columns [" + std::to_string(begin) + ", " + std::to_string(begin + count) + ") of " +
                 shape_text(x.shape()) + " do not exist (a 2-D tensor is needed)");
  Tensor v = x;
  v.stride_ = x.stride_ ? x.stride_ : x.cols();
  v.shape_[1] = count;
  v.byte_offset_ += static_cast<std::uint64_t>(begin) * dtype_bytes(x.dtype());
  return v;
}

Tensor Ctx::row_slice(std::string_view op, const Tensor& x, std::uint32_t begin, std::uint32_t count) const {
  check(x, op, "operand");
  if (x.is_ref()) fail(op, "operand must be in TCM, not a ref");
  if (begin + static_cast<std::uint64_t>(count) > x.rows())
    fail(op, "rows [" + std::to_string(begin) + ", " + std::to_string(begin + count) + ") of " +
                 shape_text(x.shape()) + " do not exist");
  Tensor v = x;
  v.shape_[0] = count;
  v.byte_offset_ += static_cast<std::uint64_t>(begin) * (x.stride_ ? x.stride_ : x.cols()) * dtype_bytes(x.dtype());
  return v;
}

}  // namespace kb::tl
