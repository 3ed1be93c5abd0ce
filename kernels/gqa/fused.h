#pragma once
// The fused variants' sequences (docs/tl.md, Sequences): one attention tile and the merge
// of two softmax states, each a list of engine steps that an optional hardware sequencer
// runs for one CPU issue. The machine as specified issues these steps as ops (the
// pipelined variants); these measure what a sequencer would buy.
#include <cstdint>

#include "kernels/tl/ctx.h"

namespace kb::gqa {

// One attention tile: stream K and S = q.K^T * scale (+ causal mask), the online-softmax
// update of (m, l), stream V and P.V, and O = O * alpha + P.V. All buffers are the
// caller's (persistent ones, so the next tile can be issued while this one runs).
struct FlashTile {
  const tl::Tensor* q = nullptr;          // [M, d]
  const tl::Tensor* k = nullptr;          // [n, d]: an HBM ref (streamed) or in TCM
  const tl::Tensor* v = nullptr;          // [n, d]: likewise
  const tl::Tensor *m = nullptr, *l = nullptr, *o = nullptr;  // the running state: [M,1], [M,1], [M,d] fp32
  float scale = 1;
  bool causal = false;                // mask keys after query position q_pos0 + row % q_period
  std::int64_t q_pos0 = 0, k_pos0 = 0;
  std::uint32_t q_period = 1;
  std::uint32_t stream_rows = 64;     // rows per streamed K / V tile
  // Work buffers: s [M*n] fp32; p [M*n] in v's dtype; pv [M, d] fp32; m_new, alpha and
  // rowsum [M, 1] fp32; stage_k and stage_v as CompositeOpts::stage (only for refs).
  const tl::Tensor *s = nullptr, *p = nullptr, *pv = nullptr;
  const tl::Tensor *m_new = nullptr, *alpha = nullptr, *rowsum = nullptr;
  const tl::Tensor *stage_k = nullptr, *stage_v = nullptr;
};

// Issues one FlashTile as one sequence; later tiles' state updates wait for earlier
// ones in the scheduler.
void flash_tile(tl::Ctx& tl, const FlashTile& f);

// The online-softmax merge of two states packed as [rows, d + 2] fp32 = [O | l | m]:
// m = max(m_s, m_o), [O|l] = [O|l]_s e^(m_s - m) + [O|l]_o e^(m_o - m), into `state`
// (`other` is overwritten), as one sequence of seven MATH steps. The program does not
// wait: the scheduler holds it until `other`'s message (a posted receive) is in and
// what writes or reads those rows is done. Returns `state`.
tl::Tensor merge_state(tl::Ctx& tl, const tl::Tensor& state, const tl::Tensor& other);

}  // namespace kb::gqa
