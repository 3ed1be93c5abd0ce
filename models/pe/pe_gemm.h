#pragma once
// PeGemm: an R x C MAC array (bf16 in, fp32 accumulate).
// An m x n x k GEMM takes ceil(m/R) * ceil(n/C) * k + R + C cycles (fill and drain).
// In data mode it computes c (+)= a x b (or a x b^T) on TCM views, in fp32.
#include "models/pe/pe_engine.h"
#include "models/pe/pe_tcm.h"

namespace kb {

class PeGemm : public PeEngine {
 public:
  PeGemm(const sc_core::sc_module_name& name, const Topology& topo, PeTcm& tcm);
  std::uint64_t cycles_for(std::uint64_t m, std::uint64_t n, std::uint64_t k) const;
  // The numerics of one GEMM command (data mode).
  static void compute(PeTcm& tcm, const Command& cmd);

 private:
  void start(tlm::tlm_generic_payload& gp, Command& cmd) override;
  void completed(Command& cmd) override;
  PeTcm& tcm_;
};

}  // namespace kb
