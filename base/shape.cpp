#include "base/shape.h"

#include <charconv>

namespace kb {

std::string shape_text(const Shape& s) {
  std::string t = "[";
  char digits[24];
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (i) t += ", ";
    t.append(digits, std::to_chars(digits, digits + sizeof digits, s[i]).ptr);
  }
  t += ']';
  return t;
}

}  // namespace kb
