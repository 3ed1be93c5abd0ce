#pragma once
// tl::Tensor: what a kernel holds. A handle to a buffer in the PE's TCM (or to rows of
// a device tensor left in HBM, a `ref`). Handles are futures: the op that made one
// returns at once; the first op that consumes it waits for it.
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "models/pe/command.h"
#include "base/device_tensor.h"

namespace kb::tl {

enum class Arena : std::uint8_t { Scratch, Persistent };

class Sequence;

// The bytes of its buffer a view covers: the span [begin, end), and, when the view is a
// rectangle of a row pitch (rows row0..row1 of `pitch` bytes, bytes col0..col1 of each),
// that rectangle. Two views of one pitch (columns of a packed state, rows of it) overlap
// only if their rectangles do; others, if their spans do.
struct Region {
  std::uint64_t begin = 0, end = 0;
  std::uint64_t pitch = 0;  // 0: not a rectangle (only the span counts)
  std::uint64_t row0 = 0, row1 = 0, col0 = 0, col1 = 0;
  bool overlaps(const Region& o) const {
    if (begin >= o.end || o.begin >= end) return false;
    if (pitch == 0 || pitch != o.pitch) return true;
    return row0 < o.row1 && o.row0 < row1 && col0 < o.col1 && o.col0 < col1;
  }
};

// A command reading or writing a region of a buffer: an access elsewhere in the buffer
// need not wait for it (rows of a state merge while others are updated, its m column is
// written while its O columns are).
struct Access {
  CommandHandle cmd;
  Region region;
};

// A TCM allocation and what is still in flight on it.
struct Buffer {
  std::string name;
  std::uint64_t offset = 0, bytes = 0;
  Arena arena = Arena::Scratch;
  bool alive = true;                      // false once its scratch scope has ended
  std::vector<Access> writers, readers;   // commands that write / read it, until done
  // Posted receives into spans of it whose messages have not been taken yet.
  struct Receive {
    PeCoord from;
    std::uint32_t tag = 0;
    std::uint64_t op = 0;           // its op-log record
    std::uint64_t bytes = 0;        // what it expects
    std::uint64_t begin = 0, end = 0;  // the span it fills (as Access)
    std::uint64_t offset = 0;       // TCM address of the span
  };
  std::vector<Receive> receives;
};

// An HBM-resident operand (`ref`): rows of a device tensor, never loaded by the kernel.
struct HbmRef {
  DeviceTensor tensor;
  std::uint64_t address = 0;  // in the SIP address map
  RowRange rows;              // global rows
};

class Tensor {
 public:
  Tensor() = default;
  const Shape& shape() const { return shape_; }
  DType dtype() const { return dtype_; }
  std::uint32_t rows() const { return static_cast<std::uint32_t>(shape_.empty() ? 1 : shape_[0]); }
  std::uint32_t cols() const {  // inline: operand tracking asks for it at every op
    std::uint64_t c = 1;
    for (std::size_t i = 1; i < shape_.size(); ++i) c *= static_cast<std::uint64_t>(shape_[i]);
    return static_cast<std::uint32_t>(c);
  }
  std::uint64_t elements() const { return static_cast<std::uint64_t>(rows()) * cols(); }
  std::uint64_t bytes() const { return elements() * dtype_bytes(dtype_); }
  const std::string& name() const;
  bool is_ref() const { return static_cast<bool>(ref_); }
  bool valid() const { return buffer_ || ref_; }

 private:
  friend class Ctx;
  friend class Sequence;
  std::shared_ptr<Buffer> buffer_;
  std::shared_ptr<const HbmRef> ref_;
  Shape shape_;
  DType dtype_ = DType::fp32;
  std::uint64_t byte_offset_ = 0;  // where a slice starts in its buffer
  std::uint32_t stride_ = 0;        // elements between rows; 0: cols() (contiguous)

 public:
  bool contiguous() const { return stride_ == 0 || stride_ == cols(); }
  Region region() const {
    Region r{span_begin(), span_end()};
    const std::uint64_t esz = dtype_bytes(dtype_), pitch = (stride_ ? stride_ : cols()) * esz;
    const std::uint64_t col0 = pitch ? byte_offset_ % pitch : 0, width = static_cast<std::uint64_t>(cols()) * esz;
    if (!buffer_ || pitch == 0 || col0 + width > pitch) return r;
    r.pitch = pitch;
    r.row0 = byte_offset_ / pitch;
    r.row1 = r.row0 + rows();
    r.col0 = col0;
    r.col1 = col0 + width;
    return r;
  }
  // The bytes of its buffer the view spans, [first, last + 1).
  std::uint64_t span_begin() const { return byte_offset_; }
  std::uint64_t span_end() const {
    if (!buffer_) return byte_offset_;
    const std::uint64_t r = rows(), c = cols();
    if (r * c == 0) return byte_offset_;
    const std::uint64_t stride = stride_ ? stride_ : c;
    return byte_offset_ + ((r - 1) * stride + c) * dtype_bytes(dtype_);
  }
};

}  // namespace kb::tl
