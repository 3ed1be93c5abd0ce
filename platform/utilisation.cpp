#include "platform/utilisation.h"
#include "models/common/clock.h"

namespace kb {

Utilisation utilisation(System& system, std::uint64_t cycles) {
  const sc_core::sc_time cycle = cycle_time(system.topology());
  Utilisation u;
  u.cycles = cycles;
  system.for_each_pe([&](Pe& pe) {
    const std::pair<const char*, const PeEngine*> engines[] = {
        {"dma", &pe.dma}, {"gemm", &pe.gemm}, {"math", &pe.math}, {"ipcq", &pe.ipcq}};
    std::uint64_t served = 0;
    for (const auto& [name, e] : engines) served += e->commands_done();
    if (served == 0) return;
    const PeCoord at = pe.coord();
    const std::string sip = "sip" + std::to_string(at.sip.value);
    const std::string cube = sip + ".cube" + std::to_string(at.cube.value);
    // for_each_pe goes SIP by SIP, cube by cube: a new row starts when the place changes.
    if (u.sips.empty() || u.sips.back().where != sip) u.sips.push_back({sip, 0, {}});
    if (u.cubes.empty() || u.cubes.back().where != cube) u.cubes.push_back({cube, 0, {}});
    for (UseRow* row : {&u.sips.back(), &u.cubes.back()}) {
      ++row->pes;
      for (const auto& [name, e] : engines) {
        EngineUse& sum = row->engines[name];
        sum.ops += e->commands_done();
        sum.busy_cycles += static_cast<std::uint64_t>(e->active() / cycle + 0.5);
        sum.bytes += e->bytes_moved();
        sum.flops += e->flops_done();
      }
    }
  });
  return u;
}

}  // namespace kb
