#include "base/address_map.h"

namespace kb {
namespace {
unsigned bits_for(std::uint64_t n) {  // bits to number 0..n-1
  unsigned b = 0;
  while ((1ull << b) < n) ++b;
  return b;
}
// A remote mailbox: bit 63, then 8 bits each of SIP, port cube, cube and PE (a topology
// has at most 64 SIPs, 256 cubes per SIP and 64 PEs per cube).
constexpr std::uint64_t kRemote = 1ull << 63;
constexpr unsigned kField = 8;
constexpr std::uint64_t kFieldMask = (1ull << kField) - 1;
}  // namespace

AddressMap::AddressMap(const Topology& topo, SipId sip)
    : sip_(sip),
      sips_(topo.system.sips),
      cubes_(topo.cubes_per_sip()),
      pes_(topo.cube.pes),
      capacity_(topo.cube.hbm.capacity),
      offset_bits_(bits_for(topo.cube.hbm.capacity)),
      pe_bits_(bits_for(topo.cube.pes)),
      cube_bits_(bits_for(topo.cubes_per_sip())) {}

std::uint64_t AddressMap::hbm(std::uint32_t cube, std::uint32_t pe, std::uint64_t offset) const {
  return ((static_cast<std::uint64_t>(cube) << pe_bits_ | pe) << offset_bits_) | offset;
}

std::uint64_t AddressMap::mailbox(std::uint32_t cube, std::uint32_t pe) const {
  return (1ull << (cube_bits_ + pe_bits_ + offset_bits_)) | hbm(cube, pe, 0);
}

std::uint64_t AddressMap::remote_mailbox(std::uint32_t sip, std::uint32_t via, std::uint32_t cube, std::uint32_t pe) {
  return kRemote | std::uint64_t{sip} << (3 * kField) | std::uint64_t{via} << (2 * kField) |
         std::uint64_t{cube} << kField | pe;
}

std::optional<DecodedAddress> AddressMap::decode(std::uint64_t addr, std::uint64_t length) const {
  if (addr & kRemote) {
    const auto field = [&](unsigned i) { return static_cast<std::uint32_t>(addr >> (i * kField) & kFieldMask); };
    const std::uint32_t sip = field(3), via = field(2), cube = field(1), pe = field(0);
    if ((addr & ~kRemote) >> (4 * kField) != 0 || sip >= sips_ || via >= cubes_ || cube >= cubes_ || pe >= pes_)
      return std::nullopt;
    if (sip == sip_.value) return DecodedAddress{DecodedAddress::Region::Mailbox, cube, pe, 0};
    return DecodedAddress{DecodedAddress::Region::Remote, cube, pe, 0, sip, via};
  }
  const unsigned total = cube_bits_ + pe_bits_ + offset_bits_;
  const std::uint64_t region = addr >> total;
  if (region > 1) return std::nullopt;
  const std::uint64_t offset = addr & ((1ull << offset_bits_) - 1);
  const std::uint64_t pe = (addr >> offset_bits_) & ((1ull << pe_bits_) - 1);
  const std::uint64_t cube = (addr >> (offset_bits_ + pe_bits_)) & ((1ull << cube_bits_) - 1);
  if (cube >= cubes_ || pe >= pes_) return std::nullopt;
  if (region == 0 && (length > capacity_ || offset > capacity_ - length)) return std::nullopt;
  return DecodedAddress{region == 0 ? DecodedAddress::Region::Hbm : DecodedAddress::Region::Mailbox,
                        static_cast<std::uint32_t>(cube), static_cast<std::uint32_t>(pe), offset};
}

}  // namespace kb
