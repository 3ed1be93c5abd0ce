#pragma once
// The CUBE-mesh NOC of one SIP: a router per cube, neighbours joined both ways.
#include <memory>
#include <vector>

#include "models/noc/noc_router.h"

namespace kb {

class Noc : public sc_core::sc_module {
 public:
  Noc(const sc_core::sc_module_name& name, const Topology& topo, const AddressMap& map);

  NocRouter& router(CubeId c) { return *routers_.at(c.value); }
  const NocRouter& router(CubeId c) const { return *routers_.at(c.value); }
  std::size_t size() const { return routers_.size(); }

  // The mesh links the XY path from src to dst (Mesh::xy_path) holds, in order.
  std::vector<const Link*> xy_links(CubeId src, CubeId dst) const;

 private:
  Mesh mesh_;
  std::vector<std::unique_ptr<NocRouter>> routers_;
};

}  // namespace kb
