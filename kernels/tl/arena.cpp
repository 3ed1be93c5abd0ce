// The TCM's two arenas: persistent grows up from 0, scratch down from the top; a
// scratch scope frees what was allocated inside it once its commands are done.
#include <exception>

#include "kernels/tl/ctx.h"
#include "kernels/tl/detail.h"

namespace kb::tl {

using detail::bytes_text;
using detail::element_count;

namespace {

constexpr std::uint64_t kAlign = 64;  // TCM allocation granule, bytes

}  // namespace

ScratchScope::ScratchScope(Ctx& ctx, std::uint64_t mark, std::size_t first, bool persistent)
    : ctx_(ctx), mark_(mark), first_(first), persistent_(persistent) {
  ++ctx_.scopes_;
}

ScratchScope::~ScratchScope() {
  --ctx_.scopes_;
  ctx_.end_scope(mark_, first_, persistent_);
}

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
    persistent_.push_back(b);
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

ScratchScope Ctx::scratch_scope() { return ScratchScope(*this, scratch_bottom_, scratch_.size(), false); }
ScratchScope Ctx::persistent_scope() { return ScratchScope(*this, persistent_top_, persistent_.size(), true); }

void Ctx::end_scope(std::uint64_t mark, std::size_t first, bool persistent) {
  const bool unwinding = std::uncaught_exceptions() > 0;
  std::vector<std::shared_ptr<Buffer>>& buffers = persistent ? persistent_ : scratch_;
  for (std::size_t i = first; i < buffers.size(); ++i) {
    Buffer& b = *buffers[i];
    if (!unwinding) {
      while (!b.receives.empty()) take_message(b, b.receives.front().op);  // before the space is reused
      for (const Access& w : b.writers)
        block_on(*w.cmd, [&] { return "scope end: '" + b.name + "' still being written"; });
      for (const Access& r : b.readers)
        block_on(*r.cmd, [&] { return "scope end: '" + b.name + "' still being read"; });
    }
    b.alive = false;
  }
  buffers.resize(first);
  if (persistent) {
    use_.persistent -= persistent_top_ - mark;
    persistent_top_ = mark;
  } else {
    use_.scratch -= mark - scratch_bottom_;
    scratch_bottom_ = mark;
  }
}

Tensor Ctx::persistent(const Shape& shape, DType dtype, const std::string& name) {
  Tensor t = alloc(shape, dtype, Arena::Persistent, name.empty() ? "persistent" : name);
  record_cpu("alloc", "alloc", t.name());
  return t;
}

Tensor Ctx::empty(const Shape& shape, DType dtype, const std::string& name) {
  Tensor t = alloc(shape, dtype, Arena::Scratch, name.empty() ? "empty" : name);
  record_cpu("alloc", "alloc", t.name());
  return t;
}

}  // namespace kb::tl
