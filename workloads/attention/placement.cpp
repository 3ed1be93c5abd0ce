#include "workloads/attention/placement.h"

#include <algorithm>

#include "workloads/workload.h"

namespace kb::gqa {

std::vector<SipId> run_devices(const std::vector<SipId>& asked, const Topology& topo) {
  if (!asked.empty()) return asked;
  std::vector<SipId> all;
  for (std::uint32_t s = 0; s < topo.system.sips; ++s) all.emplace_back(s);
  return all;
}

std::vector<std::uint32_t> group_sizes(const Topology& topo, bool ring) {
  std::vector<std::uint32_t> out;
  for (std::uint32_t c = topo.cubes_per_sip(); c >= 1; --c) {
    const GroupShape g = group_shape(c);
    if (g.w > topo.sip.mesh_x || g.h > topo.sip.mesh_y || topo.sip.mesh_x % g.w != 0 || topo.sip.mesh_y % g.h != 0)
      continue;
    if (!ring || c == 1 || c % 2 == 0) out.push_back(c);
  }
  return out;
}

HeadPlacement place_heads(std::uint32_t h_kv, std::size_t devices, const Topology& topo, bool replicate,
                          std::optional<std::uint32_t> cubes, std::optional<std::uint32_t> pes) {
  using workloads::ConfigError;
  HeadPlacement p;
  p.pes = pes.value_or(topo.cube.pes);
  const auto fits = [&](std::uint32_t c) {
    return static_cast<std::uint64_t>(devices) * (topo.cubes_per_sip() / c) >= h_kv;
  };
  if (cubes) {
    p.cubes = *cubes;
  } else {
    const std::vector<std::uint32_t> sizes = group_sizes(topo, replicate);
    const auto it = std::find_if(sizes.begin(), sizes.end(), fits);
    if (it == sizes.end()) {
      const std::uint32_t per_sip = topo.cubes_per_sip();
      throw ConfigError(std::to_string(h_kv) + " KV heads need " + std::to_string((h_kv + per_sip - 1) / per_sip) +
                        " SIP(s) at one cube per head; the run has " + std::to_string(devices) +
                        ": give more {devices} (or a topology with more SIPs)");
    }
    p.cubes = *it;
  }
  p.groups_per_sip = topo.cubes_per_sip() / std::max<std::uint32_t>(p.cubes, 1);
  if (p.groups_per_sip == 0 || !fits(p.cubes)) return p;  // validate_groups says why
  const std::uint64_t groups = static_cast<std::uint64_t>(devices) * p.groups_per_sip;
  p.replicas = replicate ? static_cast<std::uint32_t>(groups / h_kv) : 1;
  p.sips = static_cast<std::uint32_t>((static_cast<std::uint64_t>(h_kv) * p.replicas + p.groups_per_sip - 1) /
                                      p.groups_per_sip);
  return p;
}

bool simulates(const std::vector<workloads::SimUnit>& simulate, SipId sip, std::uint32_t group) {
  return simulate.empty() || std::any_of(simulate.begin(), simulate.end(), [&](const workloads::SimUnit& u) {
           return u.sip == sip && (!u.group || *u.group == group);
         });
}

std::vector<std::uint32_t> cube_groups(const Topology& topo, std::uint32_t cubes) {
  const GroupShape shape = group_shape(cubes);
  std::vector<std::uint32_t> out;
  for (std::uint32_t c = 0; c < topo.cubes_per_sip(); ++c) {
    const MeshPos at = topo.mesh().pos(CubeId(c));
    out.push_back((at.y / shape.h) * (topo.sip.mesh_x / shape.w) + at.x / shape.w);
  }
  return out;
}

std::uint32_t group_start(const Topology& topo, std::uint32_t cubes, std::uint32_t index) {
  const GroupShape shape = group_shape(cubes);
  const std::uint32_t per_row = topo.sip.mesh_x / shape.w;
  return topo.mesh().id({(index % per_row) * shape.w, (index / per_row) * shape.h}).value;
}

std::string head_tensor(const char* what, std::uint32_t kv_head, std::uint32_t index) {
  std::string n(what);
  n += ".h";
  n += std::to_string(kv_head);
  if (index != ~0u) {
    n += '.';
    n += std::to_string(index);
  }
  return n;
}

HostTensor host_rows(const HostTensor& t, std::uint64_t first, std::uint64_t count, std::uint64_t row_elems,
                     const Shape& shape) {
  HostTensor h;
  h.shape = shape;
  h.data.assign(t.data.begin() + static_cast<long>(first * row_elems),
                t.data.begin() + static_cast<long>((first + count) * row_elems));
  return h;
}

HostTensor gather(const RuntimeContext& rt, const std::vector<DeviceTensor>& parts, const Shape& shape) {
  HostTensor o;
  o.shape = shape;
  for (const DeviceTensor& t : parts) {
    const HostTensor part = rt.read(t);
    o.data.insert(o.data.end(), part.data.begin(), part.data.end());
  }
  return o;
}

}  // namespace kb::gqa
