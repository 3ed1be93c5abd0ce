#include "platform/utilisation.h"

#include <algorithm>
#include <cstdio>

#include "models/common/clock.h"
#include "models/link/chip_link.h"

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
  for (const auto& link : system.links())
    for (const bool forward : {true, false}) {
      const Link& d = link->direction(forward);
      if (d.transfers() == 0) continue;
      u.links.push_back({link->direction_name(forward).str(), d.transfers(), d.bytes(),
                         static_cast<std::uint64_t>(d.busy() / cycle + 0.5)});
    }
  sort_links(u.links);
  return u;
}

void sort_links(std::vector<LinkUse>& links) {
  auto key = [](const LinkUse& l) {
    unsigned from = 0, to = ~0u;  // the switch after every SIP
    std::sscanf(l.name.c_str(), "sip%u>sip%u", &from, &to);
    return std::pair{from, to};
  };
  std::stable_sort(links.begin(), links.end(), [&](const LinkUse& a, const LinkUse& b) { return key(a) < key(b); });
}

}  // namespace kb
