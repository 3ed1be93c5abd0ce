#include "models/pe/pe_math.h"

namespace kb {

PeMath::PeMath(const sc_core::sc_module_name& name, const Topology& topo)
    : PeEngine(name, topo, 1) {}

std::uint64_t PeMath::cycles_for(const std::string& op, std::uint64_t elements,
                                 std::uint32_t reduce_width) const {
  const auto it = topo_.pe.math.cycles.find(op);
  if (it == topo_.pe.math.cycles.end())
    SC_REPORT_FATAL(name(), ("unknown math op '" + op + "'").c_str());
  const std::uint64_t lanes = topo_.pe.math.lanes;
  std::uint64_t cycles = (elements + lanes - 1) / lanes * it->second;
  if (reduce_width > 0) {
    std::uint64_t depth = 0;
    while ((1ull << depth) < reduce_width) ++depth;
    const std::uint64_t rows = (elements + reduce_width - 1) / reduce_width;
    cycles += (rows + lanes - 1) / lanes * depth;
  }
  return cycles;
}

void PeMath::start(tlm::tlm_generic_payload& gp, Command& cmd) {
  finish_after(gp, cycles(cycles_for(cmd.op, cmd.elements, cmd.reduce_width)));
}

}  // namespace kb
