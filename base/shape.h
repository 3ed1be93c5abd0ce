#pragma once
// A tensor's shape, shared by device tensors and host (.npy) tensors. Its dimensions
// are held inline up to four, so copying a tensor handle or a view allocates nothing.
#include <cstdint>
#include <string>

#include <boost/container/small_vector.hpp>

namespace kb {

inline constexpr std::size_t kInlineDims = 4;
using Shape = boost::container::small_vector<std::int64_t, kInlineDims>;
std::string shape_text(const Shape& s);

}  // namespace kb
