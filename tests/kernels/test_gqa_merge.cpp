// The merge of two online-softmax states (kernels/gqa): from tl ops (merge_into, the
// default) and as one sequence (merge_state, fused), both against the fp64 merge; their
// timing on the MATH engine; who waits for the message.
#include <gtest/gtest.h>

#include <limits>

#include "kernels/gqa/helpers.h"
#include "tests/kernels/tl_support.h"

namespace kb {
namespace {

using test::Machine;

const PeCoord kPe{SipId(0), CubeId(1), PeId(1)};

std::uint64_t issue(const Topology& t, const char* op) { return t.pe.cpu.issue_cycles.at(op); }

class MergeNumerics : public ::testing::TestWithParam<gqa::Variant> {};

// With an empty row on one side and on both: m = -inf contributes nothing and never
// makes a NaN.
TEST_P(MergeNumerics, IsTheOnlineSoftmaxMerge) {
  Machine m;
  const std::int64_t rows = 5, d = 9, w = d + 2;  // [O | l | m]
  HostTensor a = test::random_host({rows, w}, 21), b = test::random_host({rows, w}, 22);
  for (std::int64_t r = 0; r < rows; ++r) {
    a.data[r * w + d] = std::abs(a.data[r * w + d]) + 0.5f;  // l > 0
    b.data[r * w + d] = std::abs(b.data[r * w + d]) + 0.5f;
  }
  const float inf = std::numeric_limits<float>::infinity();
  a.data[3 * w + d + 1] = -inf;                          // row 3: only b
  a.data[4 * w + d + 1] = b.data[4 * w + d + 1] = -inf;  // row 4: both empty
  for (HostTensor* h : {&a, &b})
    for (std::int64_t r = 0; r < rows; ++r)
      if (h->data[r * w + d + 1] == -inf)
        for (std::int64_t c = 0; c <= d; ++c) h->data[r * w + c] = 0;  // an empty state: O = 0, l = 0
  const DPPolicy on_pe = DPPolicy::replicate(1, 1, kPe.cube.value);
  const DeviceTensor da = m.rt.from_host("a", a, DType::fp32, on_pe), db = m.rt.from_host("b", b, DType::fp32, on_pe);
  const DeviceTensor out = m.rt.empty("out", {rows, w}, DType::fp32, on_pe);
  const gqa::Variant variant = GetParam();
  m.rt.launch(SipId(0), "merge", test::on_pe(kPe, [&](tl::Ctx& tl) {
    const tl::Tensor x = tl.load(da, {0, rows}), y = tl.load(db, {0, rows});
    if (variant == gqa::Variant::Fused) gqa::merge_state(tl, x, y);
    else gqa::merge_into(tl, x, y);
    tl.store(out, {0, rows}, x);
  }));
  m.rt.run();
  const std::vector<float> got = m.rt.read(out).data;
  for (std::int64_t r = 0; r < rows; ++r) {
    const double ma = a.data[r * w + d + 1], mb = b.data[r * w + d + 1], mx = std::max(ma, mb);
    const double ea = ma == -inf ? 0 : std::exp(ma - mx), eb = mb == -inf ? 0 : std::exp(mb - mx);
    EXPECT_EQ(got[r * w + d + 1], static_cast<float>(mx)) << "m of row " << r;
    for (std::int64_t c = 0; c <= d; ++c) {
      const double want = a.data[r * w + c] * ea + b.data[r * w + c] * eb;
      EXPECT_NEAR(got[r * w + c], want, 1e-6 * (1 + std::abs(want))) << "row " << r << " col " << c;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Forms, MergeNumerics, ::testing::Values(gqa::Variant::Pipelined, gqa::Variant::Fused),
                         [](const auto& info) { return std::string(gqa::variant_name(info.param)); });

TEST(MergeTiming, TheSequenceIsItsStepsOnTheMathEngine) {
  // merge_state on [rows, d + 2]: max, two exp_diff and a copy over a column, two mul
  // and an add over [O | l], one after the other on the MATH engine; one CPU issue.
  Machine m("small_1sip_2x2x2", false);
  const std::uint32_t rows = 3, d = 128;
  m.rt.launch(SipId(0), "merge", test::on_pe(kPe, [&](tl::Ctx& tl) {
    const tl::Tensor a = tl.persistent({rows, d + 2}, DType::fp32, "a");
    const tl::Tensor b = tl.persistent({rows, d + 2}, DType::fp32, "b");
    tl.wait(gqa::merge_state(tl, a, b));
  }));
  m.rt.run();
  const auto& cyc = m.topo.pe.math.cycles;
  const std::uint64_t column = 1, ol = test::ceil_div(rows * (d + 1), m.topo.pe.math.lanes);
  const OpRecord& merge = *m.rt.op_log().select("math", "merge_state").at(0);
  EXPECT_EQ(merge.issue, 2 * issue(m.topo, "alloc") + issue(m.topo, "sequence"));
  EXPECT_EQ(merge.end - merge.issue, column * (cyc.at("max") + 2 * cyc.at("exp") + cyc.at("copy")) +
                                         ol * (2 * cyc.at("mul") + cyc.at("add")));
}

// A merge of a received state on kPe (the sender loads it first), then a fill.
struct Received {
  Machine m{"small_1sip_2x2x2", false};
  static constexpr std::uint32_t rows = 4, d = 128;
  explicit Received(gqa::Variant v) {
    const DeviceTensor a = m.rt.empty("a", {rows, d + 2}, DType::fp32, DPPolicy::replicate(1, 1, 0));
    const PeCoord sender{SipId(0), CubeId(0), PeId(0)};
    m.rt.launch(SipId(0), "merge", [=](tl::Ctx& tl) {
      if (tl.coord() == sender) tl.send(kPe, tl.load(a, {0, rows}), 7);
      if (tl.coord() != kPe) return;
      const tl::Tensor state = tl.persistent({rows, d + 2}, DType::fp32, "state");
      gqa::recv_merge(tl, state, sender, 7, v);
      tl.full({rows, d}, 1.0f);
    });
    m.rt.run();
  }
  const OpRecord& recv() const { return *m.rt.op_log().select("ipcq", "recv").at(0); }
  const OpRecord& after() const { return *m.rt.op_log().select("math", "fill").at(0); }
};

TEST(MergeTiming, TlOpsRunBackToBackOnceTheMessageIsIn) {
  // merge_into's first op waits in the program for the message; from then on the MATH
  // engine runs its ops back to back (the program issues each while the one before
  // runs), but for one gap after maximum: the next op is issued issue(math) cycles after
  // it, and maximum of one column takes fewer.
  const Received r(gqa::Variant::Pipelined);
  const Topology& topo = r.m.topo;
  const auto& cyc = topo.pe.math.cycles;
  const std::uint64_t ol = test::ceil_div(Received::rows * (Received::d + 1), topo.pe.math.lanes);
  const OpRecord& first = *r.m.rt.op_log().select("math", "maximum").at(0);
  const OpRecord& last = *r.m.rt.op_log().select("math", "fma").at(0);
  EXPECT_EQ(first.start, r.recv().end);
  const std::uint64_t busy = cyc.at("max") + 2 * cyc.at("exp") + cyc.at("copy") + ol * (cyc.at("mul") + cyc.at("fma"));
  EXPECT_EQ(last.end - first.start, busy + issue(topo, "math") - cyc.at("max"));
  EXPECT_GT(r.after().issue, r.recv().end) << "the program waits for the message";
}

TEST(MergeTiming, TheSequenceWaitsInTheSchedulerNotInTheProgram) {
  const Received r(gqa::Variant::Fused);
  const OpRecord& merge = *r.m.rt.op_log().select("math", "merge_state").at(0);
  EXPECT_EQ(merge.start, r.recv().end);
  EXPECT_LT(r.after().issue, r.recv().end) << "the program was held by the merge";
}

}  // namespace
}  // namespace kb
