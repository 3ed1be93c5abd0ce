#include "models/pe/pe.h"

namespace kb {

Pe::Pe(const sc_core::sc_module_name& name, const Topology& topo, const AddressMap& map,
       PeCoord self)
    : sc_core::sc_module(name),
      cpu("cpu", self),
      scheduler("scheduler"),
      dma("dma", topo),
      gemm("gemm", topo),
      math("math", topo),
      ipcq("ipcq", topo, map, self),
      tcm("tcm", topo),
      self_(self) {
  cpu.port.bind(scheduler.cpu());
  scheduler.engine(EngineKind::Dma).bind(dma.command);
  scheduler.engine(EngineKind::Gemm).bind(gemm.command);
  scheduler.engine(EngineKind::Math).bind(math.command);
  scheduler.engine(EngineKind::Ipcq).bind(ipcq.command);
}

}  // namespace kb
