// The tiled GEMM and row-softmax kernels on all 512 PEs of the default machine:
// numerics against fp64 and DMA/GEMM/MATH overlap in the op log. (Determinism and
// timing mode == data mode: tests/sc_main/test_cli.cpp, across processes.)
#include <gtest/gtest.h>


#include "kernels/examples/examples.h"
#include "platform/utilisation.h"
#include "tests/kernels/tl_support.h"

namespace kb {
namespace {

using test::Machine;

constexpr std::uint32_t kRowsPerPe = 64, kK = 128, kN = 64;

struct GemmRun {
  std::vector<HostTensor> a;
  HostTensor b;
  std::vector<DeviceTensor> da, dc;
};

GemmRun launch_gemm(Machine& m) {
  GemmRun r;
  const std::uint32_t pes = m.topo.pes_per_sip();
  r.b = test::as_bf16(test::random_host({kK, kN}, 100));
  for (std::uint32_t s = 0; s < m.topo.system.sips; ++s) {
    r.a.push_back(test::as_bf16(test::random_host({pes * kRowsPerPe, kK}, 200 + s)));
    const DPPolicy rows = DPPolicy::shard2d(m.topo.cubes_per_sip(), m.topo.cube.pes);
    const DPPolicy every = DPPolicy::replicate(m.topo.cubes_per_sip(), m.topo.cube.pes);
    r.da.push_back(m.rt.from_host("a", r.a.back(), DType::bf16, rows, SipId(s)));
    const DeviceTensor db = m.rt.from_host("b", r.b, DType::bf16, every, SipId(s));
    r.dc.push_back(m.rt.empty("c", {pes * kRowsPerPe, kN}, DType::fp32, rows, SipId(s)));
    m.rt.launch(SipId(s), "tiled_gemm", kernels::tiled_gemm, r.da.back(), db, r.dc.back(), 32u, 48u);
  }
  return r;
}

// Some DMA op of `pe` runs while an op of `engine` runs on it.
bool overlaps(const OpLog& log, const PeCoord& pe, const std::string& engine) {
  for (const auto& [s1, e1] : log.busy(pe, "dma"))
    for (const auto& [s2, e2] : log.busy(pe, engine))
      if (s1 < e2 && s2 < e1) return true;
  return false;
}

TEST(Examples, TiledGemmOnAll512Pes) {
  Machine m("llama70b_4sip", true);
  const GemmRun r = launch_gemm(m);
  m.rt.run();
  for (std::uint32_t s = 0; s < m.topo.system.sips; ++s) {
    const HostTensor c = m.rt.read(r.dc[s]);
    const auto rows = static_cast<std::size_t>(r.a[s].shape[0]);
    double worst = 0;
    for (std::size_t i = 0; i < rows; ++i)
      for (std::size_t j = 0; j < kN; ++j) {
        double ref = 0;
        for (std::size_t l = 0; l < kK; ++l) ref += static_cast<double>(r.a[s].data[i * kK + l]) * r.b.data[l * kN + j];
        worst = std::max(worst, std::abs(ref - c.data[i * kN + j]));
      }
    EXPECT_LT(worst, 1e-3) << "sip " << s;
  }
  const OpLog& log = m.rt.op_log();
  EXPECT_EQ(log.count("composite"), 512u * 2);
  EXPECT_TRUE(overlaps(log, PeCoord{SipId(3), CubeId(15), PeId(7)}, "gemm"));
  EXPECT_EQ(log.bytes("dma", "load"), 512ull * kRowsPerPe * kK * 2);
  EXPECT_EQ(log.bytes("gemm", "composite"), 512ull * 2 * kK * kN * 2);  // B streamed once per row tile
}

TEST(Examples, RowSoftmaxOnAll512Pes) {
  Machine m("llama70b_4sip", true);
  std::vector<HostTensor> xs;
  std::vector<DeviceTensor> ys;
  for (std::uint32_t s = 0; s < m.topo.system.sips; ++s) {
    xs.push_back(test::random_host({m.topo.pes_per_sip() * 48, 96}, 300 + s, 3.0f));
    const DPPolicy rows = DPPolicy::shard2d(m.topo.cubes_per_sip(), m.topo.cube.pes);
    const DeviceTensor x = m.rt.from_host("x", xs.back(), DType::fp32, rows, SipId(s));
    ys.push_back(m.rt.empty("y", xs.back().shape, DType::fp32, rows, SipId(s)));
    m.rt.launch(SipId(s), "row_softmax", kernels::row_softmax, x, ys.back(), 16u);
  }
  m.rt.run();
  for (std::uint32_t s = 0; s < m.topo.system.sips; ++s) {
    const HostTensor y = m.rt.read(ys[s]);
    double worst = 0;
    for (std::size_t i = 0; i < static_cast<std::size_t>(xs[s].shape[0]); ++i) {
      double mx = -1e300, sum = 0;
      for (std::size_t j = 0; j < 96; ++j) mx = std::max(mx, static_cast<double>(xs[s].data[i * 96 + j]));
      for (std::size_t j = 0; j < 96; ++j) sum += std::exp(xs[s].data[i * 96 + j] - mx);
      for (std::size_t j = 0; j < 96; ++j)
        worst = std::max(worst, std::abs(std::exp(xs[s].data[i * 96 + j] - mx) / sum - y.data[i * 96 + j]));
    }
    EXPECT_LT(worst, 1e-6) << "sip " << s;
  }
  EXPECT_TRUE(overlaps(m.rt.op_log(), PeCoord{SipId(1), CubeId(6), PeId(2)}, "math"));
}

}  // namespace
}  // namespace kb

namespace kb {
namespace {

// The report's utilisation table comes from the engines' own counters; for plain ops
// (one engine command each) it equals what the op log says: per cube, the DMA's and the
// MATH engine's busy time (overlapping ops counted once), DMA bytes and MATH flops.
TEST(Examples, UtilisationFromTheEnginesMatchesTheOpLog) {
  Machine m("small_1sip_2x2x2", false);
  const DPPolicy rows = DPPolicy::shard2d(m.topo.cubes_per_sip(), m.topo.cube.pes);
  const Shape shape{m.topo.pes_per_sip() * 48, 96};
  const DeviceTensor x = m.rt.empty("x", shape, DType::fp32, rows, SipId(0));
  m.rt.launch(SipId(0), "row_softmax", kernels::row_softmax, x, m.rt.empty("y", shape, DType::fp32, rows, SipId(0)), 16u);
  m.rt.run();
  const Utilisation u = utilisation(m.sys, m.rt.last_run_cycles());
  EXPECT_EQ(u.cycles, m.rt.last_run_cycles());
  ASSERT_EQ(u.sips.size(), 1u);
  ASSERT_EQ(u.cubes.size(), m.topo.cubes_per_sip());
  const OpLog& log = m.rt.op_log();
  std::uint64_t sip_math = 0;
  for (std::uint32_t c = 0; c < m.topo.cubes_per_sip(); ++c) {
    const UseRow& row = u.cubes[c];
    EXPECT_EQ(row.where, "sip0.cube" + std::to_string(c));
    EXPECT_EQ(row.pes, m.topo.cube.pes);
    std::uint64_t dma_busy = 0, math_busy = 0, dma_bytes = 0, math_flops = 0;
    for (std::uint32_t p = 0; p < m.topo.cube.pes; ++p) {
      const PeCoord pe{SipId(0), CubeId(c), PeId(p)};
      for (const auto& [s, e] : log.busy(pe, "dma")) dma_busy += e - s;
      for (const auto& [s, e] : log.busy(pe, "math")) math_busy += e - s;
    }
    for (const OpRecord& r : log.records()) {
      if (r.pe.cube.value != c) continue;
      if (r.engine == "dma") dma_bytes += r.bytes;
      if (r.engine == "math") math_flops += r.flops;
    }
    ASSERT_GT(math_busy, 0u);
    EXPECT_EQ(row.engines.at("dma").busy_cycles, dma_busy) << row.where;
    EXPECT_EQ(row.engines.at("math").busy_cycles, math_busy) << row.where;
    EXPECT_EQ(row.engines.at("dma").bytes, dma_bytes) << row.where;
    EXPECT_EQ(row.engines.at("math").flops, math_flops) << row.where;
    sip_math += math_busy;
  }
  EXPECT_EQ(u.sips[0].where, "sip0");
  EXPECT_EQ(u.sips[0].engines.at("math").busy_cycles, sip_math);
}

}  // namespace
}  // namespace kb
