#include "workloads/attention/placement.h"

#include <algorithm>

namespace kb::gqa {

std::vector<SipId> run_devices(const std::vector<SipId>& asked, const Topology& topo) {
  if (!asked.empty()) return asked;
  std::vector<SipId> all;
  for (std::uint32_t s = 0; s < topo.system.sips; ++s) all.emplace_back(s);
  return all;
}

bool simulates(const std::vector<SipId>& simulate, SipId sip) {
  return simulate.empty() || std::find(simulate.begin(), simulate.end(), sip) != simulate.end();
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
