#pragma once
// A tensor's shape, shared by device tensors and host (.npy) tensors.
#include <cstdint>
#include <string>
#include <vector>

namespace kb {

using Shape = std::vector<std::int64_t>;
std::string shape_text(const Shape& s);

}  // namespace kb
