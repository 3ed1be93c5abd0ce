#include "vp/job_descriptor.h"

#include <cstring>

#include "base/units.h"

namespace kb::vp {

namespace {

using Bytes = std::array<std::uint8_t, desc::kBytes>;

// Fields are little-endian, as is every host this builds for (std::memcpy keeps it so).
template <class T>
void put(Bytes& b, std::uint64_t at, T v) {
  std::memcpy(b.data() + at, &v, sizeof v);
}
template <class T>
T get(const Bytes& b, std::uint64_t at) {
  T v;
  std::memcpy(&v, b.data() + at, sizeof v);
  return v;
}

}  // namespace

const char* error_name(ErrorCode code) {
  switch (code) {
    case ErrorCode::None: return "none";
    case ErrorCode::DescriptorAddress: return "descriptor address";
    case ErrorCode::Magic: return "magic";
    case ErrorCode::Version: return "version";
    case ErrorCode::Kernel: return "kernel";
    case ErrorCode::Dtype: return "dtype";
    case ErrorCode::Reserved: return "reserved";
    case ErrorCode::Shape: return "shape";
    case ErrorCode::TensorAlign: return "tensor alignment";
    case ErrorCode::TensorRange: return "tensor range";
    case ErrorCode::Overlap: return "overlap";
    case ErrorCode::TableAddress: return "table address";
    case ErrorCode::TableRoom: return "table room";
    case ErrorCode::Fault: return "fault";
    case ErrorCode::Halted: return "halted";
    case ErrorCode::LensAddress: return "lens address";
    case ErrorCode::Reset: return "reset";
  }
  return "unknown";
}

Bytes encode(const JobDescriptor& d) {
  Bytes b{};
  put(b, desc::kMagicAt, desc::kMagic);
  put(b, desc::kVersionAt, desc::kVersion);
  put(b, desc::kKernelAt, static_cast<std::uint16_t>(d.kernel));
  put(b, desc::kDtypeAt, static_cast<std::uint8_t>(d.dtype));
  put(b, desc::kCausalAt, static_cast<std::uint8_t>(d.causal));
  put(b, desc::kFlagsAt, static_cast<std::uint16_t>(d.layout_only ? desc::kLayoutOnly : 0));
  put(b, desc::kHqAt, d.h_q);
  put(b, desc::kHkvAt, d.h_kv);
  put(b, desc::kDAt, d.d);
  put(b, desc::kTqAt, d.t_q);
  put(b, desc::kSAt, d.s);
  put(b, desc::kCubesAt, d.cubes);
  put(b, desc::kPesAt, d.pes);
  put(b, desc::kQAt, d.q);
  put(b, desc::kKAt, d.k);
  put(b, desc::kVAt, d.v);
  put(b, desc::kOAt, d.o);
  put(b, desc::kStateAt, d.state);
  put(b, desc::kTableAt, d.table);
  put(b, desc::kTableBytesAt, d.table_bytes);
  put(b, desc::kPageRowsAt, d.page_rows);
  put(b, desc::kLensAt, d.lens_at);
  return b;
}

JobDescriptor decode_descriptor(const Bytes& b) {
  if (const auto magic = get<std::uint32_t>(b, desc::kMagicAt); magic != desc::kMagic)
    throw JobError(ErrorCode::Magic, "magic " + units::format_hex(magic) + " is not a job descriptor's " + units::format_hex(desc::kMagic));
  if (const auto version = get<std::uint16_t>(b, desc::kVersionAt); version != desc::kVersion)
    throw JobError(ErrorCode::Version, "version " + std::to_string(version) + " is not supported; supported: " +
                                           std::to_string(desc::kVersion));
  JobDescriptor d;
  const auto kernel = get<std::uint16_t>(b, desc::kKernelAt);
  if (kernel < static_cast<std::uint16_t>(Kernel::GqaDecode) || kernel > static_cast<std::uint16_t>(Kernel::GqaDecodeBatch))
    throw JobError(ErrorCode::Kernel, "kernel " + std::to_string(kernel) +
                                          " does not exist; kernels: 1 (gqa_decode), 2 (gqa_prefill), 3 (gqa_decode_batch)");
  d.kernel = static_cast<Kernel>(kernel);
  const auto dtype = get<std::uint8_t>(b, desc::kDtypeAt);
  if (dtype > static_cast<std::uint8_t>(DType::fp32))
    throw JobError(ErrorCode::Dtype, "dtype " + std::to_string(dtype) + " does not exist; dtypes: 0 (bf16), 1 (fp32)");
  d.dtype = static_cast<DType>(dtype);
  const auto causal = get<std::uint8_t>(b, desc::kCausalAt);
  const auto flags = get<std::uint16_t>(b, desc::kFlagsAt);
  if (causal > 1) throw JobError(ErrorCode::Reserved, "causal " + std::to_string(causal) + " is neither 0 nor 1");
  if (flags & ~desc::kLayoutOnly)
    throw JobError(ErrorCode::Reserved, "flags " + units::format_hex(flags) + " has bits other than layout-only (0x1)");
  d.causal = causal == 1;
  d.layout_only = flags & desc::kLayoutOnly;
  d.h_q = get<std::uint32_t>(b, desc::kHqAt);
  d.h_kv = get<std::uint32_t>(b, desc::kHkvAt);
  d.d = get<std::uint32_t>(b, desc::kDAt);
  d.t_q = get<std::uint32_t>(b, desc::kTqAt);
  d.s = get<std::uint64_t>(b, desc::kSAt);
  d.cubes = get<std::uint32_t>(b, desc::kCubesAt);
  d.pes = get<std::uint32_t>(b, desc::kPesAt);
  d.q = get<std::uint64_t>(b, desc::kQAt);
  d.k = get<std::uint64_t>(b, desc::kKAt);
  d.v = get<std::uint64_t>(b, desc::kVAt);
  d.o = get<std::uint64_t>(b, desc::kOAt);
  d.state = get<std::uint64_t>(b, desc::kStateAt);
  d.table = get<std::uint64_t>(b, desc::kTableAt);
  d.table_bytes = get<std::uint64_t>(b, desc::kTableBytesAt);
  d.page_rows = get<std::uint32_t>(b, desc::kPageRowsAt);
  d.lens_at = get<std::uint64_t>(b, desc::kLensAt);
  const bool batch = d.kernel == Kernel::GqaDecodeBatch;
  if (!batch && (d.page_rows != 0 || d.lens_at != 0))
    throw JobError(ErrorCode::Reserved, "page_rows and lens are for batched decode (kernel 3); here they must be 0");
  if (batch && d.s != 0)
    throw JobError(ErrorCode::Reserved, "s is 0 for batched decode (kernel 3): the length list gives each request's");
  return d;
}

}  // namespace kb::vp
