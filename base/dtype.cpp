#include "base/dtype.h"

namespace kb {

std::optional<DType> parse_dtype(const std::string& name) {
  if (name == "bf16") return DType::bf16;
  if (name == "fp32") return DType::fp32;
  return std::nullopt;
}

void encode(DType t, const float* src, std::uint8_t* dst, std::size_t n) {
  if (t == DType::fp32) {
    std::memcpy(dst, src, n * 4);
    return;
  }
  for (std::size_t i = 0; i < n; ++i) {
    const std::uint16_t h = fp32_to_bf16(src[i]);
    std::memcpy(dst + 2 * i, &h, 2);
  }
}

void decode(DType t, const std::uint8_t* src, float* dst, std::size_t n) {
  if (t == DType::fp32) {
    std::memcpy(dst, src, n * 4);
    return;
  }
  for (std::size_t i = 0; i < n; ++i) {
    std::uint16_t h;
    std::memcpy(&h, src + 2 * i, 2);
    dst[i] = bf16_to_fp32(h);
  }
}

}  // namespace kb
