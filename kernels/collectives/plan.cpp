#include "kernels/collectives/plan.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <numeric>
#include <set>
#include <tuple>

#include "base/sip_graph.h"

namespace kb::collectives {

namespace {

double ceil_div(double bytes, double per_cycle) { return std::ceil(bytes / per_cycle); }

// Bytes that go from one member to another, as a share of a lane's rows.
struct Flow {
  std::uint32_t from, to;
  double share;
};

// One step of a lane's chain: messages of `share` of a piece, `sends` of them from its
// IPCQ one after another (the first step: `loads` parts read from HBM for them, one
// after another), then `adds` MATH adds of one; `reload`: the step first reads back
// what the one before stored (a share of a piece), as tl orders a load after a store.
struct Step {
  double share;
  std::uint32_t sends, adds;
  std::uint32_t loads = 1;
  double reload = 0;
};

// What a flat algorithm does on one lane among n members.
struct Shape {
  std::vector<Flow> flows;
  std::vector<Step> steps;
  bool pipelined = false;  // a chain or tree: pieces follow each other down it
  std::uint32_t stores = 1;  // parts of the last step's share the lane stores at the end
};

std::vector<std::uint32_t> tree_children(std::uint32_t v, std::uint32_t n, bool binary) {
  std::vector<std::uint32_t> kids;
  for (const std::uint32_t c : binary ? std::vector<std::uint32_t>{2 * v + 1, 2 * v + 2} : std::vector<std::uint32_t>{v + 1})
    if (c < n) kids.push_back(c);
  return kids;
}

// Flows down (or, with up, up) a tree rooted at `root`: binary, chain or star.
void tree_flows(std::vector<Flow>& out, std::uint32_t n, std::uint32_t root, Tree t, bool up, double share) {
  auto member = [&](std::uint32_t v) { return (v + root) % n; };
  for (std::uint32_t v = 0; v < n; ++v) {
    std::vector<std::uint32_t> kids;
    if (t == Tree::Star) {
      if (v == 0)
        for (std::uint32_t c = 1; c < n; ++c) kids.push_back(c);
    } else {
      kids = tree_children(v, n, t == Tree::Binary);
    }
    for (const std::uint32_t c : kids)
      out.push_back(up ? Flow{member(c), member(v), share} : Flow{member(v), member(c), share});
  }
}

void all_pairs(std::vector<Flow>& out, std::uint32_t n, double share) {
  for (std::uint32_t i = 0; i < n; ++i)
    for (std::uint32_t j = 0; j < n; ++j)
      if (i != j) out.push_back({i, j, share});
}

void ring_flows(std::vector<Flow>& out, const std::vector<std::uint32_t>& ring, double share) {
  for (std::size_t q = 0; q < ring.size(); ++q) out.push_back({ring[q], ring[(q + 1) % ring.size()], share});
}

// Steps down (or up) a tree: its depth; each parent adds its children's on the way up;
// on the way down the deepest member (the last) waits for its parents' messages, each
// after its parent's earlier sends (a binary tree's second child: one; a star's last: all).
void tree_steps(std::vector<Step>& out, std::uint32_t n, Tree t, bool up) {
  if (t == Tree::Star) {
    out.push_back(up ? Step{1, 1, n - 1} : Step{1, n - 1, 0});
    return;
  }
  std::vector<Step> path;
  for (std::uint32_t v = n - 1; v > 0; v = t == Tree::Chain ? v - 1 : (v - 1) / 2) {
    const bool second = t == Tree::Binary && v % 2 == 0;
    path.push_back(up ? Step{1, 1, t == Tree::Binary ? 2u : 1u} : Step{1, second ? 2u : 1u, 0});
  }
  out.insert(out.end(), path.rbegin(), path.rend());
}

Shape shape_of(Op op, Algorithm a, std::uint32_t n, std::uint32_t root,
               const std::vector<std::vector<std::uint32_t>>& rings, std::uint32_t lane) {
  Shape s;
  if (n == 1) return s;
  const double part = 1.0 / n;
  const std::uint32_t back = n - 1;
  auto ring_use = [&](double per_edge) { ring_flows(s.flows, rings[lane % rings.size()], per_edge); };
  switch (op) {
    case Op::AllReduce:
      if (a == Algorithm::Ring) {
        ring_use(2.0 * back / n);
        s.steps.assign(back, Step{part, 1, 1});
        s.steps.insert(s.steps.end(), back, Step{part, 1, 0});
      } else if (a == Algorithm::Tree) {
        tree_flows(s.flows, n, 0, Tree::Binary, true, 1);
        tree_flows(s.flows, n, 0, Tree::Binary, false, 1);
        tree_steps(s.steps, n, Tree::Binary, true);
        tree_steps(s.steps, n, Tree::Binary, false);
        s.pipelined = true;
      } else if (a == Algorithm::OneShot) {
        all_pairs(s.flows, n, 1);
        s.steps = {{1, back, back}};
      } else {
        all_pairs(s.flows, n, 2 * part);
        s.steps = {{part, back, back, back}, {part, back, 0}};
        s.stores = back;
      }
      break;
    case Op::ReduceScatter:
    case Op::AllGather: {
      const bool reduce = op == Op::ReduceScatter;
      if (a == Algorithm::Ring) {
        ring_use(static_cast<double>(back) / n);
        s.steps.assign(back, Step{part, 1, reduce ? 1u : 0u});
      } else if (a == Algorithm::Tree) {  // the whole up a tree and the parts out, or the parts in and the whole down
        if (reduce) {
          tree_flows(s.flows, n, 0, Tree::Binary, true, 1);
          tree_flows(s.flows, n, 0, Tree::Star, false, part);
          tree_steps(s.steps, n, Tree::Binary, true);
          s.steps.push_back({part, back, 0, back, 1});
        } else {
          tree_flows(s.flows, n, 0, Tree::Star, true, part);
          tree_flows(s.flows, n, 0, Tree::Binary, false, 1);
          s.steps.push_back({part, 1, 0});
          const std::size_t first = s.steps.size();
          tree_steps(s.steps, n, Tree::Binary, false);
          s.steps[first].reload = part * back;
          s.stores = 1;
        }
        s.pipelined = true;
      } else {
        all_pairs(s.flows, n, part);
        s.steps = {{part, back, reduce ? back : 0, reduce ? back : 1}};
        s.stores = reduce ? 1 : back;
      }
      break;
    }
    case Op::Broadcast:
    case Op::Reduce: {
      const bool up = op == Op::Reduce;
      if (a == Algorithm::TwoShot) {
        tree_flows(s.flows, n, root, Tree::Star, up, part);
        all_pairs(s.flows, n, part);
        // up: a direct reduce-scatter, then each part to the root; down: the root's parts
        // out, then every part to all.
        s.steps = {{part, back, up ? back : 0, back}, {part, up ? 1 : back, 0, 1, part}};
        s.stores = up ? back : back;
      } else {
        tree_flows(s.flows, n, root, tree_of(a), up, 1);
        tree_steps(s.steps, n, tree_of(a), up);
        s.pipelined = true;
      }
      break;
    }
  }
  return s;
}

// The resources a message holds, each with its bandwidth: link directions between SIPs,
// mesh links, fabric ports; and its uncontended timing.
class Network {
 public:
  explicit Network(const Topology& topo) : topo_(topo), graph_(topo), mesh_(topo.mesh()) {}

  // Adds `bytes` from a to b to the loads.
  void carry(const PeCoord& a, const PeCoord& b, double bytes) {
    if (a.sip != b.sip) {
      mesh(a.sip.value, a.cube, nearest_port(topo_, a.cube), bytes);
      for (std::uint32_t at = a.sip.value; at != b.sip.value;) {
        const auto step = graph_.next(at, b.sip.value);
        if (!step) break;
        load_[{0, step->link, step->forward, 0}] += bytes / static_cast<double>(topo_.system.links.link.bytes_per_cycle);
        const SipLink& l = graph_.links()[step->link];
        at = step->forward ? l.b : l.a;
        if (at == SipGraph::kSwitch) {
          const auto down = graph_.next(SipGraph::kSwitch, b.sip.value);
          load_[{0, down->link, down->forward, 0}] += bytes / static_cast<double>(topo_.system.links.link.bytes_per_cycle);
          at = b.sip.value;
        }
      }
      mesh(b.sip.value, nearest_port(topo_, b.cube), b.cube, bytes);
    } else if (a.cube != b.cube) {
      mesh(a.sip.value, a.cube, b.cube, bytes);
    } else {
      const double fabric = static_cast<double>(topo_.cube.fabric.bytes_per_cycle);
      load_[{2, a.sip.value, a.cube.value, a.pe.value}] += bytes / fabric;
      load_[{3, b.sip.value, b.cube.value, b.pe.value}] += bytes / fabric;
    }
  }
  double busiest() const {
    double m = 0;
    for (const auto& [k, cycles] : load_) m = std::max(m, cycles);
    return m;
  }
  // An uncontended message of `bytes`: when it arrives, and when its sender's IPCQ is free.
  std::pair<double, double> message(const PeCoord& a, const PeCoord& b, double bytes) const {
    const auto& noc = topo_.sip.noc;
    const double hop = static_cast<double>(noc.latency_cycles), mesh_ser = ceil_div(bytes, static_cast<double>(noc.bytes_per_cycle));
    if (a.sip == b.sip && a.cube == b.cube) {
      const double t = static_cast<double>(topo_.cube.fabric.latency_cycles) +
                       ceil_div(bytes, static_cast<double>(topo_.cube.fabric.bytes_per_cycle));
      return {t, t};
    }
    if (a.sip == b.sip) {
      const double h = mesh_.hops(a.cube, b.cube);
      return {h * hop + mesh_ser, 2 * h * hop + mesh_ser};
    }
    // Each mesh it crosses delivers its tail after h hops; a port cube's own PEs reach the port directly.
    const auto& link = topo_.system.links.link;
    const double h1 = mesh_.hops(a.cube, nearest_port(topo_, a.cube)), h2 = mesh_.hops(nearest_port(topo_, b.cube), b.cube);
    const double out = h1 > 0 ? h1 * hop + mesh_ser : 0, in = h2 > 0 ? h2 * hop + mesh_ser : 0;
    const double crossings = graph_.hops(a.sip.value, b.sip.value);
    const double link_ser = ceil_div(bytes, static_cast<double>(link.bytes_per_cycle));
    const double on_links = crossings * (link_ser + static_cast<double>(link.latency_cycles));
    return {out + on_links + in, out + h1 * hop + link_ser};
  }

 private:
  void mesh(std::uint32_t sip, CubeId from, CubeId to, double bytes) {
    const double bw = static_cast<double>(topo_.sip.noc.bytes_per_cycle);
    for (CubeId at = from; at != to;) {
      const auto d = mesh_.xy_step(at, to);
      load_[{1, sip, at.value, static_cast<std::uint32_t>(*d)}] += bytes / bw;
      at = *mesh_.neighbour(at, *d);
    }
  }

  const Topology& topo_;
  SipGraph graph_;
  Mesh mesh_;
  std::map<std::tuple<int, std::uint32_t, std::uint32_t, std::uint32_t>, double> load_;  // cycles of each resource
};

// One flat algorithm run by every group at once (the groups of a hierarchical step run
// side by side), each member's lane holding `lane_bytes`.
struct FlatRun {
  Op op;
  Algorithm algorithm;
  std::vector<std::vector<Rank>> groups;
  std::uint32_t root = 0;
  const std::vector<std::vector<std::uint32_t>>* rings;
  double lane_bytes;
};

Estimate flat_estimate(const Topology& topo, const FlatRun& run, std::uint32_t piece_rows, std::uint32_t cols) {
  Network net(topo);
  Estimate e;
  const double piece = std::min(run.lane_bytes, static_cast<double>(piece_rows) * cols * 4);
  const double pieces = std::max(1.0, std::ceil(run.lane_bytes / std::max(piece, 1.0)));
  for (const auto& group : run.groups) {
    const auto n = static_cast<std::uint32_t>(group.size());
    const auto lanes = static_cast<std::uint32_t>(group.at(0).size());
    for (std::uint32_t l = 0; l < lanes; ++l) {
      const Shape s = shape_of(run.op, run.algorithm, n, run.root, *run.rings, l);
      for (const Flow& f : s.flows) net.carry(group[f.from][l], group[f.to][l], f.share * run.lane_bytes);
      // The slowest message of the lane sets each step's time.
      const auto& hbm = topo.cube.hbm;
      const double hbm_lat = static_cast<double>(hbm.latency_cycles), hbm_bw = static_cast<double>(hbm.bytes_per_cycle);
      double chain = 0;
      for (const Step& st : s.steps) {
        const double b = st.share * piece;
        double arrive = 0, free = 0;
        for (const Flow& f : s.flows) {
          const auto [a, fr] = net.message(group[f.from][l], group[f.to][l], b);
          arrive = std::max(arrive, a);
          free = std::max(free, fr);
        }
        if (st.reload > 0) chain += 2 * hbm_lat + ceil_div(st.reload * piece, hbm_bw) + ceil_div(b, hbm_bw);
        const double loads = &st == &s.steps.front() ? (st.loads - 1.0) * ceil_div(b, hbm_bw) : 0;
        chain += std::max((st.sends - 1.0) * free, loads) + arrive + st.adds * static_cast<double>(topo.math_cycles("add", static_cast<std::uint64_t>(b) / 4));
      }
      const double steps = static_cast<double>(s.steps.size());
      const double lane_time = s.pipelined && steps > 0 ? chain / steps * (steps + pieces - 1) : chain * pieces;
      e.chain = std::max(e.chain, lane_time);
      if (!s.steps.empty())  // the first message's part read from HBM, the last parts written back
        e.hbm = std::max(e.hbm, 2 * hbm_lat + ceil_div(s.steps.front().share * piece, hbm_bw) +
                                    s.stores * ceil_div(s.steps.back().share * piece, hbm_bw));
    }
  }
  e.bandwidth = net.busiest();
  e.cycles = std::max(e.bandwidth, e.chain) + e.hbm;
  return e;
}

bool one_rank_per_sip(const std::vector<Rank>& ranks) {
  std::set<std::uint32_t> sips;
  for (const Rank& r : ranks) sips.insert(r[0].sip.value);
  return sips.size() == ranks.size();
}

// The rings a ring algorithm uses. Ranks on SIPs joined all to all (at most 5): every
// directed Hamiltonian cycle, so each link direction carries its share of the rings
// (4 SIPs: 6 rings, each direction in 2 of them: the three outgoing links of a SIP all
// busy). Otherwise the rank order and, past two ranks, its reverse.
std::vector<std::vector<std::uint32_t>> rings_of(const Topology& topo, const std::vector<Rank>& ranks) {
  const auto n = static_cast<std::uint32_t>(ranks.size());
  std::vector<std::uint32_t> order(n);
  std::iota(order.begin(), order.end(), 0u);
  std::vector<std::vector<std::uint32_t>> rings;
  if (n > 2 && n <= 5 && one_rank_per_sip(ranks) &&
      topo.system.links.kind == Topology::SystemSpec::Links::Kind::FullyConnected) {
    do rings.push_back(order);
    while (std::next_permutation(order.begin() + 1, order.end()));
    return rings;
  }
  // One SIP's ranks, a cube each: around the mesh's Hamiltonian cycle (sip_ring).
  bool one_sip = true;
  for (const Rank& r : ranks) one_sip = one_sip && r[0].sip == ranks[0][0].sip;
  if (one_sip) order = sip_ring(ranks, order, topo.mesh());
  rings.push_back(order);
  if (n > 2) rings.emplace_back(order.rbegin(), order.rend());
  return rings;
}

std::uint32_t piece_rows_of(const Topology& topo, std::uint32_t n, std::uint32_t cols, Algorithm a) {
  // The pieces a lane holds in TCM at once: a ring's reduce-scatter loads, receives and
  // adds one a step and its all-gather receives one a step (about 4n; a hierarchical
  // one's levels are rings); a direct exchange its parts and their sums (2n + 4), a tree
  // fewer. A piece is at most 64 KiB.
  const bool rings = a == Algorithm::Ring || a == Algorithm::Hierarchical;
  const std::uint64_t held = rings ? 4 * std::uint64_t{n} + 4 : 2 * std::uint64_t{n} + 4;
  const std::uint64_t piece_bytes = std::min<std::uint64_t>(64 * 1024, topo.pe.tcm_bytes / held);
  return static_cast<std::uint32_t>(std::max<std::uint64_t>(1, piece_bytes / (std::uint64_t{cols} * 4)));
}

struct Hierarchy {
  std::vector<std::vector<Rank>> local, across;  // the groups of each step
};

Hierarchy hierarchy_of(const std::vector<Rank>& ranks) {
  std::map<std::uint32_t, std::vector<Rank>> by_sip;
  std::vector<std::uint32_t> sips;
  for (const Rank& r : ranks) {
    if (by_sip[r[0].sip.value].empty()) sips.push_back(r[0].sip.value);
    by_sip[r[0].sip.value].push_back(r);
  }
  Hierarchy h;
  const std::size_t m = by_sip[sips[0]].size();
  for (const std::uint32_t s : sips) {
    if (by_sip[s].size() != m)
      throw std::invalid_argument("hierarchical needs as many ranks on every SIP: sip" + std::to_string(sips[0]) +
                                  " has " + std::to_string(m) + ", sip" + std::to_string(s) + " " +
                                  std::to_string(by_sip[s].size()));
    h.local.push_back(by_sip[s]);
  }
  for (std::size_t k = 0; k < m; ++k) {
    std::vector<Rank> g;
    for (const std::uint32_t s : sips) g.push_back(by_sip[s][k]);
    h.across.push_back(std::move(g));
  }
  return h;
}

double lane_bytes_of(const Plan& p, std::uint64_t bytes) {
  return static_cast<double>(bytes) / static_cast<double>(p.ranks.at(0).size());
}

}  // namespace

SipLevels sip_levels(const std::vector<Rank>& ranks, const std::vector<std::uint32_t>& members, const Mesh& mesh) {
  SipLevels lv;
  std::vector<std::uint32_t> ids;  // the cubes, in order of first rank
  for (const std::uint32_t r : members) {
    const std::uint32_t c = ranks[r][0].cube.value;
    const auto at = static_cast<std::size_t>(std::find(ids.begin(), ids.end(), c) - ids.begin());
    if (at == ids.size()) {
      ids.push_back(c);
      lv.cubes.emplace_back();
    }
    lv.cubes[at].push_back(r);
  }
  for (const auto& c : lv.cubes)
    if (c.size() != lv.cubes[0].size()) return {};
  std::vector<std::uint32_t> ring;
  if (ids.size() == mesh.cubes() && ids.size() % 2 == 0) {
    for (const std::uint32_t c : ring_order(mesh.width(), mesh.height()))
      ring.push_back(static_cast<std::uint32_t>(std::find(ids.begin(), ids.end(), c) - ids.begin()));
  } else {
    ring.resize(ids.size());
    std::iota(ring.begin(), ring.end(), 0u);
  }
  lv.mesh = {{ring}};
  return lv;
}

std::vector<std::uint32_t> sip_ring(const std::vector<Rank>& ranks,
                                    const std::vector<std::uint32_t>& members, const Mesh& mesh) {
  const SipLevels lv = sip_levels(ranks, members, mesh);
  if (lv.cubes.size() == members.size() && !lv.mesh.empty()) return lv.mesh[0][0];  // a rank a cube
  std::vector<std::uint32_t> order(members.size());
  std::iota(order.begin(), order.end(), 0u);
  return order;
}

Tree tree_of(Algorithm a) {
  return a == Algorithm::Ring ? Tree::Chain : a == Algorithm::Tree ? Tree::Binary : Tree::Star;
}

double bus_factor(Op op, std::uint32_t ranks) {
  const double n = ranks;
  if (op == Op::AllReduce) return 2 * (n - 1) / n;
  if (op == Op::ReduceScatter || op == Op::AllGather) return (n - 1) / n;
  return 1;
}

double link_peak_busbw(const Topology& topo, const std::vector<Rank>& ranks) {
  const PeCoord& first = ranks.at(0).at(0);
  bool sips = false, cubes = false;
  for (const Rank& r : ranks) {
    sips |= r[0].sip != first.sip;
    cubes |= r[0].cube != first.cube;
  }
  if (sips) {
    const SipGraph graph(topo);
    double links = 0;
    for (const SipLink& l : graph.links()) links += l.a == first.sip.value || l.b == first.sip.value;
    return links * static_cast<double>(topo.system.links.link.bytes_per_cycle);
  }
  if (ranks[0].size() > 1 && cubes) {  // a cube's rank: its router's mesh links out
    const Mesh mesh = topo.mesh();
    double out = 0;
    for (std::size_t d = 0; d < 4; ++d) out += mesh.neighbour(first.cube, static_cast<Direction>(d)).has_value();
    return out * static_cast<double>(topo.sip.noc.bytes_per_cycle);
  }
  return static_cast<double>(cubes ? topo.sip.noc.bytes_per_cycle : topo.cube.fabric.bytes_per_cycle);
}

Estimate estimate(const Topology& topo, const Plan& p, std::uint64_t bytes) {
  const double lane = lane_bytes_of(p, bytes);
  Estimate e;
  if (p.algorithm != Algorithm::Hierarchical) {
    e = flat_estimate(topo, {p.op, p.algorithm, {p.ranks}, p.root, &p.rings, lane}, p.piece_rows, p.cols);
  } else {
    const Hierarchy h = hierarchy_of(p.ranks);
    const auto m = static_cast<double>(h.local.at(0).size());
    std::vector<std::uint32_t> first(static_cast<std::size_t>(m));
    for (std::uint32_t i = 0; i < m; ++i) first[i] = i;
    // The lanes' rings alternate directions, as run_home's do.
    const std::vector<std::uint32_t> ring = sip_ring(h.local[0], first, topo.mesh());
    const std::vector<std::vector<std::uint32_t>> local_rings{ring, {ring.rbegin(), ring.rend()}};
    auto add = [&](const Estimate& s) {
      e.bandwidth += s.bandwidth;
      e.chain += s.chain;
      e.hbm = std::max(e.hbm, s.hbm);
      e.cycles += std::max(s.bandwidth, s.chain);
    };
    const SipLevels lv = sip_levels(h.local[0], first, topo.mesh());
    if (p.op == Op::AllReduce && lv.two_level()) {
      // Each cube's ranks, then level by level the ranks at one place across the cubes
      // (every SIP alike), each level on the part the one before left.
      const auto c = static_cast<std::uint32_t>(lv.cubes[0].size());
      std::vector<std::vector<Rank>> in_cube;
      for (const auto& local : h.local)
        for (const auto& cube : lv.cubes) {
          in_cube.emplace_back();
          for (const std::uint32_t r : cube) in_cube.back().push_back(local[r]);
        }
      std::vector<std::vector<std::uint32_t>> cube_rings{{}};
      for (std::uint32_t i = 0; i < c; ++i) cube_rings[0].push_back(i);
      std::vector<FlatRun> levels{{Op::ReduceScatter, Algorithm::Ring, in_cube, 0, &cube_rings, lane}};
      std::vector<std::vector<std::vector<std::uint32_t>>> level_rings;
      level_rings.reserve(lv.mesh.size());
      double share = lane / c;
      for (const auto& groups : lv.mesh) {
        std::vector<std::vector<Rank>> across_cubes;
        for (const auto& local : h.local)
          for (const auto& group : groups)
            for (std::uint32_t k = 0; k < c; ++k) {
              across_cubes.emplace_back();
              for (const std::uint32_t i : group) across_cubes.back().push_back(local[lv.cubes[i][k]]);
            }
        level_rings.push_back({{}});
        for (std::uint32_t i = 0; i < groups[0].size(); ++i) level_rings.back()[0].push_back(i);
        levels.push_back({Op::ReduceScatter, Algorithm::Ring, across_cubes, 0, &level_rings.back(), share});
        share /= static_cast<double>(groups[0].size());
      }
      for (const FlatRun& run : levels) add(flat_estimate(topo, run, p.piece_rows, p.cols));
      add(flat_estimate(topo, {Op::AllReduce, p.across, h.across, 0, &p.across_rings, lane / m}, p.piece_rows, p.cols));
      for (auto run = levels.rbegin(); run != levels.rend(); ++run) {
        FlatRun gather = *run;
        gather.op = Op::AllGather;
        add(flat_estimate(topo, gather, p.piece_rows, p.cols));
      }
    } else if (p.op == Op::AllReduce) {
      add(flat_estimate(topo, {Op::ReduceScatter, Algorithm::Ring, h.local, 0, &local_rings, lane}, p.piece_rows, p.cols));
      add(flat_estimate(topo, {Op::AllReduce, p.across, h.across, 0, &p.across_rings, lane / m}, p.piece_rows, p.cols));
      add(flat_estimate(topo, {Op::AllGather, Algorithm::Ring, h.local, 0, &local_rings, lane}, p.piece_rows, p.cols));
    } else {
      const FlatRun in_sip{p.op, Algorithm::Tree, h.local, 0, &local_rings, lane};
      const FlatRun across{p.op, p.across, h.across, 0, &p.across_rings, lane};
      if (p.op == Op::Broadcast) {
        add(flat_estimate(topo, across, p.piece_rows, p.cols));
        add(flat_estimate(topo, in_sip, p.piece_rows, p.cols));
      } else {
        add(flat_estimate(topo, in_sip, p.piece_rows, p.cols));
        add(flat_estimate(topo, across, p.piece_rows, p.cols));
      }
    }
    e.cycles += e.hbm;
  }
  e.peak_busbw = e.bandwidth > 0 ? bus_factor(p.op, static_cast<std::uint32_t>(p.ranks.size())) *
                                       static_cast<double>(bytes) / e.bandwidth
                                 : 0;
  return e;
}

Plan make_plan(const Topology& topo, const Request& q) {
  if (q.ranks.empty()) throw std::invalid_argument("a collective needs at least one rank");
  const std::size_t lanes = q.ranks[0].size();
  for (const Rank& r : q.ranks) {
    if (r.size() != lanes || lanes == 0)
      throw std::invalid_argument("every rank needs as many PEs (lanes): " + std::to_string(lanes) + " and " +
                                  std::to_string(r.size()));
    for (const PeCoord& pe : r)
      if (pe.sip != r[0].sip) throw std::invalid_argument("a rank's PEs must be on one SIP: " + pe.str());
  }
  if (q.root >= q.ranks.size())
    throw std::invalid_argument("root " + std::to_string(q.root) + " is not a rank: there are " +
                                std::to_string(q.ranks.size()));
  const auto& allowed = algorithms_of(q.op);
  if (q.algorithm != Algorithm::Auto && std::find(allowed.begin(), allowed.end(), q.algorithm) == allowed.end()) {
    std::string list;
    for (const Algorithm a : allowed) list += std::string(list.empty() ? "" : ", ") + algorithm_name(a);
    throw std::invalid_argument(std::string(algorithm_name(q.algorithm)) + " does not apply to " + op_name(q.op) +
                                ": it runs with " + list + " or auto");
  }
  const auto n = static_cast<std::uint32_t>(q.ranks.size());
  Plan p;
  p.op = q.op;
  p.ranks = q.ranks;
  p.root = q.root;
  p.rings = rings_of(topo, q.ranks);
  p.cols = q.cols;
  auto best_flat = [&](const std::vector<Rank>& ranks, std::uint64_t bytes, Op op, std::uint32_t piece_rows) {
    Plan f = p;
    f.piece_rows = piece_rows;
    f.ranks = ranks;
    f.op = op;
    f.rings = rings_of(topo, ranks);
    f.root = 0;
    Algorithm best = Algorithm::Ring;
    double best_cycles = 0;
    for (const Algorithm a : algorithms_of(op)) {
      if (a == Algorithm::Hierarchical) continue;
      f.algorithm = a;
      const double c = estimate(topo, f, bytes).cycles;
      if (a == Algorithm::Ring || c < best_cycles) {
        best = a;
        best_cycles = c;
      }
    }
    return std::pair{best, f.rings};
  };
  auto with = [&](Algorithm a) {
    Plan c = p;
    c.algorithm = a;
    c.piece_rows = piece_rows_of(topo, n, q.cols, a);
    if (a == Algorithm::Hierarchical) {
      const Hierarchy h = hierarchy_of(q.ranks);
      // A lane takes part in one level at a time: its pieces are as large as the level
      // with the most members allows.
      const auto m = static_cast<std::uint32_t>(h.local.at(0).size());
      std::vector<std::uint32_t> members(m);
      std::iota(members.begin(), members.end(), 0u);
      const SipLevels lv = sip_levels(h.local[0], members, topo.mesh());
      std::size_t widest = std::max<std::size_t>(lv.two_level() ? lv.cubes[0].size() : m, h.across.at(0).size());
      if (lv.two_level())
        for (const auto& groups : lv.mesh) widest = std::max(widest, groups[0].size());
      // Levels inside a SIP are rings; with one rank a SIP the step across is all there is,
      // and its algorithm sizes the pieces.
      const auto levels = static_cast<std::uint32_t>(widest);
      c.piece_rows = piece_rows_of(topo, levels, q.cols, m > 1 ? Algorithm::Ring : Algorithm::TwoShot);
      const std::uint64_t across_bytes = q.op == Op::AllReduce ? q.bytes / m : q.bytes;
      std::tie(c.across, c.across_rings) = best_flat(h.across.at(0), across_bytes, q.op, c.piece_rows);
      if (m == 1) c.piece_rows = piece_rows_of(topo, levels, q.cols, c.across);
    }
    return c;
  };
  if (q.algorithm != Algorithm::Auto) return with(q.algorithm);
  Plan best;
  double best_cycles = 0;
  bool first = true;
  for (const Algorithm a : allowed) {
    if (a == Algorithm::Hierarchical && one_rank_per_sip(q.ranks)) continue;  // the same as its step across
    Plan c;
    try {
      c = with(a);
    } catch (const std::invalid_argument&) {
      continue;  // ranks this algorithm cannot group
    }
    const double cycles = estimate(topo, c, q.bytes).cycles;
    if (first || cycles < best_cycles) {
      best = std::move(c);
      best_cycles = cycles;
      first = false;
    }
  }
  return best;
}

}  // namespace kb::collectives
