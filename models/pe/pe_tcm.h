#pragma once
// PeTcm: the PE's scratchpad (pe.tcm bytes). Storage is allocated only when a run
// moves real data, so a timing-mode run of 512 PEs costs no scratchpad memory.
// The engines read and write it through 2-D views, converting from/to fp32.
#include <cstdint>
#include <memory>
#include <vector>

#include <systemc>

#include "models/pe/command.h"
#include "base/topology.h"

namespace kb {

class PeTcm : public sc_core::sc_module {
 public:
  PeTcm(const sc_core::sc_module_name& name, const Topology& topo);
  std::uint64_t capacity() const { return capacity_; }
  // The byte at `offset`; the caller keeps offset + length within capacity().
  std::uint8_t* data(std::uint64_t offset);

  // A view's elements as fp32, row-major (rows x cols).
  std::vector<float> read(const TcmView& v);
  void write(const TcmView& v, const float* values);

 private:
  std::uint64_t capacity_;
  std::unique_ptr<std::uint8_t[]> bytes_;
};

}  // namespace kb
