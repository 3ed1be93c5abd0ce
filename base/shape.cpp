#include "base/shape.h"

#include <algorithm>
#include <charconv>

namespace kb {

std::string numbers_text(const std::int64_t* values, std::size_t n, std::string_view open, std::string_view sep,
                         std::string_view close) {
  const std::size_t most = open.size() + close.size() + n * (20 + sep.size());  // 20: the digits of any int64
  char small[128];
  std::string large(most > sizeof small ? most : 0, '\0');
  char* const begin = most > sizeof small ? large.data() : small;
  char* p = std::copy(open.begin(), open.end(), begin);
  for (std::size_t i = 0; i < n; ++i) {
    if (i) p = std::copy(sep.begin(), sep.end(), p);
    p = std::to_chars(p, p + 20, values[i]).ptr;
  }
  p = std::copy(close.begin(), close.end(), p);
  return std::string(begin, p);
}

std::string shape_text(const Shape& s) { return numbers_text(s.data(), s.size(), "[", ", ", "]"); }

}  // namespace kb
