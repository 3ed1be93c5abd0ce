#include "models/pe/pe.h"

#include <initializer_list>

#include "models/common/binding.h"

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
  connect(cpu.port, scheduler.cpu);
  connect(scheduler.dma, dma.command);
  connect(scheduler.gemm, gemm.command);
  connect(scheduler.math, math.command);
  connect(scheduler.ipcq, ipcq.command);
  scheduler.attach(ipcq);
  for (PeEngine* engine : std::initializer_list<PeEngine*>{&dma, &gemm, &math, &ipcq}) scheduler.watch(*engine);
}

}  // namespace kb
