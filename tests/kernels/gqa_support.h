#pragma once
// Helpers for the GQA suites: numeric parity of O with the fp64 reference.
#include <gtest/gtest.h>

#include <cmath>

#include "workloads/gqa_decode/decode_run.h"

namespace kb::test {

// O within the tolerance of gqa::check_attention, and finite.
inline void expect_attention_parity(const gqa::AttentionShape& cfg, const gqa::AttentionInputs& in, const HostTensor& o) {
  const workloads::Numerics c = gqa::check_attention(cfg, in, o);
  EXPECT_TRUE(c.pass) << "kernel error " << c.error << ", naive " << dtype_name(cfg.dtype) << " error "
                      << c.naive_error << ", tolerance " << c.tolerance;
  for (const float v : o.data) ASSERT_TRUE(std::isfinite(v));
}

}  // namespace kb::test
