#include "models/sip/system.h"

#include <algorithm>
#include <stdexcept>

#include "models/common/clock.h"

namespace kb {

System::System(const sc_core::sc_module_name& name, const Topology& topo, bool host_ports, const std::vector<SipId>& only)
    : sc_core::sc_module(name), topo_(topo), graph_(topo_) {
  sips_.resize(topo_.system.sips);
  for (std::uint32_t s = 0; s < topo_.system.sips; ++s) {
    if (!only.empty() && std::find(only.begin(), only.end(), SipId(s)) == only.end()) continue;
    const DispatchDomain::Scope domain(DispatchDomain::of(s));
    sips_[s] = std::make_unique<Sip>(("sip" + std::to_string(s)).c_str(), topo_, SipId(s), host_ports);
  }
  clock_.cycle = cycle_time(topo_);
  meters_.resize(topo_.system.sips);
  for (std::uint32_t s = 0; s < topo_.system.sips; ++s)
    if (sips_[s]) {
      meters_[s] = std::make_unique<ActivityMeter>(clock_);
      count_activity(*sips_[s], *meters_[s]);
    }
  if (graph_.empty()) return;
  auto end = [](std::uint32_t e) { return e == SipGraph::kSwitch ? std::string("switch") : "sip" + std::to_string(e); };
  std::vector<ChipLink*> links;
  for (const SipLink& k : graph_.links()) {
    links_.push_back(std::make_unique<ChipLink>(("link_" + end(k.a) + "_" + end(k.b)).c_str(), topo_, k, end(k.a), end(k.b)));
    links.push_back(links_.back().get());
  }
  deliver_all_here();
  for (auto& sip : sips_)
    if (sip) sip->links()->join(graph_, links, [this](std::uint32_t to, LinkPacket&& p) { courier_(to, std::move(p)); });
}

Sip& System::sip(SipId s) {
  if (!has(s)) throw std::out_of_range("sip" + std::to_string(s.value) + " is not built in this process");
  return *sips_[s.value];
}

std::vector<SipId> System::built() const {
  std::vector<SipId> out;
  for (std::uint32_t s = 0; s < sips_.size(); ++s)
    if (sips_[s]) out.emplace_back(s);
  return out;
}

void System::for_each_pe(const std::function<void(Pe&)>& visit) {
  for (auto& sip : sips_)
    for (std::size_t c = 0; sip && c < sip->cube_count(); ++c) {
      Cube& cube = sip->cube(CubeId(static_cast<std::uint32_t>(c)));
      for (std::size_t p = 0; p < cube.pe_count(); ++p)
        visit(cube.pe(PeId(static_cast<std::uint32_t>(p))));
    }
}

}  // namespace kb

namespace kb {

void System::record_to(Waveform& wave) {
  wave_ = &wave;
  for (auto& link : links_) link->record_to(wave);
  for (auto& sip : sips_)
    for (std::uint32_t c = 0; sip && c < sip->cube_count(); ++c) {
      Cube& cube = sip->cube(CubeId(c));
      sip->noc.router(CubeId(c)).record_to(wave);
      cube.fabric.record_to(wave);
      for (std::uint32_t p = 0; p < cube.pe_count(); ++p) {
        cube.hbm(PeId(p)).wire().record_to(wave);
        Pe& pe = cube.pe(PeId(p));
        for (PeEngine* e : std::initializer_list<PeEngine*>{&pe.dma, &pe.gemm, &pe.math, &pe.ipcq}) e->record_to(wave);
      }
    }
}

void System::count_activity(Sip& sip, ActivityMeter& meter) {
  if (sip.links() != nullptr) sip.links()->count_into(meter);
  for (std::uint32_t c = 0; c < sip.cube_count(); ++c) {
    Cube& cube = sip.cube(CubeId(c));
    sip.noc.router(CubeId(c)).count_into(meter);
    cube.fabric.count_into(meter);
    for (std::uint32_t p = 0; p < cube.pe_count(); ++p) {
      cube.hbm(PeId(p)).count_into(meter);
      Pe& pe = cube.pe(PeId(p));
      pe.cpu.count_into(meter);
      for (PeEngine* e : std::initializer_list<PeEngine*>{&pe.dma, &pe.gemm, &pe.math, &pe.ipcq})
        e->count_into(meter);
    }
  }
}

std::uint64_t System::transactions() {
  std::uint64_t n = 0;
  for_each_pe([&](Pe& pe) {
    n += pe.dma.commands_done() + pe.gemm.commands_done() + pe.math.commands_done() + pe.ipcq.commands_done();
    n += sip(pe.coord().sip).cube(pe.coord().cube).hbm(pe.coord().pe).wire().transfers();
  });
  return n;
}

}  // namespace kb
