// The neural-network ops of kernels/nn: each in data mode against fp64 on the host, and
// each one's cycles from its MATH commands' formula (and the GEMM's, for linear).
#include <gtest/gtest.h>

#include <cmath>
#include <algorithm>
#include <functional>

#include "kernels/nn/kv_cache.h"
#include "kernels/nn/linear.h"
#include "kernels/nn/norm.h"
#include "kernels/nn/pointwise.h"
#include "kernels/nn/rope.h"
#include "kernels/nn/vocab.h"
#include "tests/kernels/tl_support.h"

namespace kb {
namespace {

using test::Machine;

const PeCoord kPe{SipId(0), CubeId(0), PeId(0)};
constexpr double kEps = 1.0 / (1 << 24);  // fp32's unit roundoff

DPPolicy here() { return DPPolicy::replicate(1, 1, 0); }  // cube 0's PE 0 holds it all

using Inputs = std::vector<HostTensor>;
using Op = std::function<tl::Tensor(tl::Ctx&, const std::vector<tl::Tensor>&)>;

// Ops run in one simulation (SystemC allows one a process): each one's inputs loaded
// whole (fp32) on PE kPe, in data mode, and its result stored.
class OpRun {
 public:
  std::size_t add(const Inputs& inputs, const Shape& out_shape, Op op) {
    Case c{{}, m_.rt.empty("out" + std::to_string(cases_.size()), out_shape, DType::fp32, here()), std::move(op)};
    for (const HostTensor& h : inputs)
      c.in.push_back(m_.rt.from_host("in" + std::to_string(cases_.size()), h, DType::fp32, here()));
    cases_.push_back(std::move(c));
    return cases_.size() - 1;
  }
  void run() {
    m_.rt.launch(SipId(0), "nn", test::on_pe(kPe, [this](tl::Ctx& tl) {
      for (const Case& c : cases_) {
        std::vector<tl::Tensor> t;
        for (const DeviceTensor& d : c.in) t.push_back(tl.load(d, tl.shard_rows(d)));
        tl.store(c.out, tl.shard_rows(c.out), c.op(tl, t));
      }
    }));
    m_.rt.run();
  }
  std::vector<float> result(std::size_t i) const { return m_.rt.read(cases_.at(i).out).data; }

 private:
  struct Case {
    std::vector<DeviceTensor> in;
    DeviceTensor out;
    Op op;
  };
  Machine m_{"small_1sip_2x2x2", true};
  std::vector<Case> cases_;
};

// One op alone.
std::vector<float> run_op(const Inputs& inputs, const Shape& out_shape, const Op& op) {
  OpRun r;
  r.add(inputs, out_shape, op);
  r.run();
  return r.result(0);
}

// The result against the fp64 reference `ref`: within `ulps` units of roundoff of the
// largest reference value.
void expect_close(const std::vector<float>& got, const std::vector<double>& ref, double ulps) {
  ASSERT_EQ(got.size(), ref.size());
  double scale = 0;
  for (const double v : ref) scale = std::max(scale, std::abs(v));
  EXPECT_LE(test::max_abs_diff(got, ref), ulps * kEps * scale) << "largest value " << scale;
}

HostTensor offset(HostTensor h, float by) {
  for (float& v : h.data) v += by;
  return h;
}

TEST(NnNumerics, RmsNormMatchesFp64) {
  const std::uint32_t t = 8, h = 256;
  const HostTensor x = test::random_host({t, h}, 1), w = test::random_host({1, h}, 2);
  // An eps large enough to matter, so that the test sees where it goes.
  const auto got = run_op({x, w}, {t, h}, [](tl::Ctx& tl, const auto& in) { return nn::rms_norm(tl, in[0], in[1], 0.25f); });
  std::vector<double> ref;
  for (std::uint32_t r = 0; r < t; ++r) {
    double ss = 0;
    for (std::uint32_t c = 0; c < h; ++c) ss += double(x.data[r * h + c]) * x.data[r * h + c];
    const double inv = 1 / std::sqrt(ss / h + 0.25);
    for (std::uint32_t c = 0; c < h; ++c) ref.push_back(x.data[r * h + c] * inv * w.data[c]);
  }
  // fp32 sums of h squares: within h units of roundoff, a few more for the rest.
  expect_close(got, ref, h + 8);
}

TEST(NnNumerics, LayerNormMatchesFp64) {
  const std::uint32_t t = 8, h = 256;
  const HostTensor x = offset(test::random_host({t, h}, 3), 3.0f);  // a mean to take away
  const HostTensor w = test::random_host({1, h}, 4), b = test::random_host({1, h}, 5);
  const auto got = run_op({x, w, b}, {t, h},
                          [](tl::Ctx& tl, const auto& in) { return nn::layer_norm(tl, in[0], in[1], in[2], 0.25f); });
  std::vector<double> ref;
  for (std::uint32_t r = 0; r < t; ++r) {
    double mean = 0, var = 0;
    for (std::uint32_t c = 0; c < h; ++c) mean += x.data[r * h + c];
    mean /= h;
    for (std::uint32_t c = 0; c < h; ++c) var += (x.data[r * h + c] - mean) * (x.data[r * h + c] - mean);
    const double inv = 1 / std::sqrt(var / h + 0.25);
    for (std::uint32_t c = 0; c < h; ++c) ref.push_back((x.data[r * h + c] - mean) * inv * w.data[c] + b.data[c]);
  }
  // The mean's fp32 sum is off by up to h units of |x| (about 3 here) before centring.
  expect_close(got, ref, 4 * h);
}

double silu_ref(double x) { return x / (1 + std::exp(-x)); }
double gelu_ref(double x) { return 0.5 * x * (1 + std::tanh(std::sqrt(2 / M_PI) * (x + 0.044715 * x * x * x))); }

TEST(NnNumerics, ActivationsAndTheResidualMatchFp64) {
  const std::uint32_t t = 4, n = 384;
  const HostTensor x = test::random_host({t, n}, 6, 3.0f), y = test::random_host({t, n}, 7, 3.0f);
  auto each = [&](auto f) {
    std::vector<double> ref;
    for (std::size_t i = 0; i < x.data.size(); ++i) ref.push_back(f(double(x.data[i]), double(y.data[i])));
    return ref;
  };
  OpRun run;
  const std::size_t silu = run.add({x}, {t, n}, [](tl::Ctx& tl, const auto& in) { return nn::silu(tl, in[0]); });
  const std::size_t gelu = run.add({x}, {t, n}, [](tl::Ctx& tl, const auto& in) { return nn::gelu(tl, in[0]); });
  const std::size_t swiglu =
      run.add({x, y}, {t, n}, [](tl::Ctx& tl, const auto& in) { return nn::swiglu(tl, in[0], in[1]); });
  const std::size_t geglu =
      run.add({x, y}, {t, n}, [](tl::Ctx& tl, const auto& in) { return nn::geglu(tl, in[0], in[1]); });
  const std::size_t residual =
      run.add({x, y}, {t, n}, [](tl::Ctx& tl, const auto& in) { return nn::residual(tl, in[0], in[1]); });
  run.run();
  // exp's argument carries a few units of roundoff of itself (up to about 20 here), which
  // exp turns into as many units of the result.
  expect_close(run.result(silu), each([](double a, double) { return silu_ref(a); }), 64);
  expect_close(run.result(gelu), each([](double a, double) { return gelu_ref(a); }), 256);
  expect_close(run.result(swiglu), each([](double a, double b) { return silu_ref(a) * b; }), 64);
  expect_close(run.result(geglu), each([](double a, double b) { return gelu_ref(a) * b; }), 256);
  expect_close(run.result(residual), each([](double a, double b) { return a + b; }), 1);
}

TEST(NnNumerics, RopeRotatesEachHeadByItsRowsPosition) {
  const std::uint32_t heads = 2, d = 64;
  const std::vector<std::int64_t> positions = {0, 1, 100, 5000};
  const nn::RopeScaling llama31{8, 1, 4, 8192};
  const HostTensor x = test::random_host({4, heads * d}, 8);
  const nn::RopeTables tables = nn::rope_tables(positions, d, 500000, llama31);
  const auto got = run_op({x, tables.cos, tables.sin}, {4, heads * d}, [&](tl::Ctx& tl, const auto& in) {
    return nn::rope(tl, in[0], in[1], in[2], heads, d);
  });
  const std::vector<double> inv = nn::rope_inv_freq(d, 500000, llama31);
  std::vector<double> ref(x.data.size());
  for (std::size_t r = 0; r < positions.size(); ++r)
    for (std::uint32_t h = 0; h < heads; ++h)
      for (std::uint32_t i = 0; i < d / 2; ++i) {
        const double a = positions[r] * inv[i], x1 = x.data[r * heads * d + h * d + i],
                     x2 = x.data[r * heads * d + h * d + d / 2 + i];
        ref[r * heads * d + h * d + i] = x1 * std::cos(a) - x2 * std::sin(a);
        ref[r * heads * d + h * d + d / 2 + i] = x2 * std::cos(a) + x1 * std::sin(a);
      }
  // The tables are fp32 (a unit of roundoff each), then a product and a fused add.
  expect_close(got, ref, 8);
  EXPECT_EQ(got[0], x.data[0]) << "position 0 is no rotation";
}

TEST(NnNumerics, Llama31ScalingKeepsHighFrequenciesAndDividesLowOnes) {
  const std::uint32_t d = 128;
  const std::vector<double> plain = nn::rope_inv_freq(d, 500000), scaled = nn::rope_inv_freq(d, 500000, {8, 1, 4, 8192});
  std::size_t kept = 0, divided = 0, blended = 0;
  for (std::uint32_t i = 0; i < d / 2; ++i) {
    EXPECT_DOUBLE_EQ(plain[i], std::pow(500000.0, -2.0 * i / d));
    const double wavelen = 2 * M_PI / plain[i];
    if (wavelen < 8192 / 4.0) {
      EXPECT_DOUBLE_EQ(scaled[i], plain[i]) << i;
      ++kept;
    } else if (wavelen > 8192 / 1.0) {
      EXPECT_DOUBLE_EQ(scaled[i], plain[i] / 8) << i;
      ++divided;
    } else {
      EXPECT_LT(scaled[i], plain[i]) << i;
      EXPECT_GT(scaled[i], plain[i] / 8) << i;
      ++blended;
    }
  }
  EXPECT_GT(kept, 0u);
  EXPECT_GT(divided, 0u);
  EXPECT_GT(blended, 0u);
}

TEST(NnNumerics, LinearStreamsNnLinearWeightsAndAddsTheBias) {
  const std::uint32_t t = 4, in = 256, out = 96;
  Machine m("small_1sip_2x2x2", true);
  const HostTensor x = test::as_bf16(test::random_host({t, in}, 9)), w = test::as_bf16(test::random_host({out, in}, 10));
  const HostTensor b = test::random_host({1, out}, 11);
  HostTensor w_t;  // W^T [in, out], as the host lays the weights out for nn::linear
  w_t.shape = {in, out};
  for (std::uint32_t k = 0; k < in; ++k)
    for (std::uint32_t o = 0; o < out; ++o) w_t.data.push_back(w.data[o * in + k]);
  const DeviceTensor dx = m.rt.from_host("x", x, DType::bf16, here()), dw = m.rt.from_host("w_t", w_t, DType::bf16, here());
  const DeviceTensor db = m.rt.from_host("b", b, DType::fp32, here());
  const DeviceTensor dy = m.rt.empty("y", {t, out}, DType::fp32, here());
  m.rt.launch(SipId(0), "linear", test::on_pe(kPe, [&](tl::Ctx& tl) {
    const tl::Tensor bias = tl.load(db, {0, 1});
    tl.store(dy, {0, t}, nn::linear(tl, tl.load(dx, {0, t}), tl.ref(dw, {0, in}), &bias, 32));
  }));
  m.rt.run();
  std::vector<double> ref;
  double worst = 0;  // the largest sum of the products' magnitudes
  for (std::uint32_t r = 0; r < t; ++r)
    for (std::uint32_t o = 0; o < out; ++o) {
      double s = b.data[o], mags = std::abs(b.data[o]);
      for (std::uint32_t k = 0; k < in; ++k) {
        s += double(x.data[r * in + k]) * w.data[o * in + k];
        mags += std::abs(double(x.data[r * in + k]) * w.data[o * in + k]);
      }
      ref.push_back(s);
      worst = std::max(worst, mags);
    }
  // bf16 products are exact in fp32; an fp32 sum of `in` of them, and the bias, is within
  // in + 1 units of roundoff of the sum of their magnitudes.
  EXPECT_LE(test::max_abs_diff(m.rt.read(dy).data, ref), (in + 1) * kEps * worst);
}

// The embedding table split over 2 cubes x 2 PEs (16 rows each): the tokens' rows come
// from this PE's shard and from others', exactly.
TEST(NnNumerics, EmbeddingLoadsTheTokensRows) {
  Machine m("small_1sip_2x2x2", true);
  const HostTensor table = test::random_host({64, 256}, 12);
  const DeviceTensor dt = m.rt.from_host("table", table, DType::fp32, DPPolicy::shard2d(2, 2));
  const std::vector<std::uint64_t> ids = {3, 40, 17, 63, 3};
  const DeviceTensor out = m.rt.empty("out", {5, 256}, DType::fp32, here());
  m.rt.launch(SipId(0), "embed", test::on_pe(kPe, [&](tl::Ctx& tl) { tl.store(out, {0, 5}, nn::embed(tl, dt, ids)); }));
  m.rt.run();
  const HostTensor got = m.rt.read(out);
  for (std::size_t t = 0; t < ids.size(); ++t)
    for (std::size_t c = 0; c < 256; ++c) ASSERT_EQ(got.data[t * 256 + c], table.data[ids[t] * 256 + c]) << t << ", " << c;
}

// A head's new K rows (a column view of the projections) into a bf16 cache sharded over
// two PEs, at rows that run across the shards' boundary: one store per run in a shard.
TEST(NnNumerics, KvAppendWritesTheRowsOfThePageTableInTheCachesDtype) {
  Machine m("small_1sip_2x2x2", true);
  const HostTensor x = test::random_host({4, 128}, 13);
  const DeviceTensor dx = m.rt.from_host("x", x, DType::fp32, here());
  const DeviceTensor cache = m.rt.empty("k_cache", {64, 64}, DType::bf16, DPPolicy::shard2d(1, 2));  // 32 rows a PE
  const std::vector<std::uint64_t> rows = {30, 31, 32, 50};
  m.rt.launch(SipId(0), "append", test::on_pe(kPe, [&](tl::Ctx& tl) {
    nn::kv_append(tl, tl.cols(tl.load(dx, {0, 4}), 64, 64), cache, rows);  // head 1 of 2
  }));
  m.rt.run();
  const HostTensor got = m.rt.read(cache);
  for (std::size_t r = 0; r < 64; ++r) {
    const auto at = std::find(rows.begin(), rows.end(), r);
    for (std::size_t c = 0; c < 64; ++c) {
      const float want = at == rows.end() ? 0.0f : bf16_to_fp32(fp32_to_bf16(x.data[(at - rows.begin()) * 128 + 64 + c]));
      ASSERT_EQ(got.data[r * 64 + c], want) << r << ", " << c;
    }
  }
  const auto stores = m.rt.op_log().select("dma", "store");
  ASSERT_EQ(stores.size(), 3u) << "rows 30-31 in shard 0, 32 and 50 in shard 1 apart";
  EXPECT_EQ(stores[0]->bytes, 2u * 64 * 2);
  EXPECT_EQ(m.rt.op_log().select("math", "cast").size(), 1u);
}

// The LM head on a slice of the vocabulary starting at token 1000: each token's largest
// logit and its id.
TEST(NnNumerics, LmHeadPicksTheLargestLogitsToken) {
  const std::uint32_t t = 3, hidden = 256, vocab = 300;
  Machine m("small_1sip_2x2x2", true);
  const HostTensor x = test::as_bf16(test::random_host({t, hidden}, 14));
  const HostTensor w = test::as_bf16(test::random_host({vocab, hidden}, 15));
  HostTensor w_t;  // the LM head's W^T [hidden, vocab]
  w_t.shape = {hidden, vocab};
  for (std::uint32_t k = 0; k < hidden; ++k)
    for (std::uint32_t v = 0; v < vocab; ++v) w_t.data.push_back(w.data[v * hidden + k]);
  const DeviceTensor dx = m.rt.from_host("x", x, DType::bf16, here()), dw = m.rt.from_host("w_t", w_t, DType::bf16, here());
  const DeviceTensor out = m.rt.empty("pick", {t, 2}, DType::fp32, here());
  m.rt.launch(SipId(0), "lm_head", test::on_pe(kPe, [&](tl::Ctx& tl) {
    tl.store(out, {0, t}, nn::lm_head_pick(tl, tl.load(dx, {0, t}), tl.ref(dw, {0, hidden}), 1000, 64));
  }));
  m.rt.run();
  const HostTensor got = m.rt.read(out);
  for (std::uint32_t r = 0; r < t; ++r) {
    std::vector<double> logits(vocab, 0.0), mags(vocab, 0.0);
    for (std::uint32_t v = 0; v < vocab; ++v)
      for (std::uint32_t k = 0; k < hidden; ++k) {
        logits[v] += double(x.data[r * hidden + k]) * w.data[v * hidden + k];
        mags[v] += std::abs(double(x.data[r * hidden + k]) * w.data[v * hidden + k]);
      }
    const auto best = std::max_element(logits.begin(), logits.end()) - logits.begin();
    std::vector<double> sorted = logits;
    std::sort(sorted.rbegin(), sorted.rend());
    // An fp32 sum of `hidden` exact bf16 products: within hidden units of its magnitudes.
    const double bound = hidden * kEps * mags[best];
    ASSERT_GT(sorted[0] - sorted[1], 2 * bound) << "a clear winner, beyond fp32 roundoff";
    EXPECT_EQ(got.data[r * 2 + 1], 1000.0f + static_cast<float>(best)) << r;
    EXPECT_NEAR(got.data[r * 2], sorted[0], bound) << r;
  }
}

// ---- cycles ----------------------------------------------------------------------------

// One MATH command of an op as the formula sees it: its cost key, elements (and row
// width for a reduce), which earlier commands of the op it waits for (-1 - i: the op's
// input i, as loaded), and the views the program makes before it (a view's issue cost each).
struct MathStep {
  const char* kind;
  const char* cost;
  std::uint64_t elements;
  std::uint32_t reduce_width;
  std::vector<int> after;
  std::uint32_t views = 0;
};

// Runs `op` on inputs of `shapes` loaded on PE kPe in timing mode, and holds its MATH
// commands to the formula: each takes ceil(elements / lanes) x its cost (plus a reduce's
// tree), the CPU builds it for its issue cycles while the ones before run, it goes out
// when what it reads is done, and the engine takes one at a time.
void expect_math_chain(const std::vector<Shape>& shapes, const Op& op, const std::vector<MathStep>& steps) {
  Machine m("small_1sip_2x2x2", false);
  std::vector<DeviceTensor> in;
  for (const Shape& s : shapes) in.push_back(m.rt.empty("in" + std::to_string(in.size()), s, DType::fp32, here()));
  m.rt.launch(SipId(0), "nn", test::on_pe(kPe, [&](tl::Ctx& tl) {
    std::vector<tl::Tensor> t;
    for (const DeviceTensor& d : in) t.push_back(tl.load(d, tl.shard_rows(d)));
    op(tl, t);
  }));
  m.rt.run();
  const auto& log = m.rt.op_log();
  const auto math = log.select("math");
  ASSERT_EQ(math.size(), steps.size());
  const auto loads = log.select("dma", "load");
  const std::uint64_t issue = m.topo.pe.cpu.issue_cycles.at("math");
  std::uint64_t cpu = math[0]->issue - issue, engine = 0;  // the CPU as it starts the op's first command
  std::vector<std::uint64_t> end;
  for (std::size_t i = 0; i < steps.size(); ++i) {
    const MathStep& s = steps[i];
    std::uint64_t ready = 0;
    for (const int a : s.after) ready = std::max(ready, a < 0 ? loads.at(-1 - a)->end : end.at(a));
    cpu = std::max(cpu + s.views * m.topo.pe.cpu.issue_cycles.at("view") + issue, ready);
    const std::uint64_t start = std::max(cpu, engine);
    engine = start + m.topo.math_cycles(s.cost, s.elements, s.reduce_width);
    end.push_back(engine);
    EXPECT_EQ(math[i]->kind, s.kind) << i;
    EXPECT_EQ(math[i]->issue, cpu) << s.kind << " " << i;
    EXPECT_EQ(math[i]->start, start) << s.kind << " " << i;
    EXPECT_EQ(math[i]->end, engine) << s.kind << " " << i;
  }
  EXPECT_EQ(m.rt.last_run_cycles(), end.back());
}

TEST(NnCycles, RmsNormIsItsEightMathCommands) {
  const std::uint32_t t = 4, h = 1024;
  const std::uint64_t n = t * h;
  expect_math_chain({{t, h}, {1, h}}, [](tl::Ctx& tl, const auto& in) { return nn::rms_norm(tl, in[0], in[1], 1e-5f); },
                    {{"mul", "mul", n, 0, {-1}},         // x^2
                     {"sum", "add", n, h, {0}},          // per row
                     {"scale", "mul", t, 0, {1}},        // / h
                     {"fill", "copy", 1, 0, {}},         // eps
                     {"add", "add", t, 0, {2, 3}},       // + eps
                     {"rsqrt", "rsqrt", t, 0, {4}},
                     {"mul", "mul", n, 0, {5}},          // x * r
                     {"mul", "mul", n, 0, {6, -2}}});    // * w
}

TEST(NnCycles, LayerNormCentresThenScales) {
  const std::uint32_t t = 4, h = 1024;
  const std::uint64_t n = t * h;
  expect_math_chain({{t, h}, {1, h}, {1, h}},
                    [](tl::Ctx& tl, const auto& in) { return nn::layer_norm(tl, in[0], in[1], in[2], 1e-5f); },
                    {{"sum", "add", n, h, {-1}},
                     {"scale", "mul", t, 0, {0}},        // the mean
                     {"sub", "sub", n, 0, {1}},          // centred
                     {"mul", "mul", n, 0, {2}},
                     {"sum", "add", n, h, {3}},
                     {"scale", "mul", t, 0, {4}},        // the variance
                     {"fill", "copy", 1, 0, {}},
                     {"add", "add", t, 0, {5, 6}},
                     {"rsqrt", "rsqrt", t, 0, {7}},
                     {"mul", "mul", n, 0, {8}},
                     {"fma", "fma", n, 0, {9, -2, -3}}});  // * w + b
}

TEST(NnCycles, SwiGluIsASigmoidOfExpAndDivThenTheGate) {
  const std::uint32_t t = 4, h = 2048;
  const std::uint64_t n = t * h;
  expect_math_chain({{t, h}}, [](tl::Ctx& tl, const auto& in) { return nn::swiglu(tl, in[0], in[0]); },
                    {{"scale", "mul", n, 0, {-1}},       // -x
                     {"exp", "exp", n, 0, {0}},
                     {"fill", "copy", 1, 0, {}},         // 1
                     {"add", "add", n, 0, {1, 2}},
                     {"div", "div", n, 0, {3}},          // silu
                     {"mul", "mul", n, 0, {4}}});        // * up
}

TEST(NnCycles, GeluIsItsTanhFormThroughExp) {
  const std::uint32_t t = 4, h = 2048;
  const std::uint64_t n = t * h;
  expect_math_chain({{t, h}}, [](tl::Ctx& tl, const auto& in) { return nn::gelu(tl, in[0]); },
                    {{"mul", "mul", n, 0, {-1}},         // x^2
                     {"fill", "copy", 1, 0, {}},         // 0.044715
                     {"fill", "copy", 1, 0, {}},         // 1
                     {"fma", "fma", n, 0, {0, 1, 2}},    // 0.044715 x^2 + 1
                     {"mul", "mul", n, 0, {-1, 3}},      // x + 0.044715 x^3
                     {"scale", "mul", n, 0, {4}},        // * -2 sqrt(2 / pi)
                     {"exp", "exp", n, 0, {5}},
                     {"fill", "copy", 1, 0, {}},
                     {"add", "add", n, 0, {6, 7}},
                     {"div", "div", n, 0, {-1, 8}}});
}

TEST(NnCycles, TheResidualIsOneAdd) {
  const std::uint32_t t = 4, h = 2048;
  expect_math_chain({{t, h}, {t, h}}, [](tl::Ctx& tl, const auto& in) { return nn::residual(tl, in[0], in[1]); },
                    {{"add", "add", std::uint64_t{t} * h, 0, {-1, -2}}});
}

TEST(NnCycles, RopeIsFourCommandsAHead) {
  const std::uint32_t t = 4, heads = 2, d = 128;
  const std::uint64_t half = t * d / 2;
  std::vector<MathStep> steps = {{"scale", "mul", half, 0, {-3}}};  // -sin
  for (int h = 0; h < static_cast<int>(heads); ++h) {
    const int at = static_cast<int>(steps.size());
    steps.push_back({"mul", "mul", half, 0, {-1, -2}, 4});     // x1 cos, after the head's 4 column views
    steps.push_back({"fma", "fma", half, 0, {-1, 0, at}});     // x2 (-sin) + x1 cos
    steps.push_back({"mul", "mul", half, 0, {-1, -2}});        // x2 cos
    steps.push_back({"fma", "fma", half, 0, {-1, -3, at + 2}});  // x1 sin + x2 cos
  }
  expect_math_chain({{t, heads * d}, {t, d / 2}, {t, d / 2}},
                    [&](tl::Ctx& tl, const auto& in) { return nn::rope(tl, in[0], in[1], in[2], heads, d); }, steps);
}

// A token's row is one load: from this PE's own shard, its HBM latency and the row's bytes
// on the channel; the loads of T tokens follow one another on the channel's wire.
TEST(NnCycles, EmbeddingIsALoadPerToken) {
  Machine m("small_1sip_2x2x2", false);
  const DeviceTensor table = m.rt.empty("table", {64, 256}, DType::fp32, here());
  const std::vector<std::uint64_t> ids = {3, 40, 17, 63};
  m.rt.launch(SipId(0), "embed", test::on_pe(kPe, [&](tl::Ctx& tl) { nn::embed(tl, table, ids); }));
  m.rt.run();
  const auto loads = m.rt.op_log().select("dma", "load");
  ASSERT_EQ(loads.size(), ids.size());
  for (const OpRecord* l : loads) EXPECT_EQ(l->bytes, 256u * 4);
  EXPECT_EQ(loads.back()->end, loads.front()->start + 120 + ids.size() * 1024 / 64);
}

// The append: one cast of the head's [T, d] columns to the cache's dtype, then one store
// of the run of rows: its HBM latency and its bytes on the channel.
TEST(NnCycles, KvAppendIsACastAndAStorePerRun) {
  const std::uint32_t t = 8, d = 128;
  Machine m("small_1sip_2x2x2", false);
  const DeviceTensor x = m.rt.empty("x", {t, 2 * d}, DType::fp32, here());
  const DeviceTensor cache = m.rt.empty("v_cache", {64, d}, DType::bf16, here());
  m.rt.launch(SipId(0), "append", test::on_pe(kPe, [&](tl::Ctx& tl) {
    nn::kv_append(tl, tl.cols(tl.load(x, {0, t}), 0, d), cache, {16, 17, 18, 19, 20, 21, 22, 23});
  }));
  m.rt.run();
  const auto& log = m.rt.op_log();
  const OpRecord& cast = *log.select("math", "cast").at(0);
  EXPECT_EQ(cast.end - cast.start, m.topo.math_cycles("copy", t * d));
  ASSERT_EQ(log.select("dma", "store").size(), 1u);
  const OpRecord& store = *log.select("dma", "store").at(0);
  EXPECT_EQ(store.bytes, std::uint64_t{t} * d * 2);
  EXPECT_EQ(store.start, cast.end) << "it stores what the cast wrote";
  EXPECT_EQ(store.end - store.start, 120 + store.bytes / 64);
}

// The LM head: the composite, then the max and the argmax of each token's logits (a row
// reduce over the slice: `max`'s cost and tree), and the id's offset.
TEST(NnCycles, LmHeadPickIsTheLogitsReducedTwice) {
  const std::uint32_t t = 2, hidden = 256, vocab = 512;
  Machine m("small_1sip_2x2x2", false);
  const DeviceTensor x = m.rt.empty("x", {t, hidden}, DType::bf16, here());
  const DeviceTensor w = m.rt.empty("w_t", {hidden, vocab}, DType::bf16, here());
  m.rt.launch(SipId(0), "lm_head", test::on_pe(kPe, [&](tl::Ctx& tl) {
    nn::lm_head_pick(tl, tl.load(x, {0, t}), tl.ref(w, {0, hidden}), 0, 128);
  }));
  m.rt.run();
  const auto math = m.rt.op_log().select("math");
  ASSERT_EQ(math.size(), 4u);
  const std::vector<std::string> kinds = {"max", "argmax", "fill", "add"};
  for (std::size_t i = 0; i < kinds.size(); ++i) EXPECT_EQ(math[i]->kind, kinds[i]) << i;
  for (std::size_t i = 0; i < 2; ++i)
    EXPECT_EQ(math[i]->end - math[i]->start, m.topo.math_cycles("max", t * vocab, vocab)) << i;
  EXPECT_EQ(math[0]->start, m.rt.op_log().select("gemm", "composite").at(0)->end) << "as the logits are in";
}

// linear is one composite: W^T's rows (input features) stream in tiles of 128 through two
// staging buffers, the DMA of tile j + 1 under the GEMM of tile j, each GEMM adding into
// the output. At one token the GEMV is bound by HBM (a tile's GEMM is shorter than its
// DMA): the weights' bytes at the channel's bandwidth after its latency, then the last
// tile's GEMM. At 64 tokens it is bound by the GEMM: the first tile's DMA, then every
// tile's GEMM.
std::uint64_t linear_cycles(std::uint32_t t) {
  const std::uint32_t in = 1024, out = 512;
  Machine m("small_1sip_2x2x2", false);
  const DeviceTensor x = m.rt.empty("x", {t, in}, DType::bf16, here());
  const DeviceTensor w = m.rt.empty("w_t", {in, out}, DType::bf16, here());
  m.rt.launch(SipId(0), "linear", test::on_pe(kPe, [&](tl::Ctx& tl) {
    const tl::Tensor tx = tl.load(x, {0, t});
    tl.wait(tx);
    nn::linear(tl, tx, tl.ref(w, {0, in}), nullptr, 128);
  }));
  m.rt.run();
  const auto& log = m.rt.op_log();
  EXPECT_EQ(log.select("gemm", "composite").size(), 1u);
  const OpRecord& c = *log.select("gemm", "composite").at(0);
  EXPECT_EQ(c.bytes, std::uint64_t{out} * in * 2) << "every weight streamed once";
  EXPECT_EQ(c.flops, 2ull * t * out * in);
  EXPECT_TRUE(log.select("math").empty());
  return c.end - c.issue;
}

// The small machine: HBM 120 cycles + 64 B/cycle; a GEMM of M x N x K on the 16 x 64
// array takes ceil(M/16) ceil(N/64) K + 16 + 64. A tile: 128 rows of the 512 outputs.
constexpr std::uint64_t kTileBytes = 128 * 512 * 2, kTiles = 1024 / 128;
std::uint64_t gemm_tile(std::uint64_t m) { return (m + 15) / 16 * (512 / 64) * 128 + 16 + 64; }

TEST(NnCycles, LinearAtOneTokenStreamsTheWeightsAtHbmBandwidth) {
  EXPECT_EQ(linear_cycles(1), 120 + kTiles * kTileBytes / 64 + gemm_tile(1));
}

TEST(NnCycles, LinearAtManyTokensIsItsGemms) {
  EXPECT_EQ(linear_cycles(64), 120 + kTileBytes / 64 + kTiles * gemm_tile(64));
}

}  // namespace
}  // namespace kb
