#include "models/pe/pe_tcm.h"

namespace kb {

PeTcm::PeTcm(const sc_core::sc_module_name& name, const Topology& topo)
    : sc_core::sc_module(name), capacity_(topo.pe.tcm_bytes) {}

std::uint8_t* PeTcm::data(std::uint64_t offset) {
  if (offset >= capacity_) SC_REPORT_FATAL(name(), "TCM offset beyond capacity");
  if (!bytes_) bytes_ = std::make_unique<std::uint8_t[]>(capacity_);
  return bytes_.get() + offset;
}

std::vector<float> PeTcm::read(const TcmView& v) {
  std::vector<float> out(v.elements());
  const std::size_t esz = dtype_bytes(v.dtype);
  for (std::uint32_t r = 0; r < v.rows; ++r)
    decode(v.dtype, data(v.offset + static_cast<std::uint64_t>(r) * v.stride * esz),
           out.data() + static_cast<std::size_t>(r) * v.cols, v.cols);
  return out;
}

void PeTcm::write(const TcmView& v, const float* values) {
  const std::size_t esz = dtype_bytes(v.dtype);
  for (std::uint32_t r = 0; r < v.rows; ++r)
    encode(v.dtype, values + static_cast<std::size_t>(r) * v.cols,
           data(v.offset + static_cast<std::uint64_t>(r) * v.stride * esz), v.cols);
}

}  // namespace kb
