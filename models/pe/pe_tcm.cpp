#include "models/pe/pe_tcm.h"

namespace kb {

PeTcm::PeTcm(const sc_core::sc_module_name& name, const Topology& topo)
    : sc_core::sc_module(name), capacity_(topo.pe.tcm_bytes) {}

std::uint8_t* PeTcm::data(std::uint64_t offset) {
  if (offset >= capacity_) SC_REPORT_FATAL(name(), "TCM offset beyond capacity");
  if (!bytes_) bytes_ = std::make_unique<std::uint8_t[]>(capacity_);
  return bytes_.get() + offset;
}

}  // namespace kb
