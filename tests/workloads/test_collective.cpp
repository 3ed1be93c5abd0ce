// The collectives: every op and algorithm gives the host's fp64 result on 2, 3 and 4 SIPs
// and within one SIP; the cost model's closed forms hold where nothing contends; auto
// picks the fastest; the rings use every link; bad requests are refused clearly.
#include <gtest/gtest.h>

#include <tuple>

#include "kernels/collectives/collective.h"
#include "kernels/collectives/plan.h"
#include "tests/kernels/tl_support.h"
#include "workloads/workload.h"

namespace kb::workloads {
namespace {

namespace cl = collectives;

std::vector<SipId> sips(std::uint32_t n) {
  std::vector<SipId> out;
  for (std::uint32_t s = 0; s < n; ++s) out.push_back(SipId(s));
  return out;
}

// Runs the collective workload with these knobs on a fresh machine.
Result run_workload(const std::map<std::string, std::string>& knobs, const std::vector<SipId>& devices, bool data) {
  test::Machine m("llama70b_4sip", data);
  const Workload& w = *find("collective");
  Values v;
  for (const KnobSet* set : w.knobs())
    for (const Knob& k : set->knobs) {
      const auto given = knobs.find(k.field);
      v.set(k.field, given == knobs.end() ? k.fallback : given->second, given != knobs.end());
    }
  const workloads::Setup setup{&m.topo, devices, {}, data};
  const auto job = w.configure(v, setup);
  Result r = job->run(m.rt);
  w.derive(r, m.topo);
  return r;
}

// op, algorithm, ranks, SIPs
using Case = std::tuple<std::string, std::string, std::string, std::uint32_t>;

class DataCheck : public ::testing::TestWithParam<Case> {};

TEST_P(DataCheck, EveryRankHoldsTheHostsFp64Result) {
  const auto& [op, algorithm, ranks, n] = GetParam();
  // 24 KiB per rank: parts and pieces of uneven rows on 3 SIPs, and empty parts in lanes.
  const Result r = run_workload({{"op", op}, {"algorithm", algorithm}, {"ranks", ranks}, {"bytes", "24KiB"},
                                 {"root", n > 1 ? "1" : "3"}, {"check", "true"}},
                                sips(n), true);
  ASSERT_TRUE(r.numerics);
  EXPECT_TRUE(r.numerics->pass) << r.numerics->error << " against " << r.numerics->tolerance;
  EXPECT_GT(r.simulated_cycles, 0u);
  EXPECT_EQ(r.figure("algorithm").get<std::string>(), algorithm);
}

std::vector<Case> cases() {
  std::vector<Case> out;
  for (const cl::Op op : {cl::Op::AllReduce, cl::Op::ReduceScatter, cl::Op::AllGather, cl::Op::Broadcast, cl::Op::Reduce})
    for (const cl::Algorithm a : cl::algorithms_of(op)) {
      for (const std::uint32_t n : {2u, 3u, 4u}) out.emplace_back(cl::op_name(op), cl::algorithm_name(a), "sip", n);
      out.emplace_back(cl::op_name(op), cl::algorithm_name(a), "cube", 1u);  // the 16 cubes of one SIP
    }
  // Every PE its own rank (a tensor-parallel layer's all-reduce): the two levels in each SIP.
  for (const std::uint32_t n : {1u, 2u, 3u}) out.emplace_back("all_reduce", "hierarchical", "pe", n);
  return out;
}

std::string case_name(const ::testing::TestParamInfo<Case>& info) {
  const Case& c = info.param;
  return std::get<0>(c) + "_" + std::get<1>(c) + "_" + std::get<2>(c) + std::to_string(std::get<3>(c));
}

INSTANTIATE_TEST_SUITE_P(Collectives, DataCheck, ::testing::ValuesIn(cases()), case_name);

// One PE of port cube 5 on each SIP, one lane: nothing contends, so the simulated time is
// the closed form (docs/collectives.md) of each algorithm, within 5%.
class ClosedForm : public ::testing::TestWithParam<std::tuple<std::string, std::string>> {};

TEST_P(ClosedForm, SimulatedTimeIsTheAlphaBetaFormWithin5Percent) {
  const auto& [op_name, algorithm_name] = GetParam();
  test::Machine m("llama70b_4sip", false);
  cl::Request q;
  q.op = *cl::parse_op(op_name);
  q.algorithm = *cl::parse_algorithm(algorithm_name);
  for (std::uint32_t s = 0; s < 4; ++s) q.ranks.push_back({PeCoord{SipId(s), CubeId(5), PeId(0)}});
  q.root = 1;
  q.bytes = 8192;
  q.cols = 256;
  const cl::Plan plan = cl::make_plan(m.topo, q);
  const DPPolicy every = DPPolicy::shard2d(m.topo.cubes_per_sip(), m.topo.cube.pes);
  std::vector<DeviceTensor> buffers(4);
  const std::int64_t rows = 8192 / 4 / 256;
  for (std::uint32_t s = 0; s < 4; ++s) {
    buffers[s] = m.rt.empty("buffer", {rows * m.topo.pes_per_sip(), 256}, DType::fp32, every, SipId(s));
    m.rt.launch(SipId(s), "collective", cl::run, plan, buffers);
  }
  m.rt.couple_devices();
  m.rt.run();
  const double simulated = static_cast<double>(m.rt.last_run_cycles());
  const double formula = cl::estimate(m.topo, plan, q.bytes).cycles;
  EXPECT_NEAR(simulated / formula, 1.0, 0.05) << simulated << " simulated, " << formula << " by the closed form";
}

std::vector<std::tuple<std::string, std::string>> closed_form_cases() {
  std::vector<std::tuple<std::string, std::string>> out;
  for (const cl::Op op : {cl::Op::AllReduce, cl::Op::ReduceScatter, cl::Op::AllGather, cl::Op::Broadcast, cl::Op::Reduce})
    for (const cl::Algorithm a : cl::algorithms_of(op)) out.emplace_back(cl::op_name(op), cl::algorithm_name(a));
  return out;
}

INSTANTIATE_TEST_SUITE_P(Collectives, ClosedForm, ::testing::ValuesIn(closed_form_cases()), [](const auto& param) {
  return std::get<0>(param.param) + "_" + std::get<1>(param.param);
});

// On 4 SIPs joined all to all, the ring algorithm uses the 6 directed Hamiltonian cycles:
// each link direction is in exactly 2 of them, so every link carries its share.
TEST(CollectivePlan, RingsOnFourSipsUseEveryLinkDirectionEqually) {
  const Topology topo = test::topology("llama70b_4sip");
  cl::Request q;
  q.ranks = cl::ranks_of_sips(topo, sips(4));
  q.algorithm = cl::Algorithm::Ring;
  q.bytes = 1 << 20;
  const cl::Plan p = cl::make_plan(topo, q);
  ASSERT_EQ(p.rings.size(), 6u);
  std::map<std::pair<std::uint32_t, std::uint32_t>, int> uses;
  for (const auto& ring : p.rings)
    for (std::size_t i = 0; i < ring.size(); ++i) ++uses[{ring[i], ring[(i + 1) % ring.size()]}];
  EXPECT_EQ(uses.size(), 12u);
  for (const auto& [edge, count] : uses) EXPECT_EQ(count, 2) << edge.first << ">" << edge.second;
  // So the ring's bound is every link's bandwidth, 3 x 150 B/cycle of bus bandwidth, less
  // the imbalance of 128 lanes over 6 rings (lane l on ring l % 6: 22 or 21 lanes a ring,
  // a direction carrying two rings' lanes, at most 44 against 128 x 2 / 6 on average).
  EXPECT_NEAR(cl::estimate(topo, p, q.bytes).peak_busbw, 450.0 * (128.0 * 2 / 6) / 44, 1e-9);
  EXPECT_EQ(cl::link_peak_busbw(topo, q.ranks), 450);
}

// A ring of SIPs has one ring and its reverse; the link peak is a SIP's two links.
TEST(CollectivePlan, ARingTopologyGivesTheRingAndItsReverse) {
  const Topology topo = test::topology("llama70b_4sip", {"system.links.topology=ring"});
  cl::Request q;
  q.ranks = cl::ranks_of_sips(topo, sips(4));
  q.algorithm = cl::Algorithm::Ring;
  q.bytes = 1 << 20;
  const cl::Plan p = cl::make_plan(topo, q);
  EXPECT_EQ(p.rings, (std::vector<std::vector<std::uint32_t>>{{0, 1, 2, 3}, {3, 2, 1, 0}}));
  EXPECT_EQ(cl::link_peak_busbw(topo, q.ranks), 300);
}

// auto takes the algorithm the cost model finds fastest: the one-shot exchange for a small
// buffer (one link latency), the direct reduce-scatter and all-gather for a large one on
// SIPs joined all to all (every link, no relaying).
// A SIP's single-PE ranks in levels: each cube's 8, then the cubes around a Hamiltonian
// cycle of the 4 x 4 mesh (every step one hop), each rank's place the same in every cube.
TEST(CollectivePlan, SinglePeRanksGoThroughTheCubeThenAroundTheMesh) {
  const Topology topo = test::topology("llama70b_4sip");
  const std::vector<cl::Rank> ranks = cl::ranks_of_pes(topo, {SipId(0)});
  std::vector<std::uint32_t> members(ranks.size());
  for (std::uint32_t i = 0; i < members.size(); ++i) members[i] = i;
  const cl::SipLevels lv = cl::sip_levels(ranks, members, topo.mesh());
  ASSERT_TRUE(lv.two_level());
  ASSERT_EQ(lv.cubes.size(), 16u);
  for (const auto& cube : lv.cubes) {
    ASSERT_EQ(cube.size(), 8u);
    for (const std::uint32_t r : cube) EXPECT_EQ(ranks[r][0].cube, ranks[cube[0]][0].cube);
  }
  ASSERT_EQ(lv.mesh.size(), 1u);
  const std::vector<std::uint32_t>& ring = lv.mesh[0][0];
  ASSERT_EQ(ring.size(), 16u);
  for (std::size_t i = 0; i < ring.size(); ++i) {
    const CubeId a = ranks[lv.cubes[ring[i]][0]][0].cube, b = ranks[lv.cubes[ring[(i + 1) % ring.size()]][0]][0].cube;
    EXPECT_EQ(topo.mesh().hops(a, b), 1u) << "step " << i;
  }
  // Uneven cubes (a rank missing) fall back to one level.
  members.pop_back();
  EXPECT_FALSE(cl::sip_levels(ranks, members, topo.mesh()).two_level());
}

// A rank a cube, its PEs the lanes (the prefill layer's all-reduce): the SIP's ring goes
// around the mesh's Hamiltonian cycle, so every message of it crosses one mesh link.
TEST(CollectivePlan, ARankACubeGoesRoundTheMeshOneHopAStep) {
  test::Machine m("llama70b_4sip", false);
  const std::vector<cl::Rank> ranks = cl::ranks_of_cubes(m.topo, {SipId(0)});
  std::vector<std::uint32_t> members(ranks.size());
  for (std::uint32_t i = 0; i < members.size(); ++i) members[i] = i;
  const std::vector<std::uint32_t> ring = cl::sip_ring(ranks, members, m.topo.mesh());
  ASSERT_EQ(ring.size(), 16u);
  for (std::size_t i = 0; i < ring.size(); ++i)
    EXPECT_EQ(m.topo.mesh().hops(ranks[ring[i]][0].cube, ranks[ring[(i + 1) % ring.size()]][0].cube), 1u) << "step " << i;
  cl::Request q;
  q.ranks = ranks;
  q.algorithm = cl::Algorithm::Hierarchical;
  q.bytes = 16 * 8 * 64 * 4;
  q.cols = 64;
  const cl::Plan plan = cl::make_plan(m.topo, q);
  m.rt.launch(SipId(0), "all_reduce", [&](tl::Ctx& tl) {
    const tl::Tensor x = tl.full({16, 64}, 1.0f);
    cl::run_in_tcm(tl, plan, x);
    tl.wait(x);
  });
  m.rt.run();
  const auto sends = m.rt.op_log().select("ipcq", "send");
  ASSERT_EQ(sends.size(), 16u * 8 * 2 * 15);  // every lane: 15 steps of reduce-scatter, 15 of all-gather
  for (const auto* r : sends) EXPECT_EQ(r->hops, 1u) << r->pe.str();
}

// Over every PE of 4 SIPs, 32 KiB (a Llama-3-70B layer's partial sums): auto picks the
// two-level hierarchy (simulated: 6,078 cycles, against the tree's 60,983 that it picked
// before the two levels; docs/collectives.md).
TEST(CollectivePlan, AutoPicksTheTwoLevelAllReduceForTensorParallelSums) {
  const Topology topo = test::topology("llama70b_4sip");
  cl::Request q;
  q.ranks = cl::ranks_of_pes(topo, sips(4));
  q.bytes = 32 * 1024;
  q.cols = 64;
  EXPECT_EQ(cl::make_plan(topo, q).algorithm, cl::Algorithm::Hierarchical);
}

TEST(CollectivePlan, AutoPicksByTheCostModel) {
  const Topology topo = test::topology("llama70b_4sip");
  cl::Request q;
  q.ranks = cl::ranks_of_sips(topo, sips(4));
  q.bytes = 16 << 10;
  EXPECT_EQ(cl::make_plan(topo, q).algorithm, cl::Algorithm::OneShot);
  q.bytes = 256 << 20;
  EXPECT_EQ(cl::make_plan(topo, q).algorithm, cl::Algorithm::TwoShot);
  for (const cl::Algorithm a : cl::algorithms_of(q.op)) {
    cl::Request one = q;
    one.algorithm = a;
    EXPECT_LE(cl::estimate(topo, cl::make_plan(topo, q), q.bytes).cycles,
              cl::estimate(topo, cl::make_plan(topo, one), q.bytes).cycles)
        << cl::algorithm_name(a);
  }
}

TEST(CollectivePlan, BadRequestsAreRefusedClearly) {
  const Topology topo = test::topology("llama70b_4sip");
  cl::Request q;
  q.ranks = cl::ranks_of_sips(topo, sips(4));
  q.bytes = 1 << 20;
  q.op = cl::Op::ReduceScatter;
  q.algorithm = cl::Algorithm::Hierarchical;
  try {
    cl::make_plan(topo, q);
    ADD_FAILURE() << "hierarchical reduce_scatter accepted";
  } catch (const std::invalid_argument& e) {
    EXPECT_STREQ(e.what(), "hierarchical does not apply to reduce_scatter: it runs with ring, tree, one_shot, two_shot or auto");
  }
  q.op = cl::Op::Broadcast;
  q.root = 4;
  EXPECT_THROW(cl::make_plan(topo, q), std::invalid_argument);
  // Hierarchical needs as many ranks on each SIP.
  q.root = 0;
  q.algorithm = cl::Algorithm::Hierarchical;
  q.ranks = cl::ranks_of_pes(topo, sips(2));
  q.ranks.pop_back();
  q.op = cl::Op::AllReduce;
  EXPECT_THROW(cl::make_plan(topo, q), std::invalid_argument);
}

}  // namespace
}  // namespace kb::workloads
