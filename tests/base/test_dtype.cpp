// bf16 conversion against bit patterns worked out by hand from IEEE 754, not against
// another conversion: round to nearest, ties to even; NaN stays NaN; overflow is inf.
#include <gtest/gtest.h>

#include <bit>
#include <cmath>

#include "base/dtype.h"

namespace kb {
namespace {

std::uint16_t bf16_of_bits(std::uint32_t bits) { return fp32_to_bf16(std::bit_cast<float>(bits)); }

TEST(Bf16, RoundsToNearestTiesToEven) {
  EXPECT_EQ(bf16_of_bits(0x3F800000u), 0x3F80u);  // 1.0 is exact
  EXPECT_EQ(bf16_of_bits(0x3F808000u), 0x3F80u);  // 1 + 2^-8: halfway, 0x3F80 is even
  EXPECT_EQ(bf16_of_bits(0x3F818000u), 0x3F82u);  // halfway between 0x3F81 and 0x3F82: up to even
  EXPECT_EQ(bf16_of_bits(0x3F808001u), 0x3F81u);  // just above halfway: up
  EXPECT_EQ(bf16_of_bits(0x3F807FFFu), 0x3F80u);  // just below halfway: down
  EXPECT_EQ(bf16_of_bits(0xC0490FDBu), 0xC049u);  // -pi -> -3.140625
  EXPECT_EQ(bf16_of_bits(0x3F7FFFFFu), 0x3F80u);  // the largest float below 1 rounds up to 1
}

TEST(Bf16, SpecialValues) {
  EXPECT_EQ(bf16_of_bits(0x00000000u), 0x0000u);  // +0
  EXPECT_EQ(bf16_of_bits(0x80000000u), 0x8000u);  // -0
  EXPECT_EQ(bf16_of_bits(0x7F800000u), 0x7F80u);  // +inf
  EXPECT_EQ(bf16_of_bits(0xFF800000u), 0xFF80u);  // -inf
  EXPECT_EQ(bf16_of_bits(0x7F7FFFFFu), 0x7F80u);  // the largest finite float overflows to inf
  EXPECT_EQ(bf16_of_bits(0x00000001u), 0x0000u);  // the smallest denormal rounds to 0
  EXPECT_EQ(bf16_of_bits(0x7FC00000u), 0x7FC0u);  // quiet NaN
  const std::uint16_t snan = bf16_of_bits(0x7F800001u);  // a NaN whose payload is in the low bits
  EXPECT_EQ(snan & 0x7F80u, 0x7F80u);
  EXPECT_NE(snan & 0x007Fu, 0u);  // still a NaN, not inf
}

TEST(Bf16, WidensByAppendingZeroBits) {
  EXPECT_EQ(std::bit_cast<std::uint32_t>(bf16_to_fp32(0x4049u)), 0x40490000u);
  EXPECT_EQ(bf16_to_fp32(0x4049u), 3.140625f);
  EXPECT_EQ(bf16_to_fp32(0xBF80u), -1.0f);
  EXPECT_TRUE(std::isinf(bf16_to_fp32(0x7F80u)));
}

}  // namespace
}  // namespace kb
