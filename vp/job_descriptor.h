#pragma once
// A job descriptor: what software inside a platform writes into the accelerator's HBM
// to ask for a kernel run (examples/vp/README.md has the table). 128 bytes, 64-byte
// aligned, little-endian; the accelerator fills the result words when the job ends.
#include <array>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include "base/dtype.h"

namespace kb::vp {

namespace desc {
constexpr std::uint64_t kBytes = 128, kAlign = 64;
constexpr std::uint32_t kMagic = 0x444A424B;  // "KBJD"
constexpr std::uint16_t kVersion = 1;
constexpr std::uint16_t kLayoutOnly = 1;
constexpr std::uint64_t kMaxRequests = 65536;  // a batch's length list, at most  // flag: write the layout table, do not run
// Byte offsets of the fields.
constexpr std::uint64_t kMagicAt = 0x00, kVersionAt = 0x04, kKernelAt = 0x06, kDtypeAt = 0x08, kCausalAt = 0x09,
                        kFlagsAt = 0x0A, kHqAt = 0x0C, kHkvAt = 0x10, kDAt = 0x14, kTqAt = 0x18, kPageRowsAt = 0x1C, kSAt = 0x20,
                        kCubesAt = 0x28, kPesAt = 0x2C, kQAt = 0x30, kKAt = 0x38, kVAt = 0x40, kOAt = 0x48,
                        kStateAt = 0x50, kTableAt = 0x58, kTableBytesAt = 0x60, kLensAt = 0x68, kStatusAt = 0x70, kErrorAt = 0x74,
                        kCyclesAt = 0x78;
}  // namespace desc

enum class Kernel : std::uint16_t { GqaDecode = 1, GqaPrefill = 2, GqaDecodeBatch = 3 };

// Why a job failed: the kError register and the descriptor's error word.
enum class ErrorCode : std::uint32_t {
  None = 0,
  DescriptorAddress = 1,  // not 64-byte aligned, or not inside one HBM channel
  Magic = 2,
  Version = 3,
  Kernel = 4,       // no such kernel
  Dtype = 5,        // no such storage type
  Reserved = 6,     // an unknown flag, causal not 0 or 1, or a field the kernel does not take not zero
  Shape = 7,        // a shape or placement the machine cannot run (heads, d, S, C, P, TCM)
  TensorAlign = 8,  // a tensor offset not a multiple of kShardAlign
  TensorRange = 9,  // a tensor does not fit in its channels from its offset
  Overlap = 10,     // two tensors share bytes of a channel
  TableAddress = 11,  // the layout table is not 8-byte aligned inside one HBM channel
  TableRoom = 12,     // the layout table needs more bytes than given (its header says how many)
  Fault = 13,         // a kernel failed while running; the accelerator takes no further job
  Halted = 14,        // queued behind a fault
  LensAddress = 15,   // the batch's length list is not 8-byte aligned inside one HBM channel
  Reset = 16,         // stopped by a reset (kReset) while it ran
};
const char* error_name(ErrorCode code);

class JobError : public std::runtime_error {
 public:
  JobError(ErrorCode code, const std::string& what) : std::runtime_error(what), code_(code) {}
  ErrorCode code() const { return code_; }

 private:
  ErrorCode code_;
};

// A descriptor's request. Tensor offsets are byte offsets inside an HBM channel: each
// tensor sits at its offset in every channel that holds a part of it (README, layout).
struct JobDescriptor {
  Kernel kernel = Kernel::GqaDecode;
  DType dtype = DType::bf16;
  bool causal = true;
  bool layout_only = false;
  std::uint32_t h_q = 0, h_kv = 0, d = 0, t_q = 0;  // prefill: t_q 0 is S
  std::uint64_t s = 0;                // batched decode: 0 (the lengths give it)
  std::uint32_t cubes = 0, pes = 0;  // C, P; 0: the default rule's
  // Batched decode: KV rows per page, and the address of the length list (u64 count,
  // then a u64 context length per request), which the accelerator reads into `lens`.
  std::uint32_t page_rows = 0;
  std::uint64_t lens_at = 0;
  std::vector<std::uint64_t> lens;
  std::uint64_t q = 0, k = 0, v = 0, o = 0, state = 0;
  std::uint64_t table = 0, table_bytes = 0;  // the layout table's address and room
};

std::array<std::uint8_t, desc::kBytes> encode(const JobDescriptor& d);
// Throws JobError (Magic, Version, Kernel, Dtype, Reserved) naming the field.
JobDescriptor decode_descriptor(const std::array<std::uint8_t, desc::kBytes>& bytes);

}  // namespace kb::vp
