#pragma once
// What both prefill rings do with a query tile (docs/gqa_prefill.md): its TCM slots
// (query rows and (m, l, O) state), the chunk and work buffers, the attention of a
// (query tile, KV chunk) pair, and the end of a tile, O / l stored in the storage dtype.
#include <array>
#include <map>
#include <tuple>
#include <utility>

#include "kernels/gqa/helpers.h"
#include "kernels/gqa/prefill_plan.h"

namespace kb::gqa {

// Whether any key of `keys` is visible to a query of the tile (causal: not all in its future).
bool visible(const AttentionParams& p, RowRange keys, const PrefillTile& t);

// A (query tile, KV chunk) pair: the tile's queries q against keys `keys` (k, v in TCM),
// into the tile's state.
struct FlashPair {
  const PrefillTile* tile = nullptr;
  RowRange keys;
  tl::Tensor q, k, v;
  SoftmaxState st;
};

// Issues a PE's pairs in its order, as the variant builds them (docs/gqa_prefill.md, Per
// PE). Fused: each pair one flash tile (a sequence). Pipelined: tl ops; pair i + 1's
// Q.K^T is issued before pair i's softmax, so the GEMM engine goes from one to the other
// while the vector unit works, and P.V accumulates into O.
class FlashPairs {
 public:
  FlashPairs(tl::Ctx& tl, const AttentionParams& p, Variant variant, const std::array<FlashWork, 2>& work);
  // Pair i of the order, and pair i + 1 when there is one: on return pair i is issued
  // whole (pipelined: and pair i + 1's Q.K^T).
  void run(std::size_t i, const FlashPair& pair, const FlashPair* next);
  bool pipelined() const { return variant_ == Variant::Pipelined; }

 private:
  // A work set's views for a pair of m query rows and n keys, made once.
  struct Views {
    tl::Tensor s, p, m_new, alpha, rowsum;
  };
  const Views& views(std::size_t set, std::uint32_t m, std::uint32_t n);
  void qk(std::size_t i, const FlashPair& pair);
  void softmax_pv(std::size_t i, const FlashPair& pair);
  bool masked(const FlashPair& pair) const;  // the diagonal crosses it
  std::int64_t first_query(const FlashPair& pair) const;

  tl::Ctx& tl_;
  const AttentionParams& p_;
  Variant variant_;
  const std::array<FlashWork, 2>& work_;
  std::map<std::tuple<std::size_t, std::uint32_t, std::uint32_t>, Views> views_;
  std::size_t qk_issued_ = 0;  // pairs whose Q.K^T is issued
};

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
// work sets of a pair, allocated in that order; pipelined, then the [m, d] fp32 buffer O /
// l goes into at a tile's end (fused uses a work set's P.V buffer).
struct PrefillBuffers {
  static constexpr std::size_t kChunks = 4;
  struct Chunks {
    std::array<tl::Tensor, kChunks> k, v;
  } chunks;
  TileSlots slots;
  std::array<FlashWork, 2> work;
  tl::Tensor out;
  PrefillBuffers(tl::Ctx& tl, const PrefillPlan& plan, DType dtype);
};

// O / l of `st` into `out` ([rows, d] fp32), cast to the storage dtype into the first
// rows of `cast_buffer` unless that is fp32, and stored to `rows` of o.
void store_output(tl::Ctx& tl, const SoftmaxState& st, const tl::Tensor& out, const tl::Tensor& cast_buffer,
                  DType dtype, const DeviceTensor& o, RowRange rows);

}  // namespace kb::gqa
