#pragma once
// The workloads `kernbench run` knows besides hbm_stream: the tl example kernels on
// seeded random inputs placed over every PE of each chosen device.
#include <cstdint>
#include <string>
#include <vector>

#include "platform/runtime_context.h"

namespace kb::workloads {

struct ExampleKnobs {
  std::uint32_t rows_per_pe = 256;  // rows of A (or X) each PE holds
  std::uint32_t k = 128, n = 128;   // GEMM: A [rows, k] x B [k, n]; softmax rows have k columns
  std::uint32_t m_tile = 64;        // rows per tile of the kernel's sweep
  std::uint32_t k_tile = 64;        // rows of B per composite tile
  DType dtype = DType::bf16;
  std::uint32_t seed = 1;
};

const std::vector<std::string>& example_kernels();  // tiled_gemm, row_softmax

// Places the inputs, launches on every device and runs. Returns the simulated cycles.
std::uint64_t run_example(RuntimeContext& rt, const std::string& kernel, const ExampleKnobs& knobs,
                          const std::vector<SipId>& devices);

}  // namespace kb::workloads
