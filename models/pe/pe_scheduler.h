#pragma once
// PeScheduler: takes commands from PeCpu and queues them to the engine they name.
// Each engine keeps its own FIFO, so commands to different engines run concurrently.
#include "models/common/at_router.h"
#include "models/pe/command.h"

namespace kb {

class PeScheduler : public AtRouter {
 public:
  explicit PeScheduler(const sc_core::sc_module_name& name);
  TargetSocket& cpu() { return target(0); }
  InitiatorSocket& engine(EngineKind e) { return initiator(static_cast<std::size_t>(e)); }

 private:
  std::optional<Hop> route(const tlm::tlm_generic_payload& gp, std::size_t in) override;
};

}  // namespace kb
