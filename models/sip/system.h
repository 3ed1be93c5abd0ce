#pragma once
// The whole machine: N SIPs (devices) elaborated from a topology, each in its own
// dispatch domain, and the links between them (system.links, docs/topology.md).
#include <functional>
#include <memory>
#include <vector>

#include "models/common/waveform.h"
#include "models/sip/sip.h"

namespace kb {

class System : public sc_core::sc_module {
 public:
  // `host_ports`: every SIP gets a host port (Sip::host()), for a virtual platform.
  // `only`: the SIPs built here (empty: all of the topology's). A process of a run split
  // over processes builds the SIPs it simulates; the others, and their ends of the links,
  // are another process's.
  System(const sc_core::sc_module_name& name, const Topology& topo, bool host_ports = false,
         const std::vector<SipId>& only = {});

  const Topology& topology() const { return topo_; }
  Sip& sip(SipId s);  // throws std::out_of_range for one not built here
  bool has(SipId s) const { return s.value < sips_.size() && sips_[s.value] != nullptr; }
  std::vector<SipId> built() const;
  std::size_t sip_count() const { return sips_.size(); }  // the topology's, built here or not
  Pe& pe(const PeCoord& c) { return sip(c.sip).cube(c.cube).pe(c.pe); }
  Hbm& hbm(const PeCoord& c) { return sip(c.sip).cube(c.cube).hbm(c.pe); }

  // The links between SIPs, as the topology's SipGraph numbers them (none without links).
  const SipGraph& sip_graph() const { return graph_; }
  std::vector<std::unique_ptr<ChipLink>>& links() { return links_; }
  // Where a message a link brings goes next: by default the Inbound of SIP `sip` in this
  // simulation. A parallel simulation sends those of SIPs another process simulates away.
  using Courier = LinkInterface::Courier;
  void set_courier(Courier courier) { courier_ = std::move(courier); }
  void deliver_all_here() { courier_ = [this](std::uint32_t to, LinkPacket&& p) { deliver_here(to, std::move(p)); }; }
  void deliver_here(std::uint32_t to, LinkPacket&& p) { sip(SipId(to)).links()->inbound().put(std::move(p)); }

  // Modelled transactions so far: engine commands served plus HBM accesses.
  std::uint64_t transactions();

  // Records into `wave` the signals its filter takes: every engine's busy and queue
  // depth, every NOC link's, fabric port's and HBM channel's busy.
  void record_to(Waveform& wave);
  // Times that traces and activity windows record count from here (the runtime
  // simulates one unit after another).
  void set_time_origin(const sc_core::sc_time& origin) {
    if (wave_ != nullptr) wave_->set_origin(origin);
    clock_.origin = origin;
  }
  // What SIP `s` has done since elaboration (docs/energy.md), counted in windows of at
  // least `window_cycles()` from each unit's start.
  const ActivityMeter& activity(SipId s) const { return *meters_.at(s.value); }
  // Before a run: its activity windows' length, in cycles (1024 unless set).
  void set_activity_window(std::uint64_t cycles) { clock_.window_cycles = cycles; }

  // Visits every PE built here, SIP by SIP, cube by cube.
  void for_each_pe(const std::function<void(Pe&)>& visit);

 private:
  Topology topo_;  // the modules keep references into this copy
  SipGraph graph_;
  std::vector<std::unique_ptr<Sip>> sips_;
  std::vector<std::unique_ptr<ChipLink>> links_;
  Courier courier_;
  Waveform* wave_ = nullptr;
  ActivityClock clock_;
  std::vector<std::unique_ptr<ActivityMeter>> meters_;  // by SIP; null for one not built here
  void count_activity(Sip& sip, ActivityMeter& meter);
};

}  // namespace kb
