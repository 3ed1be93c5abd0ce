#pragma once
// The physical address space of one SIP. SIPs exchange no traffic, so every SIP
// uses the same map: [region | cube | pe | offset], field widths derived from the topology.
#include <cstdint>
#include <optional>

#include "base/topology.h"

namespace kb {

struct DecodedAddress {
  enum class Region { Hbm, Mailbox } region;
  std::uint32_t cube;  // row-major cube id in the SIP mesh: y * mesh_x + x
  std::uint32_t pe;    // PE (and HBM channel) index in the cube
  std::uint64_t offset;
};

class AddressMap {
 public:
  explicit AddressMap(const Topology& topo);
  std::uint64_t hbm(std::uint32_t cube, std::uint32_t pe, std::uint64_t offset) const;
  std::uint64_t mailbox(std::uint32_t cube, std::uint32_t pe) const;
  // nullopt when the address lies outside every HBM channel and mailbox.
  std::optional<DecodedAddress> decode(std::uint64_t addr, std::uint64_t length = 1) const;

 private:
  std::uint32_t cubes_, pes_;
  std::uint64_t capacity_;
  unsigned offset_bits_, pe_bits_, cube_bits_;
};

}  // namespace kb
