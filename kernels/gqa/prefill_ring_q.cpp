#include "kernels/gqa/prefill_ring_q.h"

#include <algorithm>
#include <string>

#include "kernels/gqa/prefill_tiles.h"

namespace kb::gqa {

namespace {

// A visit of a query tile to this PE: at ring step `step` (0: its home), with its rows of
// Q and O at `row` of the group's tensors.
struct Visit {
  std::uint32_t step;
  const PrefillTile* t;
  std::uint64_t row;
  RowRange rows() const { return {row, t->rows()}; }
};

}  // namespace

// The ring runs through the N = C x P PEs of the group: PE 0..P-1 of a cube, then on to
// PE 0 of the next cube of the cube ring. At step s a PE holds the tiles of the PE s
// places back and applies its own shard of K and V to them; a tile is back at the PE
// before its home after N steps, which stores its O into the home's rows.
void prefill_ring_q(tl::Ctx& tl, const PrefillParams& p, const PrefillGroup& g, const RingSeat& seat) {
  const PrefillPlan& plan = *p.plan;
  const std::uint32_t pes = p.pes, n = plan.shape.cubes * pes, d = p.d;
  const std::uint32_t me = seat.pos * pes + tl.pe().value;
  auto ring_pe = [&](std::uint32_t at) {
    return PeCoord{tl.sip(), seat.geo.cube_at(seat.ring[at / pes]), PeId(at % pes)};
  };
  const PeCoord prev = ring_pe((me + n - 1) % n), next = ring_pe((me + 1) % n);
  std::vector<Visit> visits;
  for (std::uint32_t step = 0; step < n; ++step) {
    const std::uint32_t home = (me + n - step) % n, cube = seat.ring[home / pes], pe = home % pes;
    for (const PrefillTile& t : plan.ranks[plan.rank_of(g.replica, cube, pe)])
      visits.push_back({step, &t, plan.qo_base(cube, pe) + t.row});
  }

  // This PE's shard of K and V in chunks: kept in TCM when it fits the chunk buffers,
  // else streamed from HBM again for every visit.
  constexpr std::size_t kChunkBuffers = PrefillBuffers::kChunks, kLookahead = 2;
  const RowRange shard = g.k.placements()[seat.cube_index * pes + tl.pe().value].rows;
  std::vector<RowRange> chunks;
  for (std::uint64_t r = shard.begin; r < shard.end(); r += plan.shape.chunk_rows)
    chunks.push_back({r, std::min<std::uint64_t>(plan.shape.chunk_rows, shard.end() - r)});
  const bool resident = chunks.size() <= kChunkBuffers;
  PrefillBuffers bufs(tl, plan, p.dtype);
  const auto& kbuf = bufs.chunks.k;
  const auto& vbuf = bufs.chunks.v;
  TileSlots& slots = bufs.slots;
  const std::array<FlashWork, 2>& work = bufs.work;
  FlashPairs runner(tl, p, plan.shape.variant, work);
  // Fused's work sets are busy when a tile's O / l is made: it takes a buffer of its own.
  const tl::Tensor out = runner.pipelined() ? bufs.out : tl.persistent({plan.tile_rows(), d}, DType::fp32, "out");

  // The pairs in order: (visit, chunk), where a query of the tile can see the chunk.
  struct Pair {
    std::size_t visit, chunk;
  };
  std::vector<Pair> pairs;
  for (std::size_t v = 0; v < visits.size(); ++v)
    for (std::size_t c = 0; c < chunks.size(); ++c)
      if (visible(p, chunks[c], *visits[v].t)) pairs.push_back({v, c});
  std::vector<std::pair<tl::Tensor, tl::Tensor>> kv(resident ? chunks.size() : pairs.size());
  std::size_t loaded = 0;  // pairs (streamed) or chunks (resident) whose K and V are asked for
  auto load = [&](std::size_t i, RowRange keys) {
    const auto rows = static_cast<std::uint32_t>(keys.count);
    kv[i] = {tl.rows(kbuf[i % kChunkBuffers], 0, rows), tl.rows(vbuf[i % kChunkBuffers], 0, rows)};
    load_rows(tl, g.k, keys, kv[i].first);
    load_rows(tl, g.v, keys, kv[i].second);
  };
  // Streamed, pair i's chunk goes into buffer i % 4, asked for once pair i - 3 is issued:
  // the load waits only for the pair before the one just issued.
  auto load_through = [&](std::size_t last) {
    for (; !resident && loaded <= last && loaded < pairs.size(); ++loaded) load(loaded, chunks[pairs[loaded].chunk]);
  };
  for (; resident && loaded < chunks.size(); ++loaded) load(loaded, chunks[loaded]);
  load_through(kChunkBuffers - 1);

  // A visit takes slot v % 4. It is posted two visits ahead: at home Q is loaded and the
  // state reset, else both come from the previous PE; Q goes straight on to the next PE
  // (the scheduler passes it on as it arrives), the state once this PE's pairs on
  // it are done.
  std::size_t posted = 0;
  auto post_through = [&](std::size_t last) {
    for (; posted <= last && posted < visits.size(); ++posted) {
      const Visit& v = visits[posted];
      const auto& s = slots.at(posted % TileSlots::kSlots, v.t->rows());
      if (v.step == 0) {
        load_rows(tl, g.q, v.rows(), s.q);
        s.st.reset(tl);
      } else {
        tl.recv_async(prev, s.q.shape(), p.dtype, kTagRingQ, &s.q);
        tl.recv_async(prev, s.s.shape(), DType::fp32, kTagRingState, &s.s);
      }
      if (v.step + 1 < n) tl.send(next, s.q, kTagRingQ);
    }
  };
  // After its last step a tile's O / l goes to its rows of O (on its home PE), one visit
  // later so that the GEMM engine goes straight on to the next tile.
  std::size_t unstored = visits.size();
  auto store_pending = [&] {
    if (unstored == visits.size()) return;
    const Visit& v = visits[unstored];
    const auto& s = slots.at(unstored % TileSlots::kSlots, v.t->rows());
    store_output(tl, s.st, tl.rows(out, 0, static_cast<std::uint32_t>(v.t->rows())), s.q, p.dtype, g.o, v.rows());
    unstored = visits.size();
  };

  auto flash_pair = [&](std::size_t i) {
    const Visit& visit = visits[pairs[i].visit];
    const auto& s = slots.at(pairs[i].visit % TileSlots::kSlots, visit.t->rows());
    const auto& [kb, vb] = kv[resident ? pairs[i].chunk : i];
    return FlashPair{visit.t, chunks[pairs[i].chunk], s.q, kb, vb, s.st};
  };

  std::size_t pair = 0;
  std::uint32_t phase_step = n;
  for (std::size_t v = 0; v < visits.size(); ++v) {
    post_through(v + kLookahead);
    const Visit& visit = visits[v];
    if (visit.step != phase_step) {
      tl.phase("ring step " + std::to_string(visit.step));
      phase_step = visit.step;
    }
    const auto& s = slots.at(v % TileSlots::kSlots, visit.t->rows());
    for (; pair < pairs.size() && pairs[pair].visit == v; ++pair) {
      // Pipelined, pair + 1's Q.K^T goes with it when its visit is posted already (a later
      // one's slot may still hold a tile whose O is not stored).
      if (runner.pipelined() && pair + 1 < pairs.size() && pairs[pair + 1].visit <= v + kLookahead) {
        const FlashPair following = flash_pair(pair + 1);
        runner.run(pair, flash_pair(pair), &following);
      } else {
        runner.run(pair, flash_pair(pair), nullptr);
      }
      load_through(pair + kChunkBuffers - 1);
    }
    store_pending();
    if (visit.step + 1 < n) tl.send(next, s.s, kTagRingState);
    else unstored = v;
  }
  store_pending();
}

}  // namespace kb::gqa
