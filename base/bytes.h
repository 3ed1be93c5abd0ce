#pragma once
// Plain values packed into bytes and read back, for what the processes of a parallel
// simulation send each other (docs/parallel.md). Both ends are the same build on the same
// kind of machine, so a value goes as its bytes.
#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

namespace kb {

class ByteWriter {
 public:
  template <class T>
  void put(const T& v) {
    static_assert(std::is_trivially_copyable_v<T>);
    out_.append(reinterpret_cast<const char*>(&v), sizeof(T));
  }
  void put_text(std::string_view s) {
    put<std::uint64_t>(s.size());
    out_.append(s);
  }
  template <class T>
  void put_all(const std::vector<T>& items) {
    put<std::uint64_t>(items.size());
    for (const T& v : items) put(v);
  }
  std::string& bytes() { return out_; }

 private:
  std::string out_;
};

class ByteReader {
 public:
  explicit ByteReader(std::string_view in) : in_(in) {}
  template <class T>
  T get() {
    static_assert(std::is_trivially_copyable_v<T>);
    T v;
    std::memcpy(&v, take(sizeof(T)), sizeof(T));
    return v;
  }
  std::string_view get_text() {
    const auto n = get<std::uint64_t>();
    return {take(n), n};
  }
  template <class T>
  std::vector<T> get_all() {
    std::vector<T> items(get<std::uint64_t>());
    for (T& v : items) v = get<T>();
    return items;
  }
  bool done() const { return at_ == in_.size(); }

 private:
  const char* take(std::size_t n) {
    if (n > in_.size() - at_) throw std::runtime_error("a parallel simulation's message ended early");
    const char* p = in_.data() + at_;
    at_ += n;
    return p;
  }
  std::string_view in_;
  std::size_t at_ = 0;
};

}  // namespace kb
