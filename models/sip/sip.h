#pragma once
// One SIP: a mesh_x x mesh_y mesh of CUBEs joined by the CUBE-mesh NOC and, on a
// topology with links, its link interface: a link port at each port cube. Every SIP has
// the same address map of its own HBM and mailboxes. With a host port, a HostBridge lets
// an outside initiator reach every HBM channel (host()). Build it with its dispatch
// domain current (System does), so its events never share a queue with another SIP's.
#include <memory>
#include <vector>

#include "models/cube/cube.h"
#include "models/link/link_port.h"
#include "models/noc/mesh.h"
#include "models/sip/host_bridge.h"

namespace kb {

class Sip : public sc_core::sc_module {
 public:
  Sip(const sc_core::sc_module_name& name, const Topology& topo, SipId id, bool host_port = false);

  SipId id() const { return id_; }
  const AddressMap& address_map() const { return map_; }
  Cube& cube(CubeId c) { return *cubes_.at(c.value); }
  std::size_t cube_count() const { return cubes_.size(); }
  // The host's target socket (HBM region of the address map), and the job controller's;
  // only with a host port.
  AtRouter::TargetSocket& host() { return host_->from_host(); }
  AtRouter::TargetSocket& controller() { return host_->from_controller(); }
  // Its link interface; null on a topology without links.
  LinkInterface* links() { return links_.get(); }

 private:
  SipId id_;
  AddressMap map_;

 public:
  Noc noc;

 private:
  std::vector<std::unique_ptr<Cube>> cubes_;
  std::unique_ptr<HostBridge> host_;
  std::unique_ptr<LinkInterface> links_;
  std::vector<std::unique_ptr<LinkPort>> ports_;
};

}  // namespace kb
