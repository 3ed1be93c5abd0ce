#include "models/pe/pe.h"

namespace kb {

Pe::Pe(const sc_core::sc_module_name& name, const Topology& topo, const AddressMap& map,
       PeCoord self)
    : sc_core::sc_module(name),
      tcm("tcm", topo),
      cpu("cpu", topo, self),
      scheduler("scheduler", tcm),
      dma("dma", topo),
      gemm("gemm", topo, tcm),
      math("math", topo, tcm),
      ipcq("ipcq", topo, map, self),
      self_(self) {
  cpu.port.bind(scheduler.cpu);
  scheduler.dma.bind(dma.command);
  scheduler.gemm.bind(gemm.command);
  scheduler.math.bind(math.command);
  scheduler.ipcq.bind(ipcq.command);
}

}  // namespace kb
