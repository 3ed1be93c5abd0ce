#pragma once
// Helpers for the tl suites: a small machine with a runtime, random inputs, references.
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "platform/runtime_context.h"
#include "tests/support.h"

namespace kb::test {

struct Machine {
  explicit Machine(const std::string& topo_name = "small_1sip_2x2x2", bool data = true,
                   const std::vector<std::string>& sets = {},
                   RunOptions::OpLogKept kept = RunOptions::OpLogKept::Records)
      : Machine(topology(topo_name, sets), data, kept) {}
  Machine(Topology t, bool data, RunOptions::OpLogKept kept = RunOptions::OpLogKept::Records)
      : topo(std::move(t)), sys("system", topo), rt(sys, RunOptions{.data = data, .op_log = kept}) {}
  // The last run's critical path accounts for every cycle of its latency.
  ~Machine() {
    const CriticalPath path = rt.critical_path();
    if (!path.cycles.empty()) {
      EXPECT_EQ(path.total(), rt.last_run_cycles()) << "critical path against the latency";
    }
  }
  Machine(Machine&&) = delete;
  Topology topo;
  System sys;
  RuntimeContext rt;
};

inline HostTensor random_host(const Shape& shape, std::uint32_t seed, float scale = 1.0f) {
  HostTensor h;
  h.shape = shape;
  std::mt19937 gen(seed);
  std::normal_distribution<float> d(0.0f, scale);
  h.data.resize(h.elements());
  for (auto& v : h.data) v = d(gen);
  return h;
}

// Rounds every value to bf16 and back, as the device stores it.
inline HostTensor as_bf16(HostTensor h) {
  for (auto& v : h.data) v = bf16_to_fp32(fp32_to_bf16(v));
  return h;
}

inline double max_abs_diff(const std::vector<float>& a, const std::vector<double>& b) {
  double m = 0;
  for (std::size_t i = 0; i < a.size(); ++i) m = std::max(m, std::abs(static_cast<double>(a[i]) - b[i]));
  return m;
}

// Runs `kernel` only on one PE (the others return at once).
template <class F>
RuntimeContext::Kernel on_pe(PeCoord who, F f) {
  return [who, f](tl::Ctx& tl) {
    if (tl.coord() == who) f(tl);
  };
}

}  // namespace kb::test
