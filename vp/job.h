#pragma once
// A job descriptor made into a kernel launch: validated, its tensors placed at the
// descriptor's offsets (RuntimeContext regions), and the layout software needs to fill
// and read them. The accelerator and the C++ helpers use this same code, so what a
// helper or the layout table says is where the kernel reads and writes.
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "base/dtype.h"
#include "base/shape.h"
#include "platform/runtime_context.h"
#include "vp/job_descriptor.h"

namespace kb::vp {

// Rows [first_row, first_row + rows) of a host tensor sit at `address` of the SIP's
// address map, row after row.
struct Chunk {
  std::uint64_t address = 0, first_row = 0, rows = 0;
};

// A host tensor seen as rows of `row_elements` values, stored as `dtype` in HBM. A
// replicated row has a chunk per copy: write every chunk, read any one holding a row.
struct TensorMap {
  std::string name;
  Shape shape;  // the host tensor's
  DType dtype = DType::bf16;
  std::uint64_t rows = 0, row_elements = 0;
  std::vector<Chunk> chunks;
  std::uint64_t row_bytes() const { return row_elements * dtype_bytes(dtype); }
};

// Where every row of a job's tensors goes: q and o [H_q, T_q, d], k and v [H_kv, S, d];
// state is the prefill kernel's scratch (pass-KV only; no chunk otherwise), whose rows
// are the kernel's own.
struct JobLayout {
  TensorMap q, k, v, o, state;
};

struct PlannedJob {
  std::string kernel;  // its name in reports ("gqa_decode", ...)
  JobLayout layout;
  std::function<void(RuntimeContext&)> launch;  // launches the kernel for RuntimeContext::start
};

// Validates `d` on `rt`'s SIP 0 and places its tensors at its offsets. Throws JobError:
// Shape, TensorAlign, TensorRange or Overlap (`taken`: bytes the tensors must not
// touch, e.g. the descriptor's own, as {channel, [begin, end)}).
struct TakenBytes {
  std::string what;
  PeCoord channel;
  std::uint64_t begin = 0, end = 0;
};
PlannedJob plan_job(RuntimeContext& rt, const JobDescriptor& d, const std::vector<TakenBytes>& taken = {});

// The layout table a layout-only job writes (README): a 16-byte header {u32 entries,
// u32 entry bytes (32), u64 total bytes}, then per chunk {u32 tensor (0 q, 1 k, 2 v,
// 3 o, 4 state), u32 0, u64 first row, u64 rows, u64 address}.
std::vector<std::uint8_t> layout_table(const JobLayout& layout);
constexpr std::uint64_t kTableHeaderBytes = 16, kTableEntryBytes = 32;

}  // namespace kb::vp
