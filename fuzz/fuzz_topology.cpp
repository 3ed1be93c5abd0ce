// Any text given as a topology file is either a topology or a TopologyError; anything
// else (another exception, a crash, a sanitizer report, a hang) is a bug.
#include <cstddef>
#include <cstdint>
#include <string>

#include "base/topology.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  try {
    kb::format_topology(kb::Topology::parse(text, "<fuzz>"));
  } catch (const kb::TopologyError&) {
  }
  return 0;
}
