#include "base/address_map.h"

namespace kb {
namespace {
unsigned bits_for(std::uint64_t n) {  // bits to number 0..n-1
  unsigned b = 0;
  while ((1ull << b) < n) ++b;
  return b;
}
}  // namespace

AddressMap::AddressMap(const Topology& topo)
    : cubes_(topo.cubes_per_sip()),
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

std::optional<DecodedAddress> AddressMap::decode(std::uint64_t addr, std::uint64_t length) const {
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
