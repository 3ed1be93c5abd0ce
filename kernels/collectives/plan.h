#pragma once
// Deciding a collective: its rings, its pieces, and, for `auto`, its algorithm, from an
// alpha-beta cost model of the modelled machine (docs/collectives.md).
#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include "base/topology.h"
#include "kernels/collectives/collective.h"
#include "kernels/collectives/lane.h"

namespace kb::collectives {

struct Request {
  Op op = Op::AllReduce;
  Algorithm algorithm = Algorithm::Auto;
  std::vector<Rank> ranks;
  std::uint32_t root = 0;
  std::uint64_t bytes = 0;  // a rank's buffer (all_gather: the gathered whole)
  std::uint32_t cols = 1;   // fp32 elements per row of the buffer
};

// What the cost model says of one algorithm for a request, in cycles of pe.clock.
struct Estimate {
  double cycles = 0;     // the estimate: max(bandwidth, lane chain) + HBM in and out
  double bandwidth = 0;  // the busiest link, mesh link or fabric port's bytes / its bandwidth
  double chain = 0;      // one lane's messages, adds and pieces one after another, uncontended
  double hbm = 0;        // the first piece in from HBM and the last one out
  double peak_busbw = 0; // bytes per cycle of bus bandwidth the bandwidth term allows
};

// The tree a broadcast or reduce goes down or up: ring's is a chain, tree's a binary
// tree, one_shot's a star.
Tree tree_of(Algorithm a);

// busbw = algbw x bus_factor (nccl-tests): 2(n-1)/n for all_reduce, (n-1)/n for
// reduce_scatter and all_gather, 1 for broadcast and reduce.
double bus_factor(Op op, std::uint32_t ranks);
// The bus bandwidth the hardware allows a rank, bytes per cycle: a SIP's links out, a
// cube's mesh links out, a PE's port (docs/collectives.md).
double link_peak_busbw(const Topology& topo, const std::vector<Rank>& ranks);

// A SIP's ranks (`members`, indices into `ranks`) in levels, when several share each of
// their cubes alike: the ranks of each cube (cubes in order of first rank), then the
// levels across the cubes, each a list of groups of cube indices in ring order: one group
// of every cube, around a Hamiltonian cycle of the mesh when they fill it (measured: rows
// then columns take more, each level paying its HBM round trips). A hierarchical all-reduce
// goes through each cube's fabric first, then across the cubes on the part each rank
// holds, so a NOC message carries 1 / (ranks a cube) as much.
struct SipLevels {
  std::vector<std::vector<std::uint32_t>> cubes;
  std::vector<std::vector<std::vector<std::uint32_t>>> mesh;
  bool two_level() const { return cubes.size() > 1 && cubes[0].size() > 1; }
};
SipLevels sip_levels(const std::vector<Rank>& ranks, const std::vector<std::uint32_t>& members, const Mesh& mesh);
// The order a SIP's ranks (`members`, by their places among them) go round a one-level
// ring: around the Hamiltonian cycle of the mesh when each rank is a cube and they fill
// it, so that every step is one hop (in rank order, 3 -> 4 and 15 -> 0 cross the mesh and
// share its links), else in rank order.
std::vector<std::uint32_t> sip_ring(const std::vector<Rank>& ranks,
                                    const std::vector<std::uint32_t>& members, const Mesh& mesh);

// The plan for a request: `auto` resolved to the algorithm with the smallest estimate.
// Throws std::invalid_argument for a request the machine cannot run (an algorithm the
// op does not have, ranks of unequal lanes, hierarchical ranks spread unevenly, ...).
Plan make_plan(const Topology& topo, const Request& request);
Estimate estimate(const Topology& topo, const Plan& plan, std::uint64_t bytes);

}  // namespace kb::collectives
