// Each line of the input is one --set key.path=value applied to the default topology:
// the result is a topology or a TopologyError, never anything else.
#include <cstddef>
#include <cstdint>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "base/topology.h"

namespace {
const std::string& default_topology() {
  static const std::string text = [] {
    std::ifstream in(KERNBENCH_DEFAULT_TOPOLOGY);
    std::stringstream s;
    s << in.rdbuf();
    return s.str();
  }();
  return text;
}
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::vector<std::string> sets;
  std::stringstream lines(std::string(reinterpret_cast<const char*>(data), size));
  for (std::string line; std::getline(lines, line);) sets.push_back(line);
  try {
    kb::format_topology(kb::Topology::parse(default_topology(), "llama70b_4sip.yaml", sets));
  } catch (const kb::TopologyError&) {
  }
  return 0;
}
