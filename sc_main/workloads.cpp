#include "sc_main/workloads.h"

#include <random>

#include "kernels/examples/examples.h"

namespace kb::workloads {

const std::vector<std::string>& example_kernels() {
  static const std::vector<std::string> names = {"tiled_gemm", "row_softmax"};
  return names;
}

namespace {

HostTensor random(const Shape& shape, std::uint32_t seed) {
  HostTensor h;
  h.shape = shape;
  h.data.resize(h.elements());
  std::mt19937 gen(seed);
  std::normal_distribution<float> d(0.0f, 1.0f);
  for (auto& v : h.data) v = d(gen);
  return h;
}

// Host data is only needed when values are simulated.
DeviceTensor input(RuntimeContext& rt, const std::string& name, const Shape& shape, DType dtype,
                   const DPPolicy& policy, SipId sip, std::uint32_t seed) {
  if (!rt.data_mode()) return rt.empty(name, shape, dtype, policy, sip);
  return rt.from_host(name, random(shape, seed), dtype, policy, sip);
}

}  // namespace

std::uint64_t run_example(RuntimeContext& rt, const std::string& kernel, const ExampleKnobs& k,
                          const std::vector<SipId>& devices) {
  const Topology& topo = rt.system().topology();
  const DPPolicy rows = DPPolicy::shard2d(topo.cubes_per_sip(), topo.cube.pes);
  const DPPolicy every = DPPolicy::replicate(topo.cubes_per_sip(), topo.cube.pes);
  const std::int64_t total_rows = static_cast<std::int64_t>(k.rows_per_pe) * topo.pes_per_sip();
  for (const SipId s : devices) {
    const std::uint32_t seed = k.seed * 1000 + s.value;
    if (kernel == "tiled_gemm") {
      const DeviceTensor a = input(rt, "a", {total_rows, k.k}, k.dtype, rows, s, seed);
      const DeviceTensor b = input(rt, "b", {k.k, k.n}, k.dtype, every, s, seed + 500);
      const DeviceTensor c = rt.empty("c", {total_rows, k.n}, k.dtype, rows, s);
      rt.launch(s, kernel, kernels::tiled_gemm, a, b, c, k.m_tile, k.k_tile);
    } else {
      const DeviceTensor x = input(rt, "x", {total_rows, k.k}, k.dtype, rows, s, seed);
      const DeviceTensor y = rt.empty("y", {total_rows, k.k}, k.dtype, rows, s);
      rt.launch(s, kernel, kernels::row_softmax, x, y, k.m_tile);
    }
  }
  rt.run();
  return rt.last_run_cycles();
}

}  // namespace kb::workloads
