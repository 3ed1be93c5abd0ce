#pragma once
// Storage data types. bf16 is real bfloat16 (the top 16 bits of an IEEE fp32, rounded
// to nearest even), not an f16 proxy. Arithmetic is always fp32.
#include <cstdint>
#include <cstring>
#include <optional>
#include <string>

namespace kb {

enum class DType : std::uint8_t { bf16, fp32 };

inline std::size_t dtype_bytes(DType t) { return t == DType::bf16 ? 2 : 4; }
inline const char* dtype_name(DType t) { return t == DType::bf16 ? "bf16" : "fp32"; }
std::optional<DType> parse_dtype(const std::string& name);

inline std::uint16_t fp32_to_bf16(float f) {
  std::uint32_t u;
  std::memcpy(&u, &f, 4);
  if ((u & 0x7fffffffu) > 0x7f800000u) return static_cast<std::uint16_t>((u >> 16) | 0x40);  // quiet NaN
  u += 0x7fffu + ((u >> 16) & 1u);  // round to nearest, ties to even
  return static_cast<std::uint16_t>(u >> 16);
}

inline float bf16_to_fp32(std::uint16_t h) {
  const std::uint32_t u = static_cast<std::uint32_t>(h) << 16;
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

// Converts n values between a float array and storage of type t.
void encode(DType t, const float* src, std::uint8_t* dst, std::size_t n);
void decode(DType t, const std::uint8_t* src, float* dst, std::size_t n);

}  // namespace kb
