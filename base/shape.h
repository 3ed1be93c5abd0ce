#pragma once
// A tensor's shape, shared by device tensors and host (.npy) tensors. Its dimensions
// are held inline up to four, so copying a tensor handle or a view allocates nothing.
#include <cstdint>
#include <string>
#include <string_view>

#include <boost/container/small_vector.hpp>

namespace kb {

using Shape = boost::container::small_vector<std::int64_t, 4>;
// `values` written between `open` and `close` with `sep` between them, in one buffer made
// a string once (an op-log record formats one per op): "[64, 128]", "64x128x64".
std::string numbers_text(const std::int64_t* values, std::size_t n, std::string_view open, std::string_view sep,
                         std::string_view close);
std::string shape_text(const Shape& s);  // "[64, 128]"

}  // namespace kb
