#include "base/sip_graph.h"

#include <deque>
#include <string>

#include "base/mesh.h"

namespace kb {

SipGraph::SipGraph(const Topology& topo) : sips_(topo.system.sips) {
  using Kind = Topology::SystemSpec::Links::Kind;
  const auto& l = topo.system.links;
  switch (l.kind) {
    case Kind::None: break;
    case Kind::FullyConnected:
      for (std::uint32_t a = 0; a < sips_; ++a)
        for (std::uint32_t b = a + 1; b < sips_; ++b) links_.push_back({a, b});
      break;
    case Kind::Ring:  // s joins s + 1; two SIPs are joined once
      for (std::uint32_t a = 0; a + 1 < sips_; ++a) links_.push_back({a, a + 1});
      if (sips_ > 2) links_.push_back({0, sips_ - 1});
      break;
    case Kind::Switch:
      if (sips_ > 1)
        for (std::uint32_t a = 0; a < sips_; ++a) links_.push_back({a, kSwitch});
      break;
    case Kind::Pairs:
      for (const auto& [a, b] : l.pairs) links_.push_back({std::min(a, b), std::max(a, b)});
      break;
  }
  // Hops between every two ends, breadth first.
  const std::uint32_t n = sips_ + 1;
  hops_.assign(n, std::vector<std::uint32_t>(n, ~0u));
  for (std::uint32_t s = 0; s < n; ++s) {
    std::deque<std::uint32_t> todo{s};
    hops_[s][s] = 0;
    while (!todo.empty()) {
      const std::uint32_t at = todo.front();
      todo.pop_front();
      for (const SipLink& k : links_)
        for (const auto& [from, to] : {std::pair{index(k.a), index(k.b)}, std::pair{index(k.b), index(k.a)}})
          if (from == at && hops_[s][to] == ~0u) {
            hops_[s][to] = hops_[s][at] + 1;
            todo.push_back(to);
          }
    }
  }
}

std::string SipGraph::link_name(std::uint32_t link) const {
  const SipLink& k = links_.at(link);
  auto end = [](std::uint32_t e) { return e == kSwitch ? std::string("switch") : "sip" + std::to_string(e); };
  return end(k.a) + "-" + end(k.b);
}

std::optional<SipGraph::Step> SipGraph::next(std::uint32_t at, std::uint32_t dst) const {
  const std::uint32_t here = index(at), there = index(dst);
  if (here == there || hops_[here][there] == ~0u) return std::nullopt;
  std::optional<Step> best;
  std::uint32_t best_end = ~0u;
  for (std::uint32_t i = 0; i < links_.size(); ++i) {
    const SipLink& k = links_[i];
    for (const bool forward : {true, false}) {
      const std::uint32_t from = index(forward ? k.a : k.b), to = index(forward ? k.b : k.a);
      if (from != here || hops_[to][there] + 1 != hops_[here][there]) continue;
      if (!best || to < best_end) {
        best = Step{i, forward};
        best_end = to;
      }
    }
  }
  return best;
}

std::uint32_t SipGraph::hops(std::uint32_t src, std::uint32_t dst) const { return hops_[index(src)][index(dst)]; }

std::vector<std::uint32_t> SipGraph::unreachable() const {
  std::vector<std::uint32_t> out;
  for (std::uint32_t s = 1; s < sips_; ++s)
    if (hops_[0][s] == ~0u) out.push_back(s);
  return out;
}

CubeId nearest_port(const Topology& topo, CubeId cube) {
  const Mesh mesh = topo.mesh();
  const auto& ports = topo.system.links.ports;
  CubeId best(ports.at(0));
  for (const std::uint32_t p : ports)
    if (mesh.hops(cube, CubeId(p)) < mesh.hops(cube, best)) best = CubeId(p);
  return best;
}

}  // namespace kb
