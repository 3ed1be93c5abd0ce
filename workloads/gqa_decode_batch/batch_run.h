#pragma once
// The host side of batched decode: places every KV head's paged K and V on its group
// (the allocator of paged_kv.h), tells each rank its runs of pages, launches the kernel
// and reports latency, throughput, balance and the roofline.
#include <cstdint>
#include <optional>
#include <vector>

#include "kernels/gqa/gqa_decode_batch.h"
#include "platform/runtime_context.h"
#include "workloads/attention/attention.h"
#include "workloads/gqa_decode_batch/paged_kv.h"

namespace kb::gqa {

struct BatchConfig : AttentionShape {
  std::vector<std::uint64_t> lens;  // context length per request (S of AttentionShape: the longest)
  std::uint32_t page_rows = 16;
  bool two_level = false;  // every request through decode's 2-level reduce (else only those on every rank)
  // O on every rank of a group, each holding the rows it stores (a decoder layer sums the
  // copies over the group); else on the root cube, as decode places it.
  bool o_every_rank = false;
  // TCM bytes a PE's caller holds through the kernel (a decoder layer's activations): the
  // tiling plans within the rest.
  std::uint64_t tcm_reserved = 0;
  std::uint32_t cubes = 8, pes = 8;
  std::vector<SipId> devices;   // empty: all
  std::vector<workloads::SimUnit> simulate;  // what this process simulates (run --jobs); empty: all
};

struct BatchResult {
  std::uint64_t cycles = 0;
  std::vector<SipId> devices;  // the run's devices
  std::uint64_t kv_bytes = 0;  // K and V bytes the DMA read
  double roofline_cycles = 0;  // K/V bytes over the HBM bandwidth of every PE of the run's devices
  double imbalance = 1;        // the most KV rows of a rank over the mean
  std::uint64_t pages = 0;     // per KV head
  double fill = 0;             // rows held over the pages' capacity
  std::uint32_t tile_rows = 0;
  std::optional<HostTensor> o;  // [B, H_q, T_q, d] in data mode
};

// The values of a batch in FlashAttention's varlen layout: q [B, H_q, T_q, d]; k and v
// [H_kv, sum(L), d], the requests' rows one after another.
struct BatchInputs {
  HostTensor q, k, v;
  static BatchInputs random(const BatchConfig& c, std::uint32_t seed);
  // Reads q.npy, k.npy, v.npy and lens.npy (int64 [B]) from `dir` into c.lens and the
  // tensors; throws ConfigError naming the file whose shape disagrees.
  static BatchInputs from_npy(const std::string& dir, BatchConfig& c);
};

// O [B, H_q, T_q, d] against the fp64 reference, request by request: the largest error,
// and the naive error and tolerance of the request nearest its tolerance; it passes when
// every request does.
workloads::Numerics check_batch(const BatchConfig& c, const BatchInputs& in, const HostTensor& o);

// Throws ConfigError naming the fields: the lengths, T_q against the shortest, the
// placement, HBM capacity and TCM. Returns the pages it dealt.
PagedKv validate(const BatchConfig& c, const Topology& topo);
// The tensors and kernel parameters of a batch, placed in HBM but not yet launched.
struct BatchPlan {
  PagedKv kv;                  // the pages of every KV head's group (the same deal for each)
  std::uint64_t rank_rows = 0;  // rows of each rank's shard of a head's K and V
  std::uint32_t tile_rows = 0;
  std::vector<SipId> devices;
  std::vector<std::shared_ptr<DecodeBatchParams>> params;  // per device; groups in KV-head order
  std::vector<DeviceTensor> outputs;                       // O of each KV head, in head order
};
// Validates `c` and places its tensors (in `at`'s regions where given): from `inputs`, or
// empty (zeros) without them. Q and O of a head: rows request-major, then the group's G
// query heads, then the T_q positions; K and V: each rank's pages in slot order.
BatchPlan plan_decode_batch(RuntimeContext& rt, const BatchConfig& c, const BatchInputs* inputs,
                            const TensorRegions& at = {});
void launch_decode_batch(RuntimeContext& rt, const BatchPlan& plan);
// `inputs` is required in data mode.
BatchResult run_decode_batch(RuntimeContext& rt, const BatchConfig& c, const BatchInputs* inputs);

}  // namespace kb::gqa
