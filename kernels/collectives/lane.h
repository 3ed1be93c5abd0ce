#pragma once
// One lane of a collective: a PE and its counterparts (the same lane of every other
// rank), each working on rows of its own shard of the buffer. The building blocks every
// algorithm is made of; each moves the rows piece by piece (at most piece_rows a
// message), so a big buffer streams through a small TCM.
#include <cstdint>
#include <vector>

#include "base/dp_policy.h"
#include "kernels/tl/ctx.h"

namespace kb::collectives {

// The shape of a tree over the members, rooted at `root`: in member order relative to
// the root (v = (member - root) mod n), a binary tree (children 2v+1, 2v+2), a chain
// (child v+1) or a star (the root's children are all the others).
enum class Tree { Binary, Chain, Star };

// Where a lane's rows live: its shard of a device tensor in HBM (a piece is loaded and
// stored by the DMA), or an fp32 tensor in its own TCM (a piece is a view of it, a store
// a copy into it), so a collective on a small buffer leaves the DMA to other streams.
class Home {
 public:
  Home(tl::Ctx& tl, const DeviceTensor& t) : tl_(tl), hbm_(&t) {}
  Home(tl::Ctx& tl, const tl::Tensor& t) : tl_(tl), tcm_(t) {}
  RowRange rows() const;  // the lane's rows: its shard's global rows, or all of the tensor's
  std::int64_t cols() const;
  tl::Tensor load(RowRange r);
  void store(RowRange r, const tl::Tensor& x);

 private:
  tl::Ctx& tl_;
  const DeviceTensor* hbm_ = nullptr;
  tl::Tensor tcm_;
};

class Lane {
 public:
  // `peers[j]`: member j's PE; this PE is peers[me]. `stagger` rotates the order in which
  // a lane sends to many peers, so lanes spread over the links instead of queueing
  // on one after another.
  Lane(tl::Ctx& tl, Home& home, std::vector<PeCoord> peers, std::uint32_t me,
       std::uint32_t piece_rows, std::uint32_t stagger);

  std::uint32_t members() const { return static_cast<std::uint32_t>(peers_.size()); }
  std::uint32_t me() const { return me_; }
  // Part i of n of `rows` (n blocks of ceil(count / n) rows, the last ones fewer or none).
  static RowRange part(RowRange rows, std::uint32_t n, std::uint32_t i);

  // The sum over the members of each one's `rows`, in place, around `ring` (a cycle of
  // member indices): a reduce-scatter, then (all_gather) an all-gather of the parts.
  // Member m ends with part m of n reduced (and, with all_gather, every part).
  void ring_reduce_scatter(RowRange rows, const std::vector<std::uint32_t>& ring, bool all_gather, std::uint32_t tag);
  // Each member's part m of `rows` sent around the ring to all: every member ends with all.
  void ring_all_gather(RowRange rows, const std::vector<std::uint32_t>& ring, std::uint32_t tag);
  // Part m sent by every member straight to member m, which sums them in member order;
  // then (all_gather) each sends its sum straight to all.
  void direct_reduce_scatter(RowRange rows, bool all_gather, std::uint32_t tag);
  // Each member's part m sent straight to every other.
  void direct_all_gather(RowRange rows, std::uint32_t tag);
  // Every member's rows sent straight to all; each sums them in member order.
  void direct_all_reduce(RowRange rows, std::uint32_t tag);
  // The sum reaches `root` up a tree (each member adds its children's in order); and,
  // with broadcast, goes back down the tree to all.
  void tree_reduce(RowRange rows, Tree shape, std::uint32_t root, bool broadcast, std::uint32_t tag);
  // The root's rows down a tree to all.
  void tree_broadcast(RowRange rows, Tree shape, std::uint32_t root, std::uint32_t tag);
  // The root sends part m of its rows to member m; members store it.
  void scatter(RowRange rows, std::uint32_t root, std::uint32_t tag);
  // Member m sends its part m to the root, which stores them.
  void gather(RowRange rows, std::uint32_t root, std::uint32_t tag);

 private:
  std::uint32_t pieces(RowRange rows) const;
  RowRange piece(RowRange rows, std::uint32_t p) const;
  tl::Tensor load(RowRange r) { return home_.load(r); }
  void store(RowRange r, const tl::Tensor& x) { home_.store(r, x); }
  tl::Tensor recv(std::uint32_t from, RowRange r, std::uint32_t tag);
  void send(std::uint32_t to, const tl::Tensor& x, std::uint32_t tag) { tl_.send(peers_[to], x, tag); }
  // The k-th of the other members this lane sends to, in its staggered order.
  std::uint32_t other(std::uint32_t k) const;
  std::vector<std::uint32_t> children(Tree shape, std::uint32_t root) const;
  std::uint32_t parent(Tree shape, std::uint32_t root) const;

  tl::Ctx& tl_;
  Home& home_;
  std::vector<PeCoord> peers_;
  std::uint32_t me_, piece_rows_, stagger_;
};

}  // namespace kb::collectives
