#pragma once
// Host-side pieces both GQA drivers share: where a KV head's group sits, tensor names,
// host slicing and gathering.
#include <cstdint>
#include <string>
#include <vector>

#include "base/npy.h"
#include "platform/runtime_context.h"

namespace kb::gqa {

// The devices a run uses: the ones asked for, or all SIPs of the topology.
std::vector<SipId> run_devices(const std::vector<SipId>& asked, const Topology& topo);


// Whether this process simulates `sip`: `simulate` lists the SIPs of its part of a
// partitioned run (placement still follows all the run's devices); empty: every SIP.
bool simulates(const std::vector<SipId>& simulate, SipId sip);

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
