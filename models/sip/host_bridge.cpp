#include "models/sip/host_bridge.h"

namespace kb {

HostBridge::HostBridge(const sc_core::sc_module_name& name, const AddressMap& map, std::uint32_t cubes)
    : AtRouter(name, Cause::Fabric), map_(map) {
  add_target("host");
  add_target("controller");
  for (std::uint32_t c = 0; c < cubes; ++c) add_initiator("cube" + std::to_string(c));
}

std::optional<AtRouter::Hop> HostBridge::route(const tlm::tlm_generic_payload& gp, std::size_t) {
  const auto dst = map_.decode(gp.get_address(), gp.get_data_length());
  if (!dst || dst->region != DecodedAddress::Region::Hbm) return std::nullopt;
  Hop hop;
  hop.out = dst->cube;
  return hop;
}

}  // namespace kb
