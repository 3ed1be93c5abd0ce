#include "models/cube/cube_fabric.h"
#include "models/common/clock.h"

namespace kb {

CubeFabric::CubeFabric(const sc_core::sc_module_name& name, const Topology& topo,
                       const AddressMap& map, CubeId cube, bool host_port)
    : AtRouter(name, Cause::Fabric), map_(map), cube_(cube), pes_(topo.cube.pes) {
  const std::string base = this->name();
  for (std::uint32_t p = 0; p < pes_; ++p) add_target("dma" + std::to_string(p));
  for (std::uint32_t p = 0; p < pes_; ++p) add_target("ipcq" + std::to_string(p));
  add_target("noc_in");
  if (host_port) add_target("host");
  for (std::uint32_t p = 0; p < pes_; ++p) add_initiator("hbm" + std::to_string(p));
  for (std::uint32_t p = 0; p < pes_; ++p) add_initiator("mailbox" + std::to_string(p));
  add_initiator("noc_out");
  pe_tx_.reserve(pes_);
  pe_rx_.reserve(pes_);
  ch_tx_.reserve(pes_);
  ch_rx_.reserve(pes_);
  for (std::uint32_t p = 0; p < pes_; ++p) {
    const std::string n = std::to_string(p);
    pe_tx_.emplace_back(base + ".pe" + n + ".tx", topo.cube.fabric, cycle_time(topo));
    pe_rx_.emplace_back(base + ".pe" + n + ".rx", topo.cube.fabric, cycle_time(topo));
    ch_tx_.emplace_back(base + ".hbm" + n + ".tx", topo.cube.fabric, cycle_time(topo));
    ch_rx_.emplace_back(base + ".hbm" + n + ".rx", topo.cube.fabric, cycle_time(topo));
  }
}

void CubeFabric::record_to(Waveform& wave) {
  for (auto* links : {&pe_tx_, &pe_rx_, &ch_tx_, &ch_rx_})
    for (Link& l : *links) l.record_to(wave);
}

void CubeFabric::count_into(ActivityMeter& meter) {
  for (auto* links : {&pe_tx_, &pe_rx_})
    for (Link& l : *links) l.count_into(meter, Act::Fabric);
}

std::optional<AtRouter::Hop> CubeFabric::route(const tlm::tlm_generic_payload& gp,
                                               std::size_t in) {
  const auto dst = map_.decode(gp.get_address(), gp.get_data_length());
  if (!dst) return std::nullopt;
  const bool to_hbm = dst->region == DecodedAddress::Region::Hbm;
  Hop hop;
  if (in == 2 * pes_ + 1) {  // the host: this cube's HBM only
    if (!to_hbm || dst->cube != cube_.value) return std::nullopt;
    hop.out = dst->pe;
    hop.request_links = {&ch_rx_[dst->pe]};
    hop.response_links = {&ch_tx_[dst->pe]};
    hop.request_delay = ch_rx_[dst->pe].latency() + ch_rx_[dst->pe].serialisation(request_bytes(gp));
    hop.response_delay = ch_tx_[dst->pe].latency() + ch_tx_[dst->pe].serialisation(response_bytes(gp));
    return hop;
  }
  if (dst->cube != cube_.value || dst->region == DecodedAddress::Region::Remote) {
    if (in == 2 * pes_) return std::nullopt;  // the NOC delivered to the wrong cube
    hop.out = 2 * pes_;
    return hop;
  }
  hop.out = (to_hbm ? 0 : pes_) + dst->pe;
  if (in == 2 * pes_) return hop;  // from the NOC: straight to the endpoint
  const std::uint32_t src = static_cast<std::uint32_t>(in % pes_);
  if (to_hbm && dst->pe == src) return hop;  // a PE's own channel: direct
  Link& dst_rx = to_hbm ? ch_rx_[dst->pe] : pe_rx_[dst->pe];
  Link& dst_tx = to_hbm ? ch_tx_[dst->pe] : pe_tx_[dst->pe];
  hop.request_links = {&pe_tx_[src], &dst_rx};
  hop.response_links = {&dst_tx, &pe_rx_[src]};
  hop.request_delay = dst_rx.latency() + dst_rx.serialisation(request_bytes(gp));
  hop.response_delay = dst_tx.latency() + dst_tx.serialisation(response_bytes(gp));
  return hop;
}

}  // namespace kb
