#pragma once
// GQA decode as a vp::Accelerator job. add_decode_job places Q, K, V and O in the
// SIP's HBM (as gqa::plan_decode does) and tells the host where every row goes: the
// host writes Q, K and V through the accelerator's hbm socket, starts the job through
// the register block, and reads O back from where the map says.
#include <cstdint>
#include <string>
#include <vector>

#include "workloads/gqa_decode/decode_run.h"
#include "vp/accelerator.h"

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

struct DecodeJob {
  std::uint32_t id = 0;   // the number to write to reg::kJob
  TensorMap q, k, v, o;   // q, o [H_q, T_q, d]; k, v [H_kv, S, d]
};

// Throws std::invalid_argument if the configuration does not fit the accelerator's SIP.
DecodeJob add_decode_job(Accelerator& accelerator, gqa::DecodeConfig config);

}  // namespace kb::vp
