#pragma once
// The numeric oracle: GQA attention in fp64, and the same math done naively with its
// intermediates stored in a storage dtype (the yardstick of the FlashAttention-style
// tolerance: a kernel may err at most twice as much as the naive computation). Both are
// two Eigen GEMMs per KV head and block of query rows, so checking a run costs less than
// simulating it.
#include <cstdint>
#include <vector>

#include "base/dtype.h"

namespace kb::reference {

struct AttentionShape {
  std::uint32_t h_q = 0, h_kv = 0, t_q = 0, d = 0;
  std::uint64_t s = 0;
  bool causal = true;  // query token i sits at position s - t_q + i and sees keys <= it
  double scale = 0;
};

// q [h_q, t_q, d], k and v [h_kv, s, d], row-major. Query head h uses KV head h / G.
// Returns O [h_q, t_q, d].
std::vector<double> attention(const AttentionShape& shape, const std::vector<float>& q,
                              const std::vector<float>& k, const std::vector<float>& v);
std::vector<double> attention_naive(const AttentionShape& shape, const std::vector<float>& q,
                                    const std::vector<float>& k, const std::vector<float>& v, DType dtype);

double max_abs_error(const std::vector<float>& got, const std::vector<double>& ref);

}  // namespace kb::reference
