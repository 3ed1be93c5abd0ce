#pragma once
// The host's way into a SIP: target sockets taking HBM addresses of the SIP's address
// map (one for a platform's host, one for the SIP's own job controller, which reads job
// descriptors), one initiator socket per cube, bound to that cube fabric's host port.
// It only decodes (no time); the fabric hop holds the channel's port, so this traffic
// contends with the PEs' own. Other addresses answer TLM_ADDRESS_ERROR_RESPONSE.
#include "models/common/at_router.h"
#include "base/ids.h"
#include "base/address_map.h"

namespace kb {

class HostBridge : public AtRouter {
 public:
  HostBridge(const sc_core::sc_module_name& name, const AddressMap& map, std::uint32_t cubes);

  TargetSocket& from_host() { return target(0); }
  TargetSocket& from_controller() { return target(1); }
  InitiatorSocket& to_cube(CubeId c) { return initiator(c.value); }

 private:
  std::optional<Hop> route(const tlm::tlm_generic_payload& gp, std::size_t in) override;

  const AddressMap& map_;
};

}  // namespace kb
