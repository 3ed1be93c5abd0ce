#pragma once
// The links between the SIPs of a topology (system.links, docs/topology.md) as a graph.
// A link joins two ends, each a SIP or the switch, and carries both ways. A message from
// one SIP to another crosses the links of a shortest route, the lowest-numbered next end
// first where several are as short. Every link of a SIP is reached from each of its
// ports (the cubes where its link interface attaches to the mesh): a message leaves at
// the port nearest its source cube and enters at the port nearest its destination cube.
#include <cstdint>
#include <optional>
#include <vector>

#include "base/ids.h"
#include "base/topology.h"

namespace kb {

struct SipLink {
  std::uint32_t a = 0, b = 0;  // the ends: SIP ids, or SipGraph::kSwitch (always b)
};

class SipGraph {
 public:
  static constexpr std::uint32_t kSwitch = ~std::uint32_t{0};

  explicit SipGraph(const Topology& topo);

  const std::vector<SipLink>& links() const { return links_; }
  bool empty() const { return links_.empty(); }
  // "sip0-sip1", "sip2-switch".
  std::string link_name(std::uint32_t link) const;
  // The next step from `at` (a SIP or the switch) toward SIP `dst`: the link, and whether
  // it is crossed from its a end to its b end. None when at == dst or no route exists.
  struct Step {
    std::uint32_t link;
    bool forward;
  };
  std::optional<Step> next(std::uint32_t at, std::uint32_t dst) const;
  // Links crossed from SIP `src` to SIP `dst` (0 for the same SIP; ~0 when unreachable).
  std::uint32_t hops(std::uint32_t src, std::uint32_t dst) const;
  // The SIPs no route reaches from SIP 0.
  std::vector<std::uint32_t> unreachable() const;

 private:
  std::uint32_t index(std::uint32_t end) const { return end == kSwitch ? sips_ : end; }
  std::uint32_t sips_ = 0;
  std::vector<SipLink> links_;
  // hops_[src][dst] over ends (SIPs, then the switch); ~0 when unreachable.
  std::vector<std::vector<std::uint32_t>> hops_;
};

// The port (a cube of system.links.ports) nearest `cube` by mesh hops, the first listed
// of the nearest. Only for a topology with links.
CubeId nearest_port(const Topology& topo, CubeId cube);

}  // namespace kb
