// tl::Sequence: engine steps the scheduler runs one after the other for one CPU issue;
// a held sequence waits in the scheduler, not the program; a running state orders the
// sequences that update it without the program waiting; errors.
#include <gtest/gtest.h>

#include <array>

#include "kernels/tl/sequence.h"
#include "tests/kernels/tl_support.h"

namespace kb {
namespace {

using test::Machine;

const PeCoord kPe{SipId(0), CubeId(0), PeId(0)};

std::uint64_t issue(const Topology& t, const char* op) { return t.pe.cpu.issue_cycles.at(op); }

std::uint64_t math(const Topology& t, const char* op, std::uint64_t elements, std::uint32_t width = 0) {
  return t.math_cycles(op, elements, width);
}

std::uint64_t gemm(const Topology& t, std::uint64_t m, std::uint64_t n, std::uint64_t k) {
  const std::uint64_t r = t.pe.gemm.rows, c = t.pe.gemm.cols;
  return test::ceil_div(m, r) * test::ceil_div(n, c) * k + r + c;
}

TEST(TlSequence, ItsStepsRunOneAfterAnotherForOneIssue) {
  // A GEMM, then a scale, a row max and an exp_diff on its result: one CPU issue (the
  // `sequence` cost), the steps back to back on their engines, one op-log record that
  // counts the work of its first step's engine.
  Machine m("small_1sip_2x2x2", false);
  const std::uint32_t rows = 32, n = 96, k = 64;
  m.rt.launch(SipId(0), "seq", test::on_pe(kPe, [&](tl::Ctx& tl) {
    const tl::Tensor a = tl.persistent({rows, k}, DType::bf16, "a");
    const tl::Tensor b = tl.persistent({n, k}, DType::bf16, "b");
    const tl::Tensor s = tl.persistent({rows, n}, DType::fp32, "s");
    const tl::Tensor mx = tl.persistent({rows, 1}, DType::fp32, "mx");
    tl::Sequence seq(tl, "tile");
    seq.describe(b);
    tl::CompositeOpts o;
    o.trans_b = true;
    seq.gemm(a, b, s, o);
    seq.mul(s, 0.5f, s);
    seq.max(s, mx);
    seq.exp_diff(s, mx, s);
    seq.issue();
  }));
  m.rt.run();
  const auto& log = m.rt.op_log();
  ASSERT_EQ(log.select("gemm", "tile").size(), 1u);
  const OpRecord& r = *log.select("gemm", "tile").at(0);
  const std::uint64_t e = static_cast<std::uint64_t>(rows) * n;
  EXPECT_EQ(r.issue, 4 * issue(m.topo, "alloc") + issue(m.topo, "sequence"));
  EXPECT_EQ(r.start, r.issue);
  EXPECT_EQ(r.end - r.start, gemm(m.topo, rows, n, k) + math(m.topo, "mul", e) + math(m.topo, "max", e, n) +
                                 math(m.topo, "exp", e));
  EXPECT_EQ(r.flops, 2ull * rows * n * k);  // the GEMM engine's work
  EXPECT_EQ(r.tensor, "b");
  EXPECT_EQ(r.shape, "32x96x64");
  EXPECT_EQ(log.count("mul") + log.count("max") + log.count("exp_diff"), 0u);  // no op of their own
}

TEST(TlSequence, AHeldSequenceWaitsInTheSchedulerNotInTheProgram) {
  // The receiver posts a receive and issues a held sequence on it at once; the scheduler
  // starts the sequence the cycle the message arrives, while the program goes on (its
  // next op is issued before the message is in).
  Machine m("small_1sip_2x2x2", false);
  const std::uint32_t rows = 4, cols = 64;
  const DeviceTensor a = m.rt.empty("a", {rows, cols}, DType::fp32, DPPolicy::replicate(1, 1, 0));
  const PeCoord sender{SipId(0), CubeId(0), PeId(1)};
  m.rt.launch(SipId(0), "held", [&](tl::Ctx& tl) {
    if (tl.coord() == sender) tl.send(kPe, tl.load(a, {0, rows}), 7);
    if (tl.coord() != kPe) return;
    const tl::Tensor state = tl.persistent({rows, cols}, DType::fp32, "state");
    const tl::Tensor got = tl.recv_async(sender, {rows, cols}, DType::fp32, 7);
    tl::Sequence seq(tl, "accumulate", tl::Sequence::Issue::Hold);
    seq.add(state, got, state);
    seq.issue();
    tl.full({rows, cols}, 1.0f);
  });
  m.rt.run();
  const auto& log = m.rt.op_log();
  const OpRecord& recv = *log.select("ipcq", "recv").at(0);
  const OpRecord& seq = *log.select("math", "accumulate").at(0);
  const OpRecord& after = *log.select("math", "fill").at(0);
  EXPECT_LT(seq.issue, recv.end);
  EXPECT_EQ(seq.start, recv.end);
  EXPECT_EQ(seq.end - seq.start, math(m.topo, "add", rows * cols));
  EXPECT_EQ(after.issue, seq.issue + issue(m.topo, "math"));
  EXPECT_LT(after.end, recv.end) << "the program was held by the sequence";
}

// Two sequences, each a GEMM into a buffer of its own (or, with `shared`, the same one)
// and then an update of one state, declared as such or not: their records.
struct TwoSequences {
  Machine m{"small_1sip_2x2x2", false};
  static constexpr std::uint32_t rows = 64, n = 128, k = 128;
  std::vector<const OpRecord*> steps;
  TwoSequences(bool declare_state, bool shared) {
    m.rt.launch(SipId(0), "state", test::on_pe(kPe, [=](tl::Ctx& tl) {
      const tl::Tensor a = tl.persistent({rows, k}, DType::bf16, "a");
      const tl::Tensor b = tl.persistent({k, n}, DType::bf16, "b");
      const tl::Tensor state = tl.persistent({rows, n}, DType::fp32, "state");
      const std::array<tl::Tensor, 2> c = {tl.persistent({rows, n}, DType::fp32, "c0"),
                                           tl.persistent({rows, n}, DType::fp32, "c1")};
      for (std::size_t i = 0; i < 2; ++i) {
        tl::Sequence seq(tl, "step");
        if (declare_state) seq.state(state);
        seq.gemm(a, b, c[shared ? 0 : i]);
        seq.add(state, c[shared ? 0 : i], state);
        seq.issue();
      }
    }));
    m.rt.run();
    steps = m.rt.op_log().select("gemm", "step");
  }
};

TEST(TlSequence, ARunningStateOrdersTheSequencesNotTheProgram) {
  // The program issues the second without waiting for the first; in the scheduler the
  // second's GEMM follows the first's on the GEMM engine and its update (the first step
  // that touches the state) waits for the first sequence to end.
  const TwoSequences t(true, false);
  ASSERT_EQ(t.steps.size(), 2u);
  const std::uint64_t g = gemm(t.m.topo, t.rows, t.n, t.k), add = math(t.m.topo, "add", t.rows * t.n);
  EXPECT_EQ(t.steps[1]->issue, t.steps[0]->issue + issue(t.m.topo, "sequence"));
  EXPECT_LT(t.steps[1]->issue, t.steps[0]->end);
  EXPECT_EQ(t.steps[0]->end, t.steps[0]->start + g + add);
  EXPECT_EQ(t.steps[1]->end, t.steps[0]->start + 2 * g + add);
}

TEST(TlSequence, WithoutAStateTheProgramWaitsForWhatTheStepsWrite) {
  // The state undeclared, the second sequence writes what the first writes: the program
  // issues it once the first is done.
  const TwoSequences t(false, true);
  ASSERT_EQ(t.steps.size(), 2u);
  EXPECT_EQ(t.steps[1]->issue, t.steps[0]->end);
}

}  // namespace
}  // namespace kb
