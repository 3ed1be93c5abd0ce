// Any bytes given as a .npy file are either a float32 tensor whose data fills its
// shape or a std::runtime_error naming the problem.
#include <cstddef>
#include <cstdint>
#include <sstream>
#include <stdexcept>
#include <string>

#include "base/npy.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::istringstream in(std::string(reinterpret_cast<const char*>(data), size));
  try {
    const kb::HostTensor t = kb::read_npy(in, "<fuzz>");
    if (t.data.size() != t.elements()) __builtin_trap();
  } catch (const std::runtime_error&) {
  }
  return 0;
}
