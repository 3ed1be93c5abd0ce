#pragma once
// Text that many records share and that never changes once made: an engine's name, the
// kind of a tl op. A Name views one stored copy, a string literal (static storage) or a
// string interned for the program's life, so copying one copies a view: an op-log
// record per op made and moved a std::string for each.
#include <cstddef>
#include <ostream>
#include <string>
#include <string_view>

namespace kb {

class Name {
 public:
  constexpr Name() = default;  // ""
  // A string literal lives as long as the program: viewed, not copied.
  template <std::size_t N>
  constexpr Name(const char (&literal)[N]) : text_(literal, N - 1) {}  // NOLINT(google-explicit-constructor)
  // Any other text: one stored copy per distinct text (a lookup, made once, not per use).
  static Name intern(std::string_view text);

  constexpr std::string_view view() const { return text_; }
  operator std::string_view() const { return text_; }  // NOLINT(google-explicit-constructor)
  std::string str() const { return std::string(text_); }
  constexpr bool empty() const { return text_.empty(); }

  friend bool operator==(Name a, Name b) { return a.text_ == b.text_; }
  friend bool operator!=(Name a, Name b) { return a.text_ != b.text_; }
  friend bool operator==(Name a, std::string_view b) { return a.text_ == b; }
  friend bool operator!=(Name a, std::string_view b) { return a.text_ != b; }
  friend bool operator==(std::string_view a, Name b) { return a == b.text_; }
  friend bool operator!=(std::string_view a, Name b) { return a != b.text_; }
  friend bool operator==(Name a, const char* b) { return a.text_ == b; }
  friend bool operator!=(Name a, const char* b) { return a.text_ != b; }
  friend bool operator<(Name a, Name b) { return a.text_ < b.text_; }
  friend std::ostream& operator<<(std::ostream& o, Name n) { return o << n.text_; }

 private:
  explicit constexpr Name(std::string_view stored) : text_(stored) {}
  std::string_view text_;
};

}  // namespace kb
