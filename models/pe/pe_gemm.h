#pragma once
// PeGemm: an R x C MAC array (bf16 in, fp32 accumulate).
// An m x n x k GEMM takes ceil(m/R) * ceil(n/C) * k + R + C cycles (fill and drain).
#include "models/pe/pe_engine.h"

namespace kb {

class PeGemm : public PeEngine {
 public:
  PeGemm(const sc_core::sc_module_name& name, const Topology& topo);
  std::uint64_t cycles_for(std::uint64_t m, std::uint64_t n, std::uint64_t k) const;

 private:
  void start(tlm::tlm_generic_payload& gp, Command& cmd) override;
};

}  // namespace kb
