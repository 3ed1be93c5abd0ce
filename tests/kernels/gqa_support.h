#pragma once
// Helpers for the GQA suites: numeric parity of a decode's O with the fp64 reference.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "kernels/gqa/decode_run.h"

namespace kb::test {

// O within the FlashAttention-style tolerance: at most twice the error of the naive
// computation in the storage dtype, plus 1e-5; and finite.
inline void expect_decode_parity(const gqa::DecodeConfig& cfg, const gqa::AttentionInputs& in, const HostTensor& o) {
  const auto shape = gqa::reference_shape(cfg);
  const auto exact = reference::attention(shape, in.q.data, in.k.data, in.v.data);
  const auto naive = reference::attention_naive(shape, in.q.data, in.k.data, in.v.data, cfg.dtype);
  const double err = reference::max_abs_error(o.data, exact);
  const double naive_err = reference::max_abs_error(std::vector<float>(naive.begin(), naive.end()), exact);
  EXPECT_LE(err, 2 * naive_err + 1e-5) << "kernel error " << err << ", naive " << dtype_name(cfg.dtype) << " error "
                                       << naive_err;
  for (const float v : o.data) ASSERT_TRUE(std::isfinite(v));
}

}  // namespace kb::test
