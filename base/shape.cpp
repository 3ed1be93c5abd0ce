#include "base/shape.h"

#include <charconv>

namespace kb {

std::string shape_text(const Shape& s) {
  // Written into one buffer and made a string once: an op-log record formats one per op.
  char buf[2 + kInlineDims * 22];  // "[", up to 20 digits and ", " each, "]"
  std::string long_text;           // a shape of more dimensions than the buffer holds
  char* const begin = s.size() <= kInlineDims ? buf : (long_text.resize(2 + s.size() * 22), long_text.data());
  char* p = begin;
  *p++ = '[';
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (i) {
      *p++ = ',';
      *p++ = ' ';
    }
    p = std::to_chars(p, p + 20, s[i]).ptr;
  }
  *p++ = ']';
  return std::string(begin, p);
}

}  // namespace kb
