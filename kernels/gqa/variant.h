#pragma once
// How a GQA kernel issues a tile's work (docs/gqa_decode.md, docs/gqa_prefill.md): as tl
// ops (naive or software-pipelined), or as sequences of an optional hardware sequencer
// (fused; kernels/gqa/fused.h), which the machine as specified does not have.
#include <cstdint>
#include <optional>
#include <string>

namespace kb::gqa {

enum class Variant : std::uint8_t {
  Naive,      // opt1 (decode): each tile's GEMMs, softmax and update in order
  Pipelined,  // opt3: tile j+1's Q.K^T is issued before tile j's softmax (the default)
  Fused,      // opt2: each tile, and each merge of two states, is one sequence command
};
std::optional<Variant> parse_variant(const std::string& name);
const char* variant_name(Variant v);

}  // namespace kb::gqa
