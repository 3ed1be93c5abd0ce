#pragma once
// Helpers shared by the test suites.
#include <string>
#include <vector>

#include "platform/topology.h"

namespace kb::test {

inline std::string source_path(const std::string& relative) {
  return std::string(KERNBENCH_SOURCE_DIR) + "/" + relative;
}

// A topology from topologies/NAME.yaml, with optional --set overrides.
inline Topology topology(const std::string& name, const std::vector<std::string>& sets = {}) {
  return Topology::load(source_path("topologies/" + name + ".yaml"), sets);
}

inline std::uint64_t cycles(const sc_core::sc_time& t, const Topology& topo) {
  return static_cast<std::uint64_t>(t / topo.cycle() + 0.5);
}

inline std::uint64_t ceil_div(std::uint64_t a, std::uint64_t b) { return (a + b - 1) / b; }

}  // namespace kb::test
