#pragma once
// What a driver does for a job, for the VP suites: small jobs for the 2x2x2 SIP, their
// tensors and descriptor written, the doorbell, O and the result words read back.
#include <cstdint>

#include "kernels/gqa/helpers.h"
#include "tests/vp/vp_support.h"
#include "workloads/attention/attention.h"

namespace kb::test {

using vp::JobDescriptor;

constexpr std::uint64_t MiB = 1 << 20;

// Small jobs for the 2x2x2 SIP: decode of one KV head of 4 query heads, 2 positions,
// and a whole-prompt prefill; tensors 1 MiB apart from `base` in every channel.
inline JobDescriptor small_job(vp::Kernel kernel, std::uint32_t cubes = 4, std::uint64_t base = MiB) {
  JobDescriptor d;
  d.kernel = kernel;
  d.h_q = 4;
  d.h_kv = 1;
  d.d = 32;
  d.s = kernel == vp::Kernel::GqaDecode ? 500 : 256;
  d.t_q = kernel == vp::Kernel::GqaDecode ? 2 : 0;
  d.cubes = cubes;
  d.pes = 2;
  d.q = base;
  d.k = base + MiB;
  d.v = base + 2 * MiB;
  d.o = base + 3 * MiB;
  d.state = base + 4 * MiB;
  return d;
}

inline gqa::AttentionShape shape_of(const JobDescriptor& d) {
  gqa::AttentionShape a;
  a.h_q = d.h_q;
  a.h_kv = d.h_kv;
  a.d = d.d;
  a.s = d.s;
  a.t_q = d.t_q ? d.t_q : static_cast<std::uint32_t>(d.s);
  a.causal = d.causal;
  a.dtype = d.dtype;
  return a;
}

// What a driver does for one job: tensors in, descriptor in, doorbell, O out.
struct Submitted {
  JobDescriptor d;
  std::uint64_t address = 0;  // the descriptor's
  vp::JobLayout layout;
  gqa::AttentionInputs in;
  HostTensor o;
  vp::JobResult result;
};

inline void write_job(Host& h, Submitted& j) {
  sc_core::sc_time delay = sc_core::SC_ZERO_TIME;
  vp::write_tensor(h.memory, j.layout.q, j.in.q.data, delay);
  vp::write_tensor(h.memory, j.layout.k, j.in.k.data, delay);
  vp::write_tensor(h.memory, j.layout.v, j.in.v.data, delay);
  vp::write_descriptor(h.memory, j.address, j.d, delay);
  sc_core::wait(delay);
}

inline void read_job(Host& h, Submitted& j) {
  sc_core::sc_time delay = sc_core::SC_ZERO_TIME;
  j.result = vp::read_result(h.memory, j.address, delay);
  j.o.shape = j.layout.o.shape;
  j.o.data = vp::read_tensor(h.memory, j.layout.o, delay);
  sc_core::wait(delay);
}

// The cycles of one host access of `bytes` at `address` (a write, or a read) started now.
inline std::uint64_t timed_access(Host& h, const Topology& topo, bool write, std::uint64_t address, std::uint64_t bytes) {
  vp::TensorMap m;
  m.dtype = DType::fp32;
  m.rows = 1;
  m.row_elements = bytes / 4;
  m.chunks = {{address, 0, 1}};
  sc_core::sc_time delay = sc_core::SC_ZERO_TIME;
  if (write) vp::write_tensor(h.memory, m, std::vector<float>(bytes / 4, 1.0f), delay);
  else vp::read_tensor(h.memory, m, delay);
  sc_core::wait(delay);
  return test::cycles(delay, topo);
}

inline Submitted prepare(Platform& p, const JobDescriptor& d, std::uint64_t address, std::uint32_t seed) {
  Submitted j{d, address, p.accel.layout(d), gqa::AttentionInputs::random(shape_of(d), seed), {}, {}};
  return j;
}

}  // namespace kb::test
