#include "models/pe/pe_gemm.h"

namespace kb {

PeGemm::PeGemm(const sc_core::sc_module_name& name, const Topology& topo)
    : PeEngine(name, topo, 1) {}

std::uint64_t PeGemm::cycles_for(std::uint64_t m, std::uint64_t n, std::uint64_t k) const {
  const std::uint64_t r = topo_.pe.gemm.rows, c = topo_.pe.gemm.cols;
  return ((m + r - 1) / r) * ((n + c - 1) / c) * k + r + c;
}

void PeGemm::start(tlm::tlm_generic_payload& gp, Command& cmd) {
  finish_after(gp, cycles(cycles_for(cmd.m, cmd.n, cmd.k)));
}

}  // namespace kb
