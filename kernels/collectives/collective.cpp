#include "kernels/collectives/collective.h"

#include <algorithm>
#include <array>
#include <map>
#include <numeric>

#include "kernels/collectives/lane.h"
#include "kernels/collectives/plan.h"

namespace kb::collectives {

namespace {

constexpr std::array<const char*, 5> kOps{"all_reduce", "reduce_scatter", "all_gather", "broadcast", "reduce"};
constexpr std::array<const char*, 6> kAlgorithms{"ring", "tree", "one_shot", "two_shot", "hierarchical", "auto"};

// Tags of the phases of one collective: a phase uses up to kTagsPerPhase from its first.
constexpr std::uint32_t kTagsPerPhase = 100;

// What one lane runs of a flat (not hierarchical) algorithm.
struct Flat {
  Op op;
  Algorithm algorithm;
  const std::vector<std::vector<std::uint32_t>>* rings;
  std::uint32_t lane, root, tag;
};

void run_flat(Lane& lane, RowRange rows, const Flat& f) {
  const auto& rings = *f.rings;
  const auto ring = [&] { return rings[f.lane % rings.size()]; };
  switch (f.op) {
    case Op::AllReduce:
      if (f.algorithm == Algorithm::Ring) {
        lane.ring_reduce_scatter(rows, ring(), true, f.tag);
      } else if (f.algorithm == Algorithm::Tree) {
        lane.tree_reduce(rows, Tree::Binary, 0, true, f.tag);
      } else if (f.algorithm == Algorithm::OneShot) {
        lane.direct_all_reduce(rows, f.tag);
      } else {
        lane.direct_reduce_scatter(rows, true, f.tag);
      }
      return;
    case Op::ReduceScatter:
      if (f.algorithm == Algorithm::Ring) {
        lane.ring_reduce_scatter(rows, ring(), false, f.tag);
      } else if (f.algorithm == Algorithm::Tree) {
        lane.tree_reduce(rows, Tree::Binary, 0, false, f.tag);
        lane.scatter(rows, 0, f.tag + 2);
      } else {
        lane.direct_reduce_scatter(rows, false, f.tag);
      }
      return;
    case Op::AllGather:
      if (f.algorithm == Algorithm::Ring) {
        lane.ring_all_gather(rows, ring(), f.tag);
      } else if (f.algorithm == Algorithm::Tree) {
        lane.gather(rows, 0, f.tag);
        lane.tree_broadcast(rows, Tree::Binary, 0, f.tag + 1);
      } else {
        lane.direct_all_gather(rows, f.tag);
      }
      return;
    case Op::Broadcast:
      if (f.algorithm == Algorithm::TwoShot) {
        lane.scatter(rows, f.root, f.tag);
        lane.direct_all_gather(rows, f.tag + 1);
      } else {
        lane.tree_broadcast(rows, tree_of(f.algorithm), f.root, f.tag);
      }
      return;
    case Op::Reduce:
      if (f.algorithm == Algorithm::TwoShot) {
        lane.direct_reduce_scatter(rows, false, f.tag);
        lane.gather(rows, f.root, f.tag + 2);
      } else {
        lane.tree_reduce(rows, tree_of(f.algorithm), f.root, false, f.tag);
      }
      return;
  }
}

}  // namespace

const char* op_name(Op op) { return kOps[static_cast<std::size_t>(op)]; }
const char* algorithm_name(Algorithm a) { return kAlgorithms[static_cast<std::size_t>(a)]; }

std::optional<Op> parse_op(const std::string& s) {
  for (std::size_t i = 0; i < kOps.size(); ++i)
    if (s == kOps[i]) return static_cast<Op>(i);
  return std::nullopt;
}

std::optional<Algorithm> parse_algorithm(const std::string& s) {
  for (std::size_t i = 0; i < kAlgorithms.size(); ++i)
    if (s == kAlgorithms[i]) return static_cast<Algorithm>(i);
  return std::nullopt;
}

const std::vector<Algorithm>& algorithms_of(Op op) {
  static const std::vector<Algorithm> with_hierarchy{Algorithm::Ring, Algorithm::Tree, Algorithm::OneShot,
                                                     Algorithm::TwoShot, Algorithm::Hierarchical};
  static const std::vector<Algorithm> flat{Algorithm::Ring, Algorithm::Tree, Algorithm::OneShot, Algorithm::TwoShot};
  return op == Op::ReduceScatter || op == Op::AllGather ? flat : with_hierarchy;
}

namespace {

// This PE's (rank, lane) in the plan, if it is in a rank.
std::optional<std::pair<std::uint32_t, std::uint32_t>> place_in(const Plan& plan, const PeCoord& self) {
  for (std::uint32_t r = 0; r < plan.ranks.size(); ++r)
    for (std::uint32_t l = 0; l < plan.ranks[r].size(); ++l)
      if (plan.ranks[r][l] == self) return std::pair{r, l};
  return std::nullopt;
}

void run_home(tl::Ctx& tl, const Plan& plan, Home& home, std::uint32_t rank, std::uint32_t lane) {
  const PeCoord self = tl.coord();
  const RowRange rows = home.rows();
  auto lane_of = [&](const std::vector<std::uint32_t>& members, std::uint32_t me) {
    std::vector<PeCoord> peers;
    for (const std::uint32_t m : members) peers.push_back(plan.ranks[m][lane]);
    return Lane(tl, home, std::move(peers), me, plan.piece_rows, lane);
  };
  if (plan.algorithm != Algorithm::Hierarchical) {
    std::vector<std::uint32_t> all(plan.ranks.size());
    for (std::uint32_t i = 0; i < all.size(); ++i) all[i] = i;
    Lane l = lane_of(all, rank);
    run_flat(l, rows, {plan.op, plan.algorithm, &plan.rings, lane, plan.root, plan.tag});
    return;
  }
  // Hierarchical: the ranks of each SIP (in rank order) are a local group; those at the
  // same place in their groups are a group across the SIPs.
  std::map<std::uint32_t, std::vector<std::uint32_t>> local;
  std::vector<std::uint32_t> sips;  // in order of first rank
  for (std::uint32_t i = 0; i < plan.ranks.size(); ++i) {
    const std::uint32_t s = plan.ranks[i][0].sip.value;
    if (local[s].empty()) sips.push_back(s);
    local[s].push_back(i);
  }
  const std::vector<std::uint32_t>& mine = local[self.sip.value];
  const auto place = [&](std::uint32_t r) {
    const auto& group = local[plan.ranks[r][0].sip.value];
    return static_cast<std::uint32_t>(std::find(group.begin(), group.end(), r) - group.begin());
  };
  const auto sip_index = [&](std::uint32_t r) {
    return static_cast<std::uint32_t>(std::find(sips.begin(), sips.end(), plan.ranks[r][0].sip.value) - sips.begin());
  };
  const std::uint32_t k = place(rank), m = static_cast<std::uint32_t>(mine.size());
  auto across_at = [&](std::uint32_t at) {
    std::vector<std::uint32_t> members;
    for (const std::uint32_t s : sips) members.push_back(local[s][at]);
    return members;
  };
  Lane in_sip = lane_of(mine, k);
  const std::vector<std::uint32_t> cycle = sip_ring(plan.ranks, mine, tl.mesh());
  std::vector<std::uint32_t> order(m);
  for (std::uint32_t i = 0; i < m; ++i)
    order[i] = cycle[(lane % 2) ? m - 1 - i : i];  // lanes alternate directions
  const std::uint32_t t = plan.tag;
  const SipLevels levels = sip_levels(plan.ranks, mine, tl.mesh());
  if (plan.op == Op::AllReduce && levels.two_level()) {
    // Through the cube, then level by level across the cubes, each on the part the one
    // before left, then across the SIPs on this rank's part; and the parts back the same way.
    std::uint32_t kc = 0, km = 0;
    for (std::uint32_t i = 0; i < levels.cubes.size(); ++i)
      if (const auto at = std::find(levels.cubes[i].begin(), levels.cubes[i].end(), rank); at != levels.cubes[i].end()) {
        kc = static_cast<std::uint32_t>(at - levels.cubes[i].begin());
        km = i;
      }
    const std::vector<std::uint32_t>& cube = levels.cubes[km];
    std::vector<std::uint32_t> cube_ring(cube.size());
    std::iota(cube_ring.begin(), cube_ring.end(), 0u);
    std::vector<Lane> lanes{lane_of(cube, kc)};
    std::vector<std::vector<std::uint32_t>> rings{cube_ring};
    std::vector<RowRange> parts{rows, Lane::part(rows, static_cast<std::uint32_t>(cube.size()), kc)};
    for (const auto& groups : levels.mesh)
      for (const auto& group : groups) {
        const auto at = std::find(group.begin(), group.end(), km);
        if (at == group.end()) continue;
        std::vector<std::uint32_t> members, ring(group.size());
        for (const std::uint32_t i : group) members.push_back(levels.cubes[i][kc]);
        std::iota(ring.begin(), ring.end(), 0u);
        if (kc % 2) std::reverse(ring.begin(), ring.end());  // the places' rings alternate directions
        const auto me = static_cast<std::uint32_t>(at - group.begin());
        lanes.push_back(lane_of(members, me));
        rings.push_back(ring);
        parts.push_back(Lane::part(parts.back(), static_cast<std::uint32_t>(group.size()), me));
      }
    const auto n = static_cast<std::uint32_t>(lanes.size());
    for (std::uint32_t i = 0; i < n; ++i) lanes[i].ring_reduce_scatter(parts[i], rings[i], false, t + i * kTagsPerPhase);
    Lane across = lane_of(across_at(k), sip_index(rank));
    run_flat(across, parts.back(), {Op::AllReduce, plan.across, &plan.across_rings, lane, 0, t + n * kTagsPerPhase});
    for (std::uint32_t i = n; i-- > 0;)
      lanes[i].ring_all_gather(parts[i], rings[i], t + (2 * n - i) * kTagsPerPhase);
  } else if (plan.op == Op::AllReduce) {
    in_sip.ring_reduce_scatter(rows, order, false, t);
    Lane across = lane_of(across_at(k), sip_index(rank));
    run_flat(across, Lane::part(rows, m, k), {Op::AllReduce, plan.across, &plan.across_rings, lane, 0, t + kTagsPerPhase});
    in_sip.ring_all_gather(rows, order, t + 2 * kTagsPerPhase);
  } else if (plan.op == Op::Broadcast) {
    const std::uint32_t k0 = place(plan.root);
    if (k == k0) {
      Lane across = lane_of(across_at(k0), sip_index(rank));
      run_flat(across, rows, {Op::Broadcast, plan.across, &plan.across_rings, lane, sip_index(plan.root), t});
    }
    in_sip.tree_broadcast(rows, Tree::Binary, k0, t + kTagsPerPhase);
  } else {  // Reduce
    const std::uint32_t k0 = place(plan.root);
    in_sip.tree_reduce(rows, Tree::Binary, k0, false, t);
    if (k == k0) {
      Lane across = lane_of(across_at(k0), sip_index(rank));
      run_flat(across, rows, {Op::Reduce, plan.across, &plan.across_rings, lane, sip_index(plan.root), t + kTagsPerPhase});
    }
  }
}

}  // namespace

void run(tl::Ctx& tl, const Plan& plan, const std::vector<DeviceTensor>& buffers) {
  const auto place = place_in(plan, tl.coord());
  if (!place) return;
  Home home(tl, buffers.at(tl.sip().value));
  run_home(tl, plan, home, place->first, place->second);
}

void run_in_tcm(tl::Ctx& tl, const Plan& plan, const tl::Tensor& mine) {
  const auto place = place_in(plan, tl.coord());
  if (!place) return;
  Home home(tl, mine);
  run_home(tl, plan, home, place->first, place->second);
}

namespace {
// The PEs of the SIPs, SIP by SIP, cube by cube; a new rank starts where `together` says
// a PE does not belong with the one before.
template <class Together>
std::vector<Rank> ranks_by(const Topology& topo, const std::vector<SipId>& sips, Together together) {
  std::vector<Rank> ranks;
  for (const SipId s : sips)
    for (std::uint32_t c = 0; c < topo.cubes_per_sip(); ++c)
      for (std::uint32_t p = 0; p < topo.cube.pes; ++p) {
        const PeCoord pe{s, CubeId(c), PeId(p)};
        if (ranks.empty() || !together(ranks.back().back(), pe)) ranks.emplace_back();
        ranks.back().push_back(pe);
      }
  return ranks;
}
}  // namespace

std::vector<Rank> ranks_of_sips(const Topology& topo, const std::vector<SipId>& sips) {
  return ranks_by(topo, sips, [](const PeCoord& a, const PeCoord& b) { return a.sip == b.sip; });
}

std::vector<Rank> ranks_of_cubes(const Topology& topo, const std::vector<SipId>& sips) {
  return ranks_by(topo, sips, [](const PeCoord& a, const PeCoord& b) { return a.sip == b.sip && a.cube == b.cube; });
}

std::vector<Rank> ranks_of_pes(const Topology& topo, const std::vector<SipId>& sips) {
  return ranks_by(topo, sips, [](const PeCoord&, const PeCoord&) { return false; });
}

}  // namespace kb::collectives
