#pragma once
// The physical address space of one SIP: [region | cube | pe | offset], field widths
// derived from the topology. Every SIP has the same map of its own HBM and mailboxes. A
// mailbox of another SIP (reached over the links, docs/topology.md) has an address of
// its own kind: the top bit set, then the SIP, the port cube where the message leaves
// this SIP's mesh, and the destination cube and PE.
#include <cstdint>
#include <optional>

#include "base/topology.h"

namespace kb {

struct DecodedAddress {
  enum class Region { Hbm, Mailbox, Remote } region;
  std::uint32_t cube;  // row-major cube id in the SIP mesh: y * mesh_x + x
  std::uint32_t pe;    // PE (and HBM channel) index in the cube
  std::uint64_t offset;
  std::uint32_t sip = 0;  // Remote: the destination SIP
  std::uint32_t via = 0;  // Remote: the port cube where it leaves this SIP's mesh
};

class AddressMap {
 public:
  explicit AddressMap(const Topology& topo, SipId sip = SipId(0));
  SipId sip() const { return sip_; }
  std::uint64_t hbm(std::uint32_t cube, std::uint32_t pe, std::uint64_t offset) const;
  std::uint64_t mailbox(std::uint32_t cube, std::uint32_t pe) const;
  // The mailbox of (cube, pe) on SIP `sip`, leaving this SIP's mesh at port cube `via`.
  static std::uint64_t remote_mailbox(std::uint32_t sip, std::uint32_t via, std::uint32_t cube, std::uint32_t pe);
  // nullopt when the address lies outside every HBM channel and mailbox. A remote
  // mailbox of this map's own SIP decodes as its mailbox.
  std::optional<DecodedAddress> decode(std::uint64_t addr, std::uint64_t length = 1) const;

 private:
  SipId sip_;
  std::uint32_t sips_, cubes_, pes_;
  std::uint64_t capacity_;
  unsigned offset_bits_, pe_bits_, cube_bits_;
};

}  // namespace kb
