// A decoder layer's blocks over every PE of two SIPs coupled by their links
// (kernels/nn/mlp.h): each PE's share of the intermediate features, then an all-reduce of
// the partial sums over all of them; every PE ends with the block's output, which fp64
// on the host matches.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <utility>
#include <vector>

#include "kernels/collectives/plan.h"
#include "kernels/nn/mlp.h"
#include "tests/kernels/tl_support.h"

namespace kb {
namespace {

using test::Machine;
constexpr double kEps = 1.0 / (1 << 24);

TEST(NnBlocks, TheMlpBlockOverTwoSipsIsTheHostsFp64) {
  // Two SIPs of 2 x 2 cubes of one PE (a group of 4 cubes is a 2 x 2 rectangle).
  Machine m("tiny_2sip_4x1x1", true, {"sip.mesh.x=2", "sip.mesh.y=2"});
  const Topology& topo = m.topo;
  const std::uint32_t b = 2, h = 256, inter = 512, sips = 2, pes = topo.pes_per_sip();  // 4 PEs a SIP
  const std::uint32_t mine = inter / (sips * pes);                                      // 64 features a PE
  const HostTensor x = test::random_host({b, h}, 21), norm = test::random_host({1, h}, 22);
  const HostTensor gate = test::as_bf16(test::random_host({inter, h}, 23, 0.1f));
  const HostTensor up = test::as_bf16(test::random_host({inter, h}, 24, 0.1f));
  const HostTensor down = test::as_bf16(test::random_host({h, inter}, 25, 0.1f));
  // Per SIP: its features' rows of W_gate and W_up and columns of W_down (transposed),
  // dealt over its PEs; x and the norm on every PE; the all-reduce's buffer.
  auto rows_of = [&](const HostTensor& t, std::uint32_t first, std::uint32_t count) {
    HostTensor out;
    out.shape = {count, t.shape[1]};
    out.data.assign(t.data.begin() + first * t.shape[1], t.data.begin() + (first + count) * t.shape[1]);
    return out;
  };
  // W_down^T [inter, h]: a PE's features' rows; W_gate^T and W_up^T by PE, each PE's
  // block [h, mine] of its features' columns, one after another.
  HostTensor down_t;
  down_t.shape = {inter, h};
  for (std::uint32_t f = 0; f < inter; ++f)
    for (std::uint32_t k = 0; k < h; ++k) down_t.data.push_back(down.data[k * inter + f]);
  auto blocks_of = [&](const HostTensor& w) {  // w [inter, h] -> per PE [h, mine], stacked
    HostTensor out;
    out.shape = {inter / mine * h, mine};
    for (std::uint32_t f0 = 0; f0 < inter; f0 += mine)
      for (std::uint32_t k = 0; k < h; ++k)
        for (std::uint32_t j = 0; j < mine; ++j) out.data.push_back(w.data[(f0 + j) * h + k]);
    return out;
  };
  const HostTensor gate_t = blocks_of(gate), up_t = blocks_of(up);
  HostTensor x_every, norm_every;
  std::vector<DeviceTensor> xs, norms, gates, ups, downs, outs;
  for (std::uint32_t s = 0; s < sips; ++s) {
    const SipId sip(s);
    const DPPolicy every = DPPolicy::replicate(pes, 1), dealt = DPPolicy::shard2d(pes, 1);
    xs.push_back(m.rt.from_host("x", x, DType::fp32, every, sip));
    norms.push_back(m.rt.from_host("norm", norm, DType::fp32, every, sip));
    gates.push_back(m.rt.from_host("gate_t", rows_of(gate_t, s * pes * h, pes * h), DType::bf16, dealt, sip));
    ups.push_back(m.rt.from_host("up_t", rows_of(up_t, s * pes * h, pes * h), DType::bf16, dealt, sip));
    downs.push_back(m.rt.from_host("down_t", rows_of(down_t, s * pes * mine, pes * mine), DType::bf16, dealt, sip));
    outs.push_back(m.rt.empty("y", {pes * b, h}, DType::fp32, dealt, sip));
  }
  collectives::Request q;
  q.ranks = collectives::ranks_of_pes(topo, {SipId(0), SipId(1)});
  q.bytes = std::uint64_t{b} * h * 4;
  q.cols = h;
  const collectives::Plan plan = collectives::make_plan(topo, q);
  for (std::uint32_t s = 0; s < sips; ++s)
    m.rt.launch(SipId(s), "mlp", [&, s](tl::Ctx& tl) {
      nn::MlpShare w;
      w.norm = tl.load(norms[s], tl.shard_rows(norms[s]));
      w.gate_t = tl.ref(gates[s], tl.shard_rows(gates[s]));
      w.up_t = tl.ref(ups[s], tl.shard_rows(ups[s]));
      w.down_t = tl.ref(downs[s], tl.shard_rows(downs[s]));
      const tl::Tensor y = nn::mlp_block(tl, tl.load(xs[s], tl.shard_rows(xs[s])), w, plan);
      tl.store(outs[s], tl.shard_rows(outs[s]), y);
    });
  m.rt.couple_devices();
  m.rt.run();
  // fp64: n = rms_norm(x), y = x + W_down (silu(W_gate n) * W_up n), with n and the
  // activated features rounded to bf16 where the PEs convert them for their GEMMs.
  auto bf16 = [](double v) { return double(bf16_to_fp32(fp32_to_bf16(static_cast<float>(v)))); };
  std::vector<double> ref;
  double scale = 0;
  for (std::uint32_t r = 0; r < b; ++r) {
    double ss = 0;
    for (std::uint32_t k = 0; k < h; ++k) ss += double(x.data[r * h + k]) * x.data[r * h + k];
    std::vector<double> n(h), act(inter);
    for (std::uint32_t k = 0; k < h; ++k) n[k] = bf16(x.data[r * h + k] / std::sqrt(ss / h + 1e-5) * norm.data[k]);
    for (std::uint32_t f = 0; f < inter; ++f) {
      double g = 0, u = 0;
      for (std::uint32_t k = 0; k < h; ++k) g += n[k] * gate.data[f * h + k], u += n[k] * up.data[f * h + k];
      act[f] = bf16(g / (1 + std::exp(-g)) * u);
    }
    for (std::uint32_t k = 0; k < h; ++k) {
      double y = x.data[r * h + k], mags = std::abs(y);
      for (std::uint32_t f = 0; f < inter; ++f) {
        y += act[f] * down.data[k * inter + f];
        mags += std::abs(act[f] * down.data[k * inter + f]);
      }
      ref.push_back(y);
      scale = std::max(scale, mags);
    }
  }
  // Every PE holds the whole output. Past the two conversions (which the reference makes
  // too, and which land on the same bf16 values for these inputs) it is fp32 (bf16 weights
  // are exact in it): the down projection's sum of 512 terms, the all-reduce's 8 partials
  // and the residual, within that many units of roundoff of the terms' magnitudes.
  for (std::uint32_t s = 0; s < sips; ++s) {
    const HostTensor got = m.rt.read(outs[s]);
    for (std::uint32_t p = 0; p < pes; ++p) {
      const std::vector<float> one(got.data.begin() + p * b * h, got.data.begin() + (p + 1) * b * h);
      EXPECT_LE(test::max_abs_diff(one, ref), (inter + 8 + 1) * kEps * scale)
          << "sip " << s << " pe " << p;
    }
  }
  // The partials crossed the links: the all-reduce's messages are in the op log. They
  // were summed in the TCM: the DMA moved x, the norm, the weights and y, nothing else.
  EXPECT_FALSE(m.rt.op_log().select("link").empty());
  for (const OpRecord* r : m.rt.op_log().select("dma"))
    EXPECT_TRUE(r->tensor == "x" || r->tensor == "norm" || r->tensor == "y" || r->tensor.ends_with("_t")) << r->tensor;
}

// Llama-3-8B's MLP at one token on the 128 PEs of one SIP, in timing mode: each PE streams
// its 112 columns of W_gate^T and W_up^T and 112 rows of W_down^T (2.75 MB) from its channel,
// then the all-reduce of the 16 KiB partial sums over the SIP's NOC, in the TCM. Returns the run's
// critical path and the HBM bound: a PE's weight bytes over its channel's bandwidth.
std::pair<CriticalPath, std::uint64_t> llama8b_mlp(const std::vector<std::string>& sets) {
  Machine m("llama70b_4sip", false, sets);
  const Topology& topo = m.topo;
  const std::uint32_t h = 4096, inter = 14336, cubes = topo.cubes_per_sip(), pes = topo.cube.pes;
  const SipId sip(0);
  const DPPolicy every = DPPolicy::replicate(cubes, pes), dealt = DPPolicy::shard2d(cubes, pes);
  const DeviceTensor x = m.rt.empty("x", {1, h}, DType::fp32, every, sip);
  const DeviceTensor norm = m.rt.empty("norm", {1, h}, DType::fp32, every, sip);
  const std::uint32_t mine = inter / (cubes * pes);
  const DeviceTensor gate = m.rt.empty("gate_t", {cubes * pes * h, mine}, DType::bf16, dealt, sip);
  const DeviceTensor up = m.rt.empty("up_t", {cubes * pes * h, mine}, DType::bf16, dealt, sip);
  const DeviceTensor down_t = m.rt.empty("down_t", {inter, h}, DType::bf16, dealt, sip);
  const std::uint32_t cols = 64;  // the all-reduce's rows: 64 of 64 values a PE
  collectives::Request q;
  q.ranks = collectives::ranks_of_pes(topo, {sip});
  q.bytes = std::uint64_t{h} * 4;
  q.cols = cols;
  q.algorithm = collectives::Algorithm::Tree;  // the streaming is the subject: one all-reduce, fixed
  const collectives::Plan plan = collectives::make_plan(topo, q);
  m.rt.launch(sip, "mlp", [&](tl::Ctx& tl) {
    nn::MlpShare w;
    w.norm = tl.load(norm, tl.shard_rows(norm));
    w.gate_t = tl.ref(gate, tl.shard_rows(gate));
    w.up_t = tl.ref(up, tl.shard_rows(up));
    w.down_t = tl.ref(down_t, tl.shard_rows(down_t));
    nn::mlp_block(tl, tl.load(x, tl.shard_rows(x)), w, plan);
  });
  m.rt.run();
  const std::uint64_t bytes = 3ull * mine * h * 2;
  return {m.rt.critical_path(), bytes / topo.cube.hbm.bytes_per_cycle};
}

// A physics probe, at the machine's HBM bandwidth and at half of it: the weights stream
// at the channel's bandwidth, so the critical path's HBM time is the bound (and doubles
// with it), plus the HBM latencies and the small loads of x and the norm (under 7%); the
// all-reduce's messages, summed in the TCM, take the rest, on the NOC.
void expect_weight_streaming(const std::vector<std::string>& sets, std::uint64_t expected_bound) {
  const auto [path, bound] = llama8b_mlp(sets);
  EXPECT_EQ(bound, expected_bound);
  EXPECT_GE(path.of("hbm"), bound);
  EXPECT_LE(path.of("hbm"), bound * 107 / 100);
  EXPECT_EQ(path.cycles.front().first, "hbm") << "weight streaming bounds the block";
  EXPECT_GT(path.of("noc"), 0u) << "the all-reduce";
}

TEST(NnBlocks, TheMlpStreamsItsWeightsAtTheChannelsBandwidth) {
  expect_weight_streaming({}, 3ull * 112 * 4096 * 2 / 64);
}

TEST(NnBlocks, TheMlpAtHalfTheHbmBandwidthTakesTwiceTheStreaming) {
  expect_weight_streaming({"cube.hbm.bandwidth=32B/cycle"}, 3ull * 112 * 4096 * 2 / 32);
}

}  // namespace
}  // namespace kb
