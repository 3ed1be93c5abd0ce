#include "kernels/gqa/variant.h"

namespace kb::gqa {

std::optional<Variant> parse_variant(const std::string& name) {
  if (name == "naive") return Variant::Naive;
  if (name == "pipelined") return Variant::Pipelined;
  if (name == "fused") return Variant::Fused;
  return std::nullopt;
}

const char* variant_name(Variant v) {
  switch (v) {
    case Variant::Naive: return "naive";
    case Variant::Pipelined: return "pipelined";
    case Variant::Fused: return "fused";
  }
  return "?";
}

}  // namespace kb::gqa
