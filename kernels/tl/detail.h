#pragma once
// What the files of tl::Ctx share and a kernel never sees.
#include <cstdint>
#include <string>

#include "kernels/tl/tensor.h"

namespace kb::tl::detail {

inline std::uint64_t element_count(const Shape& s) {
  std::uint64_t n = 1;
  for (const auto d : s) n *= static_cast<std::uint64_t>(d);
  return n;
}

inline std::string bytes_text(std::uint64_t b) { return std::to_string(b) + " B"; }

inline bool overlaps(const Access& a, const Region& r) { return a.region.overlaps(r); }
inline bool finished(const Access& a) { return a.cmd->done; }
// Whether the scheduler may hold the command back (it waits for others or a message).
inline bool held(const Command& c) { return !c.waits_for.empty() || c.receive.has_value(); }

}  // namespace kb::tl::detail
