#pragma once
// tl::Sequence: engine steps that the PE scheduler runs one after the other for one CPU
// issue (docs/tl.md, Sequences). The machine as specified has no such command; a kernel
// that builds one models an optional hardware sequencer, and its gain is measured against
// the same steps issued as ops (BENCHMARKS.md, the sequencer's worth).
//
//   tl::Sequence seq(tl, "my_tile");
//   seq.state(m);                       // running state, updated by this PE's sequences in turn
//   seq.gemm(q, k, s, {.trans_b = true});
//   seq.max(s, m_tile);
//   ...
//   seq.issue();
#include <cstdint>
#include <string>
#include <vector>

#include "kernels/tl/ctx.h"

namespace kb::tl {

class Sequence {
 public:
  // What the program waits for when it issues the sequence.
  enum class Issue : std::uint8_t {
    // As for any op: what still writes the bytes the steps read, and what still reads or
    // writes the bytes they write, except a running state (state()).
    Wait,
    // Nothing: the scheduler holds the sequence until those commands are done and, when
    // an operand is still arriving by a posted receive, its message is in.
    Hold,
  };
  // `kind` names its op-log record.
  Sequence(Ctx& tl, Name kind, Issue issue = Issue::Wait);
  Sequence(const Sequence&) = delete;
  Sequence& operator=(const Sequence&) = delete;

  // Views for the steps, part of the sequence's one issue (they cost no op of their own).
  Tensor rows(const Tensor& t, std::uint32_t begin, std::uint32_t count) const;
  Tensor cols(const Tensor& t, std::uint32_t begin, std::uint32_t count) const;
  Tensor view(const Tensor& t, const Shape& shape) const;
  // A work buffer of the steps in the scratch arena of the enclosing scope.
  Tensor scratch(const Shape& shape, DType dtype, const std::string& name) const;

  // A running state that this PE's sequences update in turn (declared before the steps):
  // the first step that touches it waits in the scheduler until every earlier sequence
  // is done, so the program need not wait for them. It waits only for other writers.
  void state(const Tensor& t);
  // The tensor the op-log record names; its shape is the record's unless a GEMM comes
  // first (then the GEMM's MxNxK, as for a composite).
  void describe(const Tensor& t);

  // Steps, run in the order they are added; operands as for the ops of the same names.
  // gemm: out (+)= a x b (or b^T); b in TCM, or a ref streamed through opts.stage.
  void gemm(const Tensor& a, const Tensor& b, const Tensor& out, const CompositeOpts& opts = {});
  void add(const Tensor& a, const Tensor& b, const Tensor& out);
  void mul(const Tensor& a, const Tensor& b, const Tensor& out);
  void mul(const Tensor& a, float scalar, const Tensor& out);
  void maximum(const Tensor& a, const Tensor& b, const Tensor& out);
  void exp_diff(const Tensor& a, const Tensor& b, const Tensor& out);
  void copy(const Tensor& a, const Tensor& out);
  void max(const Tensor& x, const Tensor& out);  // along each row: out is [rows, 1]
  void sum(const Tensor& x, const Tensor& out);
  void causal_mask(const Tensor& x, std::int64_t q_pos0, std::uint32_t q_period, std::int64_t k_pos0);  // in place

  // Issues it: the CPU pays the `sequence` issue cost once for every step.
  void issue();

 private:
  friend class Ctx;
  struct Operand {
    Tensor t;
    bool written = false, state = false;
  };
  static bool shares_bytes(const Tensor& a, const Tensor& b);
  static bool same_view(const Tensor& a, const Tensor& b);
  void touch(const Tensor& t, bool write);
  void math(MathOp op, const Tensor& a, const Tensor* b, const Tensor& out, float scalar = 0,
            std::uint32_t reduce_width = 0);
  Command& step();  // a new step; the first one to touch a state is serial

  Ctx& tl_;
  Name kind_;
  Issue issue_;
  Command cmd_;
  std::vector<Operand> operands_;  // every tensor a step touches, in first-touch order
  std::vector<Tensor> states_;
  Tensor described_;
  bool state_touched_ = false;
  bool issued_ = false;
};

}  // namespace kb::tl
