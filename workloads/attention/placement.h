#pragma once
// Host-side pieces both GQA drivers share: where a KV head's group sits, tensor names,
// host slicing and gathering.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "base/npy.h"
#include "platform/runtime_context.h"
#include "workloads/workload.h"

namespace kb::gqa {

// The devices a run uses: the ones asked for, or all SIPs of the topology.
std::vector<SipId> run_devices(const std::vector<SipId>& asked, const Topology& topo);


// Where a run's KV heads go: groups of `cubes` cubes x `pes` PEs, `replicas` groups per
// KV head (prefill only: each takes a share of the query positions), filling the SIPs in
// order; `sips` of the run's devices hold a group.
struct HeadPlacement {
  std::uint32_t cubes = 1, pes = 1, replicas = 1, groups_per_sip = 1, sips = 1;
  // The SIP (index into the run's devices) and group slot of replica r of KV head h.
  std::uint32_t device_of(std::uint32_t h, std::uint32_t r) const { return (h * replicas + r) / groups_per_sip; }
  std::uint32_t slot_of(std::uint32_t h, std::uint32_t r) const { return (h * replicas + r) % groups_per_sip; }
};

// The group sizes that tile the cube mesh, largest first; `ring`: only those with a
// Hamiltonian cycle (an even number of cubes, or one).
std::vector<std::uint32_t> group_sizes(const Topology& topo, bool ring);

// The default rule (docs/workloads.md, Placement): the largest group size with which all
// H_kv heads fit on the run's `devices` SIPs, every PE of a cube; with `replicate`, the
// groups left over hold replicas of the heads (as many per head as there are groups for
// each). `cubes` and `pes`, when given, are kept. Throws ConfigError saying what would fit.
HeadPlacement place_heads(std::uint32_t h_kv, std::size_t devices, const Topology& topo, bool replicate,
                          std::optional<std::uint32_t> cubes, std::optional<std::uint32_t> pes);

// Whether this process simulates group `group` of `sip`: `simulate` lists the units of its
// part of a split run (placement still follows all the run's devices); empty: all.
bool simulates(const std::vector<workloads::SimUnit>& simulate, SipId sip, std::uint32_t group);
// Each cube's group among a SIP's groups of `cubes` cubes (for RuntimeContext::separate_groups).
std::vector<std::uint32_t> cube_groups(const Topology& topo, std::uint32_t cubes);

// The top-left cube of group `index` of a SIP: groups tile the mesh row by row.
std::uint32_t group_start(const Topology& topo, std::uint32_t cubes, std::uint32_t index);

// "k.h3", or "q.h3.5" for query head 5 of KV head 3's group.
std::string head_tensor(const char* what, std::uint32_t kv_head, std::uint32_t index = ~0u);

// Rows [first, first + count) of a row-major host tensor with `row_elems` values a row.
HostTensor host_rows(const HostTensor& t, std::uint64_t first, std::uint64_t count, std::uint64_t row_elems,
                     const Shape& shape);

// The device tensors read back and concatenated, as one host tensor of `shape`.
HostTensor gather(const RuntimeContext& rt, const std::vector<DeviceTensor>& parts, const Shape& shape);

}  // namespace kb::gqa
