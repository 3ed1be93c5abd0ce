#pragma once
// The 2-level reduce of a decode state to the group's root cube (docs/gqa_decode.md,
// Reduce to root), shared by decode and batched decode.
#include <cstdint>
#include <functional>
#include <variant>
#include <vector>

#include "kernels/gqa/gqa_decode.h"
#include "kernels/gqa/helpers.h"

namespace kb::gqa {

struct ReduceTags {
  std::uint32_t level2, level1;
};

// Rows of a state that this PE stores as rows of O, and what the store uses, made ahead:
// the O and l columns of those rows and the buffer O / l goes into, in the storage dtype.
struct StoredRows {
  RowRange rows;
  tl::Tensor o, l, out;
  static StoredRows of(tl::Ctx& tl, const tl::Tensor& state, RowRange rows, DType dtype);
};

// The reduce of this PE's state [m, d + 2] with those of every PE of the group,
// scattered by rows: part j of the rows is merged over the cube at PE j by recursive
// halving (Level 2, IPCQ), then over the cubes on the center-root tree, in segments
// (Level 1, NOC). The program takes its steps (sends, and merges of received states) in
// order: finish() takes them all, a merge's first op waiting for its message, while
// advance() takes those that need not wait and stops before a merge whose message has
// not come, so a program can do other work meanwhile and come back. Fused merges
// (merge_state) never wait in the program.
class RootReduce {
 public:
  RootReduce(tl::Ctx& tl, const DecodeParams& p, const GroupGeometry& geo, std::uint32_t cube_index,
             const tl::Tensor& state, ReduceTags tags);
  void advance() { run(false); }
  // The segments of rows this PE holds reduced over the group (an owner on the root
  // cube), in order, ready to store (their views made while the messages travelled);
  // none on any other PE.
  std::vector<StoredRows> finish();

 private:
  // A step; false when it would wait and `wait` is false (it is taken again later).
  using Step = std::function<bool(bool wait)>;
  // Rows of the state, or (Level 1) the index of one of its segments.
  void send(const PeCoord& to, std::variant<RowRange, std::size_t> what, std::uint32_t tag);
  void merge(const PeCoord& from, std::variant<RowRange, std::size_t> into, std::uint32_t tag);
  tl::Tensor rows(RowRange r);
  tl::Tensor target(const std::variant<RowRange, std::size_t>& rows_or_segment);
  void run(bool wait);

  tl::Ctx& tl_;
  Variant variant_;
  tl::Tensor state_;
  std::vector<Step> steps_;
  std::size_t next_ = 0;
  std::vector<tl::Tensor> segments_;  // Level 1's, made by its first step
  std::vector<StoredRows> stored_;
};

// RootReduce(...).finish(): the whole reduce at once.
std::vector<StoredRows> reduce_to_root(tl::Ctx& tl, const DecodeParams& p, const GroupGeometry& geo,
                                       std::uint32_t cube_index, const tl::Tensor& state, ReduceTags tags);

// Rows of a state reduced over the group: divided by l into the storage dtype and stored
// as rows first + rows.begin of O.
void store_state(tl::Ctx& tl, const StoredRows& s, const DeviceTensor& o, std::uint64_t first);

}  // namespace kb::gqa
