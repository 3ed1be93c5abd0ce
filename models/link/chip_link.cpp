#include "models/link/chip_link.h"

#include "models/common/clock.h"

namespace kb {

ChipLink::ChipLink(const sc_core::sc_module_name& name, const Topology& topo, const SipLink& ends,
                   const std::string& a_name, const std::string& b_name)
    : sc_core::sc_module(name),
      ends_(ends),
      directions_{Link(std::string(this->name()) + "." + a_name + ">" + b_name, topo.system.links.link, cycle_time(topo)),
                  Link(std::string(this->name()) + "." + b_name + ">" + a_name, topo.system.links.link, cycle_time(topo))},
      names_{Name::intern(a_name + ">" + b_name), Name::intern(b_name + ">" + a_name)} {}

void ChipLink::record_to(Waveform& wave) {
  for (Link& d : directions_) d.record_to(wave);
}

}  // namespace kb
