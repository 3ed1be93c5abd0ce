#pragma once
// The intra-cube PE fabric. Each PE's DMA and IPCQ enter it; it leads to the cube's HBM
// channels, the PEs' mailboxes and the cube's NOC router. A PE reaches its own HBM
// channel directly; a transfer to a sibling channel or mailbox holds the source PE's
// port and the destination port for bytes/bandwidth and arrives after the fabric
// latency plus that serialisation (one hop of cube.fabric). Traffic for other cubes
// goes to the NOC, as do messages for other SIPs; traffic from the NOC goes straight to
// its channel or mailbox.
// With a host port, a host (through the SIP's HostBridge) reaches the cube's HBM
// channels, holding each channel's port like a sibling PE would.
#include <vector>

#include "models/common/at_router.h"
#include "base/ids.h"
#include "base/address_map.h"

namespace kb {

class CubeFabric : public AtRouter {
 public:
  CubeFabric(const sc_core::sc_module_name& name, const Topology& topo, const AddressMap& map,
             CubeId cube, bool host_port = false);

  TargetSocket& from_dma(PeId pe) { return target(pe.value); }
  TargetSocket& from_ipcq(PeId pe) { return target(pes_ + pe.value); }
  TargetSocket& from_noc() { return target(2 * pes_); }
  TargetSocket& from_host() { return target(2 * pes_ + 1); }  // only with a host port
  InitiatorSocket& to_hbm(PeId pe) { return initiator(pe.value); }
  InitiatorSocket& to_mailbox(PeId pe) { return initiator(pes_ + pe.value); }
  InitiatorSocket& to_noc() { return initiator(2 * pes_); }

  const Link& pe_tx(PeId pe) const { return pe_tx_[pe.value]; }
  const Link& pe_rx(PeId pe) const { return pe_rx_[pe.value]; }
  // Traces the busy intervals of every port (the PE ports carry IPCQ and sibling DMA).
  void record_to(Waveform& wave);
  // Counts the bytes that cross it into `meter`: at the PE's port, which every crossing
  // holds once each way (a PE's own channel is direct; the NOC's traffic enters at the
  // far end, where the receiving cube counts nothing of it).
  void count_into(ActivityMeter& meter);

 private:
  std::optional<Hop> route(const tlm::tlm_generic_payload& gp, std::size_t in) override;

  const AddressMap& map_;
  CubeId cube_;
  std::uint32_t pes_;
  // Per PE port and per HBM channel port, one link each way.
  std::vector<Link> pe_tx_, pe_rx_, ch_tx_, ch_rx_;
};

}  // namespace kb
