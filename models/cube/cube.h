#pragma once
// One CUBE: P PEs, one HBM channel per PE, and the intra-cube fabric joining them.
// Outward it has the fabric's two NOC sockets, which the Sip binds to its router.
#include <memory>
#include <vector>

#include "models/cube/cube_fabric.h"
#include "models/cube/hbm.h"
#include "models/pe/pe.h"

namespace kb {

class Cube : public sc_core::sc_module {
 public:
  Cube(const sc_core::sc_module_name& name, const Topology& topo, const AddressMap& map,
       SipId sip, CubeId cube, bool host_port = false);

  CubeId id() const { return id_; }
  Pe& pe(PeId p) { return *pes_.at(p.value); }
  Hbm& hbm(PeId p) { return *channels_.at(p.value); }
  std::size_t pe_count() const { return pes_.size(); }

  CubeFabric fabric;

 private:
  CubeId id_;
  std::vector<std::unique_ptr<Hbm>> channels_;
  std::vector<std::unique_ptr<Pe>> pes_;
};

}  // namespace kb
