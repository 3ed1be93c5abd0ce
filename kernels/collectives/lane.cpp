#include "kernels/collectives/lane.h"

#include <algorithm>
#include <optional>

namespace kb::collectives {

RowRange Home::rows() const { return hbm_ ? tl_.shard_rows(*hbm_) : RowRange{0, tcm_.rows()}; }

std::int64_t Home::cols() const { return hbm_ ? hbm_->shape().at(1) : tcm_.cols(); }

tl::Tensor Home::load(RowRange r) {
  return hbm_ ? tl_.load(*hbm_, r) : tl_.rows(tcm_, static_cast<std::uint32_t>(r.begin), static_cast<std::uint32_t>(r.count));
}

void Home::store(RowRange r, const tl::Tensor& x) {
  if (hbm_) return tl_.store(*hbm_, r, x);
  const tl::Tensor place = tl_.rows(tcm_, static_cast<std::uint32_t>(r.begin), static_cast<std::uint32_t>(r.count));
  tl_.copy(x, place);
}

Lane::Lane(tl::Ctx& tl, Home& home, std::vector<PeCoord> peers, std::uint32_t me,
           std::uint32_t piece_rows, std::uint32_t stagger)
    : tl_(tl), home_(home), peers_(std::move(peers)), me_(me), piece_rows_(piece_rows), stagger_(stagger) {}

RowRange Lane::part(RowRange rows, std::uint32_t n, std::uint32_t i) {
  const RowRange p = shard_rows(rows.count, n, i);
  return {rows.begin + p.begin, p.count};
}

std::uint32_t Lane::pieces(RowRange rows) const {
  return static_cast<std::uint32_t>((rows.count + piece_rows_ - 1) / piece_rows_);
}

RowRange Lane::piece(RowRange rows, std::uint32_t p) const {
  const std::uint64_t begin = std::min(rows.count, std::uint64_t{p} * piece_rows_);
  return {rows.begin + begin, std::min<std::uint64_t>(rows.count - begin, piece_rows_)};
}

tl::Tensor Lane::recv(std::uint32_t from, RowRange r, std::uint32_t tag) {
  const Shape shape{static_cast<std::int64_t>(r.count), home_.cols()};
  return tl_.recv_async(peers_[from], shape, DType::fp32, tag);
}

std::uint32_t Lane::other(std::uint32_t k) const {
  const std::uint32_t n = members();
  return (me_ + 1 + (k + stagger_) % (n - 1)) % n;
}

std::vector<std::uint32_t> Lane::children(Tree shape, std::uint32_t root) const {
  const std::uint32_t n = members(), v = (me_ + n - root) % n;
  std::vector<std::uint32_t> kids;
  auto add = [&](std::uint32_t c) {
    if (c < n) kids.push_back((c + root) % n);
  };
  if (shape == Tree::Binary) {
    add(2 * v + 1);
    add(2 * v + 2);
  } else if (shape == Tree::Chain) {
    add(v + 1);
  } else if (v == 0) {
    for (std::uint32_t c = 1; c < n; ++c) add(c);
  }
  return kids;
}

std::uint32_t Lane::parent(Tree shape, std::uint32_t root) const {
  const std::uint32_t n = members(), v = (me_ + n - root) % n;
  const std::uint32_t up = shape == Tree::Binary ? (v - 1) / 2 : shape == Tree::Chain ? v - 1 : 0;
  return (up + root) % n;
}

void Lane::ring_reduce_scatter(RowRange rows, const std::vector<std::uint32_t>& ring, bool all_gather,
                               std::uint32_t tag) {
  const std::uint32_t n = members();
  if (n == 1) return;
  const auto pos = static_cast<std::uint32_t>(std::find(ring.begin(), ring.end(), me_) - ring.begin());
  const std::uint32_t next = ring[(pos + 1) % n], prev = ring[(pos + n - 1) % n];
  auto back = [&](std::uint32_t k) { return ring[(pos + 2 * n - k) % n]; };  // k places back
  for (std::uint32_t p = 0; p < pieces(part(rows, n, 0)); ++p) {
    const auto scope = tl_.scratch_scope();
    // Step s sends part back(1 + s) (its own at first, then the sum so far) and adds
    // the part back(2 + s) from prev to its own: after n - 1 steps its part is whole.
    if (const RowRange r = piece(part(rows, n, back(1)), p); r.count) send(next, load(r), tag);
    std::optional<tl::Tensor> sum;
    for (std::uint32_t s = 0; s + 1 < n; ++s) {
      const RowRange r = piece(part(rows, n, back(2 + s)), p);
      if (!r.count) continue;
      const tl::Tensor own = load(r);  // its own statement: a call's arguments have no order
      sum = tl_.add(recv(prev, r, tag), own);
      if (s + 2 < n) send(next, *sum, tag);
    }
    const RowRange mine = piece(part(rows, n, me_), p);
    if (mine.count) store(mine, *sum);
    if (!all_gather) continue;
    // The whole parts go round: step s takes part back(1 + s) from prev and passes it on.
    if (mine.count) send(next, *sum, tag + 1);
    for (std::uint32_t s = 0; s + 1 < n; ++s) {
      const RowRange r = piece(part(rows, n, back(1 + s)), p);
      if (!r.count) continue;
      const tl::Tensor got = recv(prev, r, tag + 1);
      store(r, got);
      if (s + 2 < n) send(next, got, tag + 1);
    }
  }
}

void Lane::ring_all_gather(RowRange rows, const std::vector<std::uint32_t>& ring, std::uint32_t tag) {
  const std::uint32_t n = members();
  if (n == 1) return;
  const auto pos = static_cast<std::uint32_t>(std::find(ring.begin(), ring.end(), me_) - ring.begin());
  const std::uint32_t next = ring[(pos + 1) % n], prev = ring[(pos + n - 1) % n];
  for (std::uint32_t p = 0; p < pieces(part(rows, n, 0)); ++p) {
    const auto scope = tl_.scratch_scope();
    if (const RowRange mine = piece(part(rows, n, me_), p); mine.count) send(next, load(mine), tag);
    for (std::uint32_t s = 0; s + 1 < n; ++s) {
      const RowRange r = piece(part(rows, n, ring[(pos + 2 * n - 1 - s) % n]), p);
      if (!r.count) continue;
      const tl::Tensor got = recv(prev, r, tag);
      store(r, got);
      if (s + 2 < n) send(next, got, tag);
    }
  }
}

void Lane::direct_reduce_scatter(RowRange rows, bool all_gather, std::uint32_t tag) {
  const std::uint32_t n = members();
  if (n == 1) return;
  for (std::uint32_t p = 0; p < pieces(part(rows, n, 0)); ++p) {
    const auto scope = tl_.scratch_scope();
    for (std::uint32_t k = 0; k + 1 < n; ++k)
      if (const RowRange r = piece(part(rows, n, other(k)), p); r.count) send(other(k), load(r), tag);
    const RowRange mine = piece(part(rows, n, me_), p);
    if (mine.count) {
      std::vector<std::optional<tl::Tensor>> got(n);
      for (std::uint32_t j = 0; j < n; ++j) got[j] = j == me_ ? load(mine) : recv(j, mine, tag);
      tl::Tensor sum = *got[0];
      for (std::uint32_t j = 1; j < n; ++j) sum = tl_.add(sum, *got[j]);  // member order: the same sum everywhere
      store(mine, sum);
      if (all_gather)
        for (std::uint32_t k = 0; k + 1 < n; ++k) send(other(k), sum, tag + 1);
    }
    if (!all_gather) continue;
    for (std::uint32_t j = 0; j < n; ++j)
      if (const RowRange r = piece(part(rows, n, j), p); j != me_ && r.count) store(r, recv(j, r, tag + 1));
  }
}

void Lane::direct_all_gather(RowRange rows, std::uint32_t tag) {
  const std::uint32_t n = members();
  if (n == 1) return;
  for (std::uint32_t p = 0; p < pieces(part(rows, n, 0)); ++p) {
    const auto scope = tl_.scratch_scope();
    if (const RowRange mine = piece(part(rows, n, me_), p); mine.count) {
      const tl::Tensor x = load(mine);
      for (std::uint32_t k = 0; k + 1 < n; ++k) send(other(k), x, tag);
    }
    for (std::uint32_t j = 0; j < n; ++j)
      if (const RowRange r = piece(part(rows, n, j), p); j != me_ && r.count) store(r, recv(j, r, tag));
  }
}

void Lane::direct_all_reduce(RowRange rows, std::uint32_t tag) {
  const std::uint32_t n = members();
  if (n == 1) return;
  for (std::uint32_t p = 0; p < pieces(rows); ++p) {
    const auto scope = tl_.scratch_scope();
    const RowRange r = piece(rows, p);
    const tl::Tensor x = load(r);
    for (std::uint32_t k = 0; k + 1 < n; ++k) send(other(k), x, tag);
    std::vector<std::optional<tl::Tensor>> got(n);
    for (std::uint32_t j = 0; j < n; ++j) got[j] = j == me_ ? x : recv(j, r, tag);
    tl::Tensor sum = *got[0];
    for (std::uint32_t j = 1; j < n; ++j) sum = tl_.add(sum, *got[j]);  // member order: the same sum everywhere
    store(r, sum);
  }
}

void Lane::tree_reduce(RowRange rows, Tree shape, std::uint32_t root, bool broadcast, std::uint32_t tag) {
  if (members() == 1) return;
  const std::vector<std::uint32_t> kids = children(shape, root);
  for (std::uint32_t p = 0; p < pieces(rows); ++p) {
    const auto scope = tl_.scratch_scope();
    const RowRange r = piece(rows, p);
    std::vector<tl::Tensor> got;
    for (const std::uint32_t k : kids) got.push_back(recv(k, r, tag));
    tl::Tensor sum = load(r);
    for (const tl::Tensor& g : got) sum = tl_.add(sum, g);
    if (me_ != root) {
      send(parent(shape, root), sum, tag);
      continue;
    }
    store(r, sum);
    if (broadcast)
      for (const std::uint32_t k : kids) send(k, sum, tag + 1);  // the way down starts at once
  }
  if (broadcast && me_ != root) tree_broadcast(rows, shape, root, tag + 1);
}

void Lane::tree_broadcast(RowRange rows, Tree shape, std::uint32_t root, std::uint32_t tag) {
  if (members() == 1) return;
  const std::vector<std::uint32_t> kids = children(shape, root);
  for (std::uint32_t p = 0; p < pieces(rows); ++p) {
    const auto scope = tl_.scratch_scope();
    const RowRange r = piece(rows, p);
    tl::Tensor x = me_ == root ? load(r) : recv(parent(shape, root), r, tag);
    for (const std::uint32_t k : kids) send(k, x, tag);
    if (me_ != root) store(r, x);
  }
}

void Lane::scatter(RowRange rows, std::uint32_t root, std::uint32_t tag) {
  const std::uint32_t n = members();
  if (n == 1) return;
  for (std::uint32_t p = 0; p < pieces(part(rows, n, 0)); ++p) {
    const auto scope = tl_.scratch_scope();
    if (me_ == root) {
      for (std::uint32_t k = 0; k + 1 < n; ++k)
        if (const RowRange r = piece(part(rows, n, other(k)), p); r.count) send(other(k), load(r), tag);
    } else if (const RowRange mine = piece(part(rows, n, me_), p); mine.count) {
      store(mine, recv(root, mine, tag));
    }
  }
}

void Lane::gather(RowRange rows, std::uint32_t root, std::uint32_t tag) {
  const std::uint32_t n = members();
  if (n == 1) return;
  for (std::uint32_t p = 0; p < pieces(part(rows, n, 0)); ++p) {
    const auto scope = tl_.scratch_scope();
    if (me_ != root) {
      if (const RowRange mine = piece(part(rows, n, me_), p); mine.count) send(root, load(mine), tag);
      continue;
    }
    for (std::uint32_t j = 0; j < n; ++j)
      if (const RowRange r = piece(part(rows, n, j), p); j != me_ && r.count) store(r, recv(j, r, tag));
  }
}

}  // namespace kb::collectives
