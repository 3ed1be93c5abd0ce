#pragma once
// Shared pieces of the GQA kernels: CUBE Group geometry, the reduce trees, the online
// softmax state and its merge.
#include <cstdint>
#include <optional>
#include <vector>

#include "kernels/gqa/fused.h"
#include "kernels/gqa/variant.h"
#include "kernels/tl/ctx.h"

namespace kb::gqa {

// A group: a w x h rectangle of cubes whose top-left cube is cube_start (docs/tl.md, Placement).
struct GroupGeometry {
  std::uint32_t cube_start = 0, w = 1, h = 1;
  Mesh mesh{1, 1};
  static GroupGeometry of(std::uint32_t cube_start, std::uint32_t cubes, const Mesh& mesh);
  std::uint32_t cubes() const { return w * h; }
  // The cube's index inside the group (row-major in the rectangle), if it belongs to it.
  std::optional<std::uint32_t> index_of(CubeId cube) const;
  CubeId cube_at(std::uint32_t index) const;
  std::uint32_t root_index() const { return ((h - 1) / 2) * w + (w - 1) / 2; }
};

// The group (of a kernel's list) whose rectangle holds this PE's cube, its geometry and
// the cube's index in it; nullptr when the cube belongs to none.
template <class Group>
const Group* find_group(const tl::Ctx& tl, const std::vector<Group>& groups, std::uint32_t cubes,
                        GroupGeometry& geo, std::uint32_t& index) {
  for (const Group& g : groups) {
    geo = GroupGeometry::of(g.cube_start, cubes, tl.mesh());
    if (const auto i = geo.index_of(tl.cube())) {
      index = *i;
      return &g;
    }
  }
  return nullptr;
}

// What every GQA kernel is told about the problem: head dimension, query tokens,
// context length, the mask and the softmax scale, the PEs of a cube it uses and the
// storage dtype.
struct AttentionParams {
  std::uint32_t d = 128, t_q = 1;
  std::uint64_t s = 0;
  bool causal = true;
  float scale = 0;
  std::uint32_t pes = 8;  // P
  DType dtype = DType::bf16;
};

// One node of a reduce tree: whom it receives from (in order) and whom it sends to.
struct TreeNode {
  std::vector<std::uint32_t> children;
  std::optional<std::uint32_t> parent;
};
// Level 2: binomial tree over P PEs, root 0; PE p sends to p - lowbit(p).
TreeNode binomial_node(std::uint32_t pe, std::uint32_t pes);
std::uint32_t binomial_rounds(std::uint32_t pes);  // ceil(log2 P)
// Level 1: center-root reduce over a w x h group: rows reduce toward the root's column,
// then that column toward the root; every edge is one mesh hop. Indices are group-local.
TreeNode center_node(std::uint32_t index, std::uint32_t w, std::uint32_t h);
// The same with x and y swapped (columns toward the root's row, then that row toward the
// root): same root and depth, and away from the root's row and column it uses the links
// the first leaves idle.
TreeNode center_node_yx(std::uint32_t index, std::uint32_t w, std::uint32_t h);
std::uint32_t center_rounds(std::uint32_t w, std::uint32_t h);  // ceil((w-1)/2) + ceil((h-1)/2)

// load / store of rows that may span several shards: one DMA per shard they touch.
void load_rows(tl::Ctx& tl, const DeviceTensor& t, RowRange rows, const tl::Tensor& into);
void store_rows(tl::Ctx& tl, const DeviceTensor& t, RowRange rows, const tl::Tensor& from);

// The running (m, l, O) of online softmax, fp32, in one persistent [rows, d + 2] matrix
// [O | l | m]: a whole state travels as one message, and O and l rescale together.
struct SoftmaxState {
  tl::Tensor packed, m, l, o, ol;  // column views of packed; ol = [O | l]
  static SoftmaxState of(tl::Ctx& tl, const tl::Tensor& packed);  // views of a [rows, d+2] matrix
  void reset(tl::Ctx& tl) const;                                   // m=-inf, l=0, O=0
};
// A flash tile's work buffers (FlashTile); stage_k and stage_v only for K and V
// streamed from HBM. Kernels keep several sets, so a tile's softmax runs while the next
// one's Q.K^T does.
struct FlashWork {
  tl::Tensor s, p, pv, m_new, alpha, rowsum, stage_k, stage_v;
  // For m query rows and n keys; stage_rows > 0 adds the two staging buffers. Without
  // `pv` there is no P.V buffer (a pipelined tile accumulates P.V into O).
  static FlashWork make(tl::Ctx& tl, std::uint32_t m, std::uint32_t n, std::uint32_t d, DType dtype,
                        std::uint32_t stage_rows = 0, bool pv = true);
};
// The FlashTile of q against k and v into the state st, on work buffers w; the mask and
// the streaming are left to the caller.
FlashTile flash_args(const tl::Tensor& q, const tl::Tensor& k, const tl::Tensor& v, const SoftmaxState& st,
                         const FlashWork& w, float scale);

// `rows` cut into segments of about `size` rows each: none when empty, one when fewer
// or when `size` is 0.
std::vector<RowRange> segments(RowRange rows, std::uint32_t size);

// The online-softmax merge of `other` into `state`, both packed [rows, d + 2] fp32 =
// [O | l | m], from tl ops: m = max(m_s, m_o), [O|l] = [O|l]_s e^(m_s - m) +
// [O|l]_o e^(m_o - m), the last two terms one fused multiply-add (`other` is overwritten). Associative and commutative; a side with
// m = -inf contributes nothing. Its three [rows, 1] temporaries are scratch.
void merge_into(tl::Ctx& tl, const tl::Tensor& state, const tl::Tensor& other);

// Receives a packed state (rows of one) and merges it into `state`: merge_into, whose
// first op waits for the message, or (fused) merge_state, which the scheduler holds
// while the program goes on. The received buffer lives in the caller's scratch scope.
void recv_merge(tl::Ctx& tl, const tl::Tensor& state, const PeCoord& from, std::uint32_t tag, Variant variant);

}  // namespace kb::gqa
