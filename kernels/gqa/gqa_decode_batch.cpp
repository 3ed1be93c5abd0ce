#include "kernels/gqa/gqa_decode_batch.h"

#include <algorithm>
#include <array>

#include "kernels/gqa/decode_reduce.h"
#include "kernels/gqa/decode_sweep.h"
#include "kernels/gqa/helpers.h"

namespace kb::gqa {
void gqa_decode_batch(tl::Ctx& tl, std::shared_ptr<const DecodeBatchParams> params) {
  const DecodeBatchParams& p = *params;
  if (tl.pe().value >= p.pes) return;
  GroupGeometry geo;
  std::uint32_t cube_index = 0;
  const DecodeGroup* group = find_group(tl, p.groups, p.cubes, geo, cube_index);
  if (group == nullptr) return;  // this cube holds no KV head
  const std::uint32_t me = cube_index * p.pes + tl.pe().value, rows = p.g * p.t_q;
  auto pe_of = [&](std::uint32_t rank) { return PeCoord{tl.sip(), geo.cube_at(rank / p.pes), PeId(rank % p.pes)}; };
  PingPong pipeline;
  // States in turn: a piece's state stays in use until its reduce or store has read it
  // (the next write of the buffer waits for that), so a few of them keep the sweep going.
  std::array<SoftmaxState, 4> states;
  std::size_t turn = 0;
  auto next_state = [&]() -> SoftmaxState& {
    SoftmaxState& st = states[turn++ % states.size()];
    if (!st.packed.valid()) st = SoftmaxState::of(tl, tl.persistent({rows, p.d + 2}, DType::fp32, "state"));
    return st;
  };
  // A rank's pieces, one per request it holds, and the empty states it gives to reduces
  // of requests it does not hold, all in request order: every rank then takes its part
  // in the reduces in one order, so a state buffer that waits for an earlier reduce
  // never waits on a rank that waits for it.
  auto sweep_piece = [&](const BatchPiece& piece) {
    const BatchRequest& req = p.requests.at(piece.request);
    const RowRange q_rows{static_cast<std::uint64_t>(piece.request) * rows, rows};
    const auto scope = tl.scratch_scope();
    SweepRank r{p, &group->k, &group->v, static_cast<std::int64_t>(piece.pos0) - static_cast<std::int64_t>(piece.rows.begin),
                rows, {}, {}};
    r.tiles = tiles_of(piece.rows, p.tile_rows);
    r.q_pos0 = static_cast<std::int64_t>(req.len - p.t_q);
    r.q_period = p.t_q;
    r.q = tl.load(group->q, q_rows);
    SoftmaxState st;
    sweep_pipelined(tl, r, [&] { return st = next_state(); }, pipeline, [] {});
    auto store = [&](const StoredRows& seg) { store_state(tl, seg, group->o, q_rows.begin); };
    const std::uint32_t tag = kTagBatch + 2 * piece.request;
    if (req.whole_group) {  // decode's 2-level reduce
      for (const StoredRows& seg : reduce_to_root(tl, p, geo, cube_index, st.packed, {tag, tag + 1})) store(seg);
      return;
    }
    // A binomial gather over the request's ranks toward the first of them, which stores O.
    const auto i = static_cast<std::uint32_t>(std::find(req.ranks.begin(), req.ranks.end(), me) - req.ranks.begin());
    const auto n = static_cast<std::uint32_t>(req.ranks.size());
    bool home = true;
    for (std::uint32_t step = 1; step < n && home; step *= 2) {
      if (i % (2 * step) == step) {
        tl.send(pe_of(req.ranks[i - step]), st.packed, tag);
        home = false;
      } else if (i + step < n) {
        recv_merge(tl, st.packed, pe_of(req.ranks[i + step]), tag, p.variant);
      }
    }
    if (home) store(StoredRows::of(tl, st.packed, {0, rows}, p.dtype));
  };
  const std::vector<BatchPiece>& mine = p.pieces.at(me);
  std::size_t next = 0;
  for (std::uint32_t q = 0; q < p.requests.size(); ++q) {
    if (next < mine.size() && mine[next].request == q) {
      sweep_piece(mine[next++]);
    } else if (p.requests[q].whole_group) {
      // An empty state (m = -inf contributes nothing) takes this rank's part in the
      // reduce; a root owner stores its rows.
      const auto scope = tl.scratch_scope();
      const SoftmaxState& st = next_state();
      st.reset(tl);
      const std::uint32_t tag = kTagBatch + 2 * q;
      for (const StoredRows& seg : reduce_to_root(tl, p, geo, cube_index, st.packed, {tag, tag + 1}))
        store_state(tl, seg, group->o, static_cast<std::uint64_t>(q) * rows);
    }
  }
}

}  // namespace kb::gqa
