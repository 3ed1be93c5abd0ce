#include "models/pe/pe_scheduler.h"

namespace kb {

PeScheduler::PeScheduler(const sc_core::sc_module_name& name) : AtRouter(name) {
  add_target("cpu");
  for (std::size_t e = 0; e < kEngineKinds; ++e)
    add_initiator(engine_name(static_cast<EngineKind>(e)));
}

std::optional<AtRouter::Hop> PeScheduler::route(const tlm::tlm_generic_payload& gp, std::size_t) {
  Hop hop;
  hop.out = static_cast<std::size_t>(CommandExtension::of(gp).engine());
  return hop;
}

}  // namespace kb
