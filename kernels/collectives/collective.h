#pragma once
// Collectives over any group of PEs, as tl kernels: real messages over the fabric, the
// NOC and the links between SIPs, and real MATH reductions (docs/collectives.md).
//
// A group is a list of ranks; a rank is a list of PEs, its lanes, every rank having as
// many. A rank's buffer is the rows of one fp32 tensor that its lanes hold, lane l the
// rows of its own shard. Lane l of every rank runs the collective over its shard with
// lane l of the others, independently of the other lanes: a SIP-wide buffer is reduced
// by all its PEs at once, each over the links with its counterparts on the other SIPs.
// Where an op splits a buffer into n parts (reduce_scatter, all_gather, the chunks of a
// ring), it splits each lane's shard: rank i's part is part i of every lane's rows.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "base/dp_policy.h"
#include "base/ids.h"
#include "kernels/tl/ctx.h"

namespace kb::collectives {

enum class Op { AllReduce, ReduceScatter, AllGather, Broadcast, Reduce };
enum class Algorithm { Ring, Tree, OneShot, TwoShot, Hierarchical, Auto };

const char* op_name(Op op);
const char* algorithm_name(Algorithm a);
std::optional<Op> parse_op(const std::string& s);
std::optional<Algorithm> parse_algorithm(const std::string& s);
// The algorithms an op runs with (Auto excluded), in the order the docs list them.
const std::vector<Algorithm>& algorithms_of(Op op);

// A rank's lanes, in lane order.
using Rank = std::vector<PeCoord>;

// One collective, fully decided: what every PE of the group runs.
struct Plan {
  Op op = Op::AllReduce;
  Algorithm algorithm = Algorithm::Ring;  // never Auto
  std::vector<Rank> ranks;
  std::uint32_t root = 0;  // broadcast and reduce: the rank that sends or gets the result
  // Ring orders (rank indices, each a cycle through every rank): lane l uses ring
  // l % rings, so a SIP's lanes spread over every ring.
  std::vector<std::vector<std::uint32_t>> rings;
  // Hierarchical: the algorithm across SIPs, between ranks of the same place in their SIP.
  Algorithm across = Algorithm::Ring;
  std::vector<std::vector<std::uint32_t>> across_rings;
  std::uint32_t cols = 1;         // fp32 elements per row of the buffer
  std::uint32_t piece_rows = 64;  // rows a message carries at most (the pipelining unit)
  std::uint32_t tag = 1000;       // the first of the tags the collective's messages use
};

// Runs the plan's part of PE tl.coord() (none if it is in no rank) on `buffers`: one fp32
// tensor per SIP of the group, indexed by SIP id, each sharded so that a lane's rows are
// its PE's shard. The result is in place: every rank's buffer (all_reduce), its part
// (reduce_scatter), the whole buffer from every rank's part (all_gather), the root's
// buffer on every rank (broadcast), the sum on the root (reduce).
void run(tl::Ctx& tl, const Plan& plan, const std::vector<DeviceTensor>& buffers);
// The same on a buffer this PE holds in its TCM, `mine` [rows, plan.cols] fp32 (as its
// shard would be): no piece crosses the DMA, which stays free for other streams.
void run_in_tcm(tl::Ctx& tl, const Plan& plan, const tl::Tensor& mine);

// The ranks of the common groupings: one per SIP (its PEs as lanes, cube by cube), one
// per cube of the SIPs (its PEs as lanes), one per PE.
std::vector<Rank> ranks_of_sips(const Topology& topo, const std::vector<SipId>& sips);
std::vector<Rank> ranks_of_cubes(const Topology& topo, const std::vector<SipId>& sips);
std::vector<Rank> ranks_of_pes(const Topology& topo, const std::vector<SipId>& sips);

}  // namespace kb::collectives
