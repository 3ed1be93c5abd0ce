#include "kernels/gqa/gqa_prefill.h"

#include <algorithm>
#include <array>
#include <map>
#include <string>

#include "kernels/gqa/helpers.h"
#include "kernels/gqa/prefill_ring_q.h"
#include "kernels/gqa/prefill_tiles.h"

namespace kb::gqa {

namespace {

struct QueryTile {
  const PrefillTile* t;
  std::uint64_t q_row, state_row;  // where its rows live in the group's Q / O and state
  bool started = false;
  RowRange q_rows() const { return {q_row, t->rows()}; }
  RowRange state_rows() const { return {state_row, t->rows()}; }
};

struct Chunk {
  std::uint32_t step;
  RowRange keys;  // KV rows (= key positions)
};

// One PE's lane of the ring: its group, its neighbours, its query tiles and KV chunks.
struct Lane {
  const PrefillParams& p;
  const PrefillPlan& plan;
  const PrefillGroup& g;
  std::uint32_t cube_index, pe;
  PeCoord prev, next;
  std::vector<QueryTile> tiles;
  std::vector<Chunk> chunks;  // this lane's chunks, in ring order
};

// The chunks a lane works on, in ring order. Without the KV split every PE of a cube
// sees every chunk: block b's rows cut into chunks of at most chunk_rows (across its
// shards); with shared slices each PE carries one slice of each (shared_slice) and gets
// the others from its cube, else lane p carries them whole from the chunk of shard p
// on, so that at step 0 the lanes read different HBM channels at a time. With the KV
// split the chunks are cut at rank-shard boundaries (a step-0 load reads one shard)
// and dealt to the lanes by index, each lane carrying its own.
std::vector<Chunk> lane_chunks(const Lane& x, const std::vector<std::uint32_t>& ring, std::uint32_t pos) {
  std::vector<Chunk> out;
  const std::uint32_t c = x.plan.shape.cubes, chunk_rows = x.plan.shape.chunk_rows;
  const auto& shards = x.g.k.placements();
  for (std::uint32_t step = 0; step < c; ++step) {
    const std::uint32_t block = ring[(pos + c - step) % c];
    if (!x.plan.kv_split) {
      const std::uint64_t begin = shards[block * x.p.pes].rows.begin, end = shards[block * x.p.pes + x.p.pes - 1].rows.end();
      const std::uint64_t n = (end - begin + chunk_rows - 1) / chunk_rows;
      const std::uint64_t first = x.plan.shared_slices ? 0 : x.pe * n / x.p.pes;
      for (std::uint64_t i = 0; i < n; ++i) {
        const std::uint64_t r = begin + (first + i) % n * chunk_rows;
        out.push_back({step, {r, std::min<std::uint64_t>(chunk_rows, end - r)}});
      }
      continue;
    }
    std::uint32_t index = 0;
    for (std::uint32_t q = 0; q < x.p.pes; ++q) {
      const RowRange shard = shards[block * x.p.pes + q].rows;
      for (std::uint64_t r = shard.begin; r < shard.end(); r += chunk_rows, ++index)
        if (index % x.p.pes == x.pe) out.push_back({step, {r, std::min<std::uint64_t>(chunk_rows, shard.end() - r)}});
    }
  }
  return out;
}

// The rows of a chunk that PE `pe` of a cube carries around the ring with shared
// slices: one P-th, so each chunk crosses each ring link once.
RowRange shared_slice(const Chunk& ch, std::uint32_t pe, std::uint32_t pes) {
  return shard_rows(ch.keys.count, pes, pe);
}

}  // namespace

void gqa_prefill(tl::Ctx& tl, std::shared_ptr<const PrefillParams> params) {
  const PrefillParams& p = *params;
  if (tl.pe().value >= p.pes) return;
  GroupGeometry geo;
  std::uint32_t ci = 0;
  const PrefillGroup* group = find_group(tl, p.groups, p.plan->shape.cubes, geo, ci);
  if (group == nullptr) return;  // this cube holds no KV head
  const std::vector<std::uint32_t> ring = ring_order(geo.w, geo.h);
  const auto pos = static_cast<std::uint32_t>(std::find(ring.begin(), ring.end(), ci) - ring.begin());
  const PrefillPlan& plan = *p.plan;
  if (plan.shape.ring == Ring::Q) {
    prefill_ring_q(tl, p, *group, RingSeat{geo, ring, pos, ci});
    return;
  }
  const std::uint32_t c = plan.shape.cubes;
  Lane x{p, plan, *group, ci, tl.pe().value, {}, {}, {}, {}};
  x.prev = PeCoord{tl.sip(), geo.cube_at(ring[(pos + c - 1) % c]), tl.pe()};
  x.next = PeCoord{tl.sip(), geo.cube_at(ring[(pos + 1) % c]), tl.pe()};
  const std::uint64_t q_base = plan.qo_base(ci, x.pe), state_base = plan.state_base(ci, x.pe);
  for (const PrefillTile& t : plan.ranks[plan.rank_of(group->replica, ci, x.pe)])
    x.tiles.push_back({&t, q_base + t.row, state_base + t.row, false});
  x.chunks = lane_chunks(x, ring, pos);
  const std::uint32_t d = p.d;

  // A query tile visits the KV chunks a window at a time: its query rows and state come
  // into TCM once per window, not once per chunk, which halves the state traffic.
  // Buffers: two windows of KV chunks (one in use, one arriving), four query-tile /
  // state slots (one being fetched, two in pairs, one waiting for its state to be
  // stored) and two work sets of a pair.
  constexpr std::size_t kWindow = 2, kChunkBuffers = PrefillBuffers::kChunks, kSlots = TileSlots::kSlots;
  static_assert(kChunkBuffers == 2 * kWindow);
  PrefillBuffers bufs(tl, plan, p.dtype);
  const auto& kbuf = bufs.chunks.k;
  const auto& vbuf = bufs.chunks.v;
  TileSlots& slots = bufs.slots;
  const std::array<FlashWork, 2>& work = bufs.work;

  // Chunk k lands in buffer k % kChunkBuffers: from HBM at step 0, else from the ring.
  // Without the KV split a PE gets its slice so (the ring lane of the slice), and the
  // other slices from the PEs of its cube.
  std::vector<std::pair<tl::Tensor, tl::Tensor>> kv(x.chunks.size());
  auto on_pe = [&](std::uint32_t pe) { return PeCoord{tl.sip(), tl.cube(), PeId(pe)}; };
  auto part = [&](const tl::Tensor& t, RowRange r) {
    return tl.rows(t, static_cast<std::uint32_t>(r.begin), static_cast<std::uint32_t>(r.count));
  };
  auto post_chunk = [&](std::size_t k) {
    const Chunk& ch = x.chunks[k];
    const auto rows = static_cast<std::uint32_t>(ch.keys.count);
    const tl::Tensor kb = tl.rows(kbuf[k % kChunkBuffers], 0, rows), vb = tl.rows(vbuf[k % kChunkBuffers], 0, rows);
    kv[k] = {kb, vb};
    const RowRange own = plan.shared_slices ? shared_slice(ch, x.pe, p.pes) : RowRange{0, rows};
    const tl::Tensor ok = part(kb, own), ov = part(vb, own);
    if (own.count > 0 && ch.step == 0) {
      load_rows(tl, group->k, {ch.keys.begin + own.begin, own.count}, ok);
      load_rows(tl, group->v, {ch.keys.begin + own.begin, own.count}, ov);
    } else if (own.count > 0) {
      const Shape shape{static_cast<std::int64_t>(own.count), d};
      tl.recv_async(x.prev, shape, p.dtype, kTagRingK, &ok);
      tl.recv_async(x.prev, shape, p.dtype, kTagRingV, &ov);
    }
    // Passed on as it comes (the scheduler holds the sends): along the ring lane, and
    // to the cube, rotated so that no PE is everyone's first.
    if (own.count > 0 && ch.step + 1 < c) {
      tl.send(x.next, ok, kTagRingK);
      tl.send(x.next, ov, kTagRingV);
    }
    if (!plan.shared_slices) return;
    for (std::uint32_t i = 1; i < p.pes && own.count > 0; ++i) {
      tl.send(on_pe((x.pe + i) % p.pes), ok, kTagShareK);
      tl.send(on_pe((x.pe + i) % p.pes), ov, kTagShareV);
    }
    for (std::uint32_t q = 0; q < p.pes; ++q)
      if (const RowRange s = shared_slice(ch, q, p.pes); q != x.pe && s.count > 0) {
        const Shape shape{static_cast<std::int64_t>(s.count), d};
        const tl::Tensor sk = part(kb, s), sv = part(vb, s);
        tl.recv_async(on_pe(q), shape, p.dtype, kTagShareK, &sk);
        tl.recv_async(on_pe(q), shape, p.dtype, kTagShareV, &sv);
      }
  };
  const std::size_t windows = (x.chunks.size() + kWindow - 1) / kWindow;
  std::size_t posted = 0;  // windows whose chunks are posted
  auto post_through = [&](std::size_t w) {
    for (; posted <= w && posted < windows; ++posted)
      for (std::size_t k = posted * kWindow; k < std::min(x.chunks.size(), (posted + 1) * kWindow); ++k) post_chunk(k);
  };

  // The pairs (chunk, tile) in order: window by window, and within a window tile by
  // tile; the future ones are skipped. A tile's pairs in a row are a run on one of the
  // tile slots; its query rows and state are fetched one pair ahead. When a run ends its
  // state goes back to HBM one run later (so the CPU never waits for the pair just
  // issued), or at once if the tile is about to be fetched again.
  std::vector<std::pair<std::size_t, std::size_t>> pairs;
  for (std::size_t w = 0; w < windows; ++w)
    for (std::size_t t = 0; t < x.tiles.size(); ++t)
      for (std::size_t k = w * kWindow; k < std::min(x.chunks.size(), (w + 1) * kWindow); ++k)
        if (visible(p, x.chunks[k].keys, *x.tiles[t].t)) pairs.emplace_back(k, t);
  auto same_tile_as_previous = [&](std::size_t i) { return i > 0 && pairs[i].second == pairs[i - 1].second; };
  std::vector<std::size_t> slot(pairs.size(), 0);
  for (std::size_t i = 1; i < pairs.size(); ++i)
    slot[i] = same_tile_as_previous(i) ? slot[i - 1] : (slot[i - 1] + 1) % kSlots;
  auto prefetch = [&](std::size_t i) {
    if (same_tile_as_previous(i)) return;
    QueryTile& qt = x.tiles[pairs[i].second];
    const auto& v = slots.at(slot[i], qt.t->rows());
    load_rows(tl, group->q, qt.q_rows(), v.q);
    if (qt.started) tl.load(group->state, qt.state_rows(), &v.s);
    else v.st.reset(tl);
    qt.started = true;
  };
  auto store_state = [&](std::size_t i) {
    const QueryTile& qt = x.tiles[pairs[i].second];
    tl.store(group->state, qt.state_rows(), slots.at(slot[i], qt.t->rows()).s);
  };
  FlashPairs runner(tl, p, plan.shape.variant, work);
  auto flash_pair = [&](std::size_t i) {
    const QueryTile& qt = x.tiles[pairs[i].second];
    const auto& v = slots.at(slot[i], qt.t->rows());
    const auto& [kb, vb] = kv[pairs[i].first];
    return FlashPair{qt.t, x.chunks[pairs[i].first].keys, v.q, kb, vb, v.st};
  };

  constexpr std::size_t kNone = ~std::size_t{0};
  std::size_t unstored = kNone;  // the last pair of a run whose state is not yet stored
  auto store_pending = [&] {
    if (unstored != kNone) store_state(unstored);
    unstored = kNone;
  };
  // At pair i: the run before it has ended if i starts a run, and pair i + 1's tile is
  // fetched (after the store of its state, if that is still pending). Fused takes this
  // step once pair i is issued, pipelined before (pair i + 1's Q.K^T goes out with i).
  auto after_pair = [&](std::size_t i) {
    if (i > 0 && !same_tile_as_previous(i)) {  // the run of i - 1 has ended
      store_pending();
      unstored = i - 1;
    }
    if (i + 1 < pairs.size()) {
      if (unstored != kNone && pairs[unstored].second == pairs[i + 1].second) store_pending();
      prefetch(i + 1);
    }
  };

  // Fused issues a pair and then fetches the next tile. Pipelined issues pair i + 1's
  // Q.K^T with pair i, so that tile is fetched and its chunks posted before; not when
  // they lie two windows on, whose buffers pair i itself still reads.
  const bool ahead = runner.pipelined();
  std::uint32_t phase_step = c;  // the ring step of the pairs issued last (c: none yet)
  if (!pairs.empty()) prefetch(0);
  post_through(0);
  for (std::size_t i = 0; i < pairs.size(); ++i) {
    if (const std::uint32_t step = x.chunks[pairs[i].first].step; step != phase_step) {
      tl.phase("ring step " + std::to_string(step));
      phase_step = step;
    }
    const std::size_t window = pairs[i].first / kWindow;
    post_through(window);  // a window no pair before this one saw
    const FlashPair pair = flash_pair(i);
    if (ahead) after_pair(i);
    if (ahead && i + 1 < pairs.size() && pairs[i + 1].first / kWindow <= window + 1) {
      post_through(pairs[i + 1].first / kWindow);
      const FlashPair next = flash_pair(i + 1);
      runner.run(i, pair, &next);
    } else {
      runner.run(i, pair, nullptr);
    }
    // The next window goes into the buffers of the previous one, so it is posted once
    // this window's first pair is queued: the wait for the previous window's last
    // readers then overlaps that pair.
    post_through(window + 1);
    if (!ahead) after_pair(i);
  }
  post_through(windows);  // windows no tile sees
  store_pending();
  if (!pairs.empty()) store_state(pairs.size() - 1);

  // The end: normalise and store each tile's rows of O (KV split: merge in the cube first).
  tl.phase("store O");
  for (std::size_t t = 0; t < x.tiles.size(); ++t) {
    const auto scope = tl.scratch_scope();
    const QueryTile& qt = x.tiles[t];
    const auto rows = static_cast<std::uint32_t>(qt.t->rows());
    const tl::Tensor sv = tl.rows(slots.state_buffer(t % kSlots), 0, rows);
    if (qt.started) tl.load(group->state, qt.state_rows(), &sv);
    else SoftmaxState::of(tl, sv).reset(tl);
    SoftmaxState st = SoftmaxState::of(tl, sv);
    if (plan.kv_split) {
      const TreeNode node = binomial_node(x.pe, p.pes);
      for (const std::uint32_t child : node.children) {
        const auto merge_scope = tl.scratch_scope();
        recv_merge(tl, st.packed, PeCoord{tl.sip(), tl.cube(), PeId(child)}, kTagPrefillMerge, plan.shape.variant);
      }
      if (node.parent) {
        tl.send(PeCoord{tl.sip(), tl.cube(), PeId(*node.parent)}, st.packed, kTagPrefillMerge);
        continue;
      }
    }
    // O / l into an idle work buffer, converted to the storage dtype in an idle q slot.
    store_output(tl, st, tl.rows(bufs.out, 0, rows), slots.q_buffer(t % kSlots), p.dtype, group->o, qt.q_rows());
  }
}

}  // namespace kb::gqa
