#pragma once
// PeMath: a vector unit of L fp32 lanes. Elementwise op on E elements:
// ceil(E/L) * cost(op) cycles; a row reduction over rows of `width` elements adds
// ceil(log2(width)) cycles per group of L rows. In data mode it computes on TCM views.
#include <array>
#include <optional>

#include "models/pe/pe_engine.h"
#include "models/pe/pe_tcm.h"

namespace kb {

class PeMath : public PeEngine {
 public:
  PeMath(const sc_core::sc_module_name& name, const Topology& topo, PeTcm& tcm);
  std::uint64_t cycles_for(MathOp op, std::uint64_t elements, std::uint32_t reduce_width) const;
  static void compute(PeTcm& tcm, const Command& cmd);

 private:
  void start(tlm::tlm_generic_payload& gp, Command& cmd) override;
  void completed(Command& cmd) override;
  PeTcm& tcm_;
  // Each op's pe.math.cycles cost, looked up by name the first time the op runs (a
  // missing cost is an error then, as before), not at every command.
  mutable std::array<std::optional<std::uint64_t>, kMathOps> op_cycles_;
  std::array<std::size_t, kMathOps> act_of_{};  // the activity each op's lane-ops count as
};

}  // namespace kb
