#pragma once
// What both prefill rings do with a query tile (docs/gqa_prefill.md): its TCM slots
// (query rows and (m, l, O) state), the chunk and work buffers, one flash tile of a
// (query tile, KV chunk) pair, and the end of a tile, O / l stored in the storage dtype.
#include <array>
#include <map>
#include <utility>

#include "kernels/gqa/helpers.h"
#include "kernels/gqa/prefill_plan.h"

namespace kb::gqa {

// Whether any key of `keys` is visible to a query of the tile (causal: not all in its future).
bool visible(const AttentionParams& p, RowRange keys, const PrefillTile& t);

// One flash tile: the tile's queries q against keys `keys` (k, v in TCM), into its state.
void flash_pair(tl::Ctx& tl, const AttentionParams& p, const PrefillTile& t, RowRange keys, const tl::Tensor& q,
                const tl::Tensor& k, const tl::Tensor& v, const SoftmaxState& st, const FlashWork& w);

// Four TCM slots, each a query tile's rows and its state; views per (slot, rows) are made
// once and reused.
class TileSlots {
 public:
  static constexpr std::size_t kSlots = 4;
  struct Views {
    tl::Tensor q, s;
    SoftmaxState st;
  };
  TileSlots(tl::Ctx& tl, std::uint32_t rows, std::uint32_t d, DType dtype);
  const Views& at(std::size_t slot, std::uint64_t rows);
  const tl::Tensor& q_buffer(std::size_t slot) const { return q_[slot]; }
  const tl::Tensor& state_buffer(std::size_t slot) const { return s_[slot]; }

 private:
  tl::Ctx& tl_;
  std::array<tl::Tensor, kSlots> q_, s_;
  std::map<std::pair<std::size_t, std::uint64_t>, Views> views_;
};

// A PE's buffers in either ring: four K and four V chunk buffers, the tile slots and two
// flash-tile work sets, allocated in that order.
struct PrefillBuffers {
  static constexpr std::size_t kChunks = 4;
  struct Chunks {
    std::array<tl::Tensor, kChunks> k, v;
  } chunks;
  TileSlots slots;
  std::array<FlashWork, 2> work;
  PrefillBuffers(tl::Ctx& tl, const PrefillPlan& plan, DType dtype);
};

// O / l of `st` into `out` ([rows, d] fp32), cast to the storage dtype into the first
// rows of `cast_buffer` unless that is fp32, and stored to `rows` of o.
void store_output(tl::Ctx& tl, const SoftmaxState& st, const tl::Tensor& out, const tl::Tensor& cast_buffer,
                  DType dtype, const DeviceTensor& o, RowRange rows);

}  // namespace kb::gqa
