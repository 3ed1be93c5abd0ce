#include "base/npy.h"

#include <cstring>
#include <fstream>
#include <stdexcept>
#include <string_view>

#include "base/output_file.h"

namespace kb {

std::uint64_t HostTensor::elements() const {
  std::uint64_t n = 1;
  for (const auto d : shape) n *= static_cast<std::uint64_t>(d);
  return n;
}

namespace {

[[noreturn]] void bad(const std::string& name, const std::string& what) {
  throw std::runtime_error(name + ": " + what);
}

struct Header {
  std::string descr;
  bool fortran_order = false;
  Shape shape;
};

// The header is a Python dict literal with the keys descr, fortran_order and shape
// (NEP 1). A small recursive-descent reader: no regex, whose backtracking recursion
// can exhaust the stack on long headers.
class HeaderReader {
 public:
  HeaderReader(std::string_view text, const std::string& name) : s_(text), name_(name) {}

  Header read() {
    Header h;
    bool descr = false, order = false, shape = false;
    expect('{');
    while (!next_is('}')) {
      const std::size_t key_at = i_;
      const std::string key = quoted();
      expect(':');
      if (key == "descr") {
        h.descr = quoted();
        descr = true;
      } else if (key == "fortran_order") {
        h.fortran_order = boolean();
        order = true;
      } else if (key == "shape") {
        h.shape = tuple();
        shape = true;
      } else {
        i_ = key_at;
        fail("unknown key '" + key + "'; allowed: descr, fortran_order, shape");
      }
      if (!next_is('}')) expect(',');
    }
    expect('}');
    if (!descr) fail("no 'descr'");
    if (!order) fail("no 'fortran_order'");
    if (!shape) fail("no 'shape'");
    return h;
  }

 private:
  [[noreturn]] void fail(const std::string& what) const {
    bad(name_, "header, column " + std::to_string(i_ + 1) + ": " + what);
  }
  void skip_space() {
    while (i_ < s_.size() && (s_[i_] == ' ' || s_[i_] == '\t' || s_[i_] == '\n')) ++i_;
  }
  bool next_is(char c) {
    skip_space();
    return i_ < s_.size() && s_[i_] == c;
  }
  void expect(char c) {
    if (!next_is(c)) fail(std::string("expected '") + c + "'");
    ++i_;
  }
  std::string quoted() {
    skip_space();
    if (i_ >= s_.size() || (s_[i_] != '\'' && s_[i_] != '"')) fail("expected a quoted string");
    const char q = s_[i_++];
    const std::size_t end = s_.find(q, i_);
    if (end == std::string_view::npos) fail("unterminated string");
    std::string v(s_.substr(i_, end - i_));
    i_ = end + 1;
    return v;
  }
  bool boolean() {
    skip_space();
    for (const auto& [word, value] : {std::pair{std::string_view("True"), true}, {"False", false}}) {
      if (s_.substr(i_, word.size()) == word) {
        i_ += word.size();
        return value;
      }
    }
    fail("expected True or False");
  }
  Shape tuple() {
    Shape shape;
    expect('(');
    while (!next_is(')')) {
      std::int64_t d = 0;
      std::size_t digits = 0;
      for (; i_ < s_.size() && s_[i_] >= '0' && s_[i_] <= '9'; ++i_, ++digits) {
        if (digits == 12) fail("shape entry too large");
        d = d * 10 + (s_[i_] - '0');
      }
      if (digits == 0) fail("expected a whole number in the shape");
      shape.push_back(d);
      if (!next_is(')')) expect(',');
    }
    expect(')');
    return shape;
  }

  std::string_view s_;
  const std::string& name_;
  std::size_t i_ = 0;
};

}  // namespace

namespace {

// The shape and the data bytes of a C-ordered array of `descr` (`elem` bytes each).
std::pair<Shape, std::vector<char>> read_array(std::istream& in, const std::string& name, const char* descr,
                                                std::uint64_t elem, const char* allowed) {
  char magic[8];
  if (!in.read(magic, 8) || std::memcmp(magic, "\x93NUMPY", 6) != 0) bad(name, "not a .npy file (bad magic)");
  const int major = static_cast<unsigned char>(magic[6]);
  std::uint32_t header_len = 0;
  if (major == 1) {
    unsigned char l[2];
    if (!in.read(reinterpret_cast<char*>(l), 2)) bad(name, "truncated header");
    header_len = l[0] | (l[1] << 8);
  } else if (major == 2 || major == 3) {
    unsigned char l[4];
    if (!in.read(reinterpret_cast<char*>(l), 4)) bad(name, "truncated header");
    header_len = l[0] | (l[1] << 8) | (l[2] << 16) | (static_cast<std::uint32_t>(l[3]) << 24);
  } else {
    bad(name, "unsupported .npy version " + std::to_string(major) + "; allowed: 1, 2, 3");
  }
  if (header_len > 1 << 20) bad(name, "header of " + std::to_string(header_len) + " bytes; allowed: up to 1 MiB");
  std::string text(header_len, '\0');
  if (!in.read(text.data(), header_len)) bad(name, "truncated header");
  const Header h = HeaderReader(text, name).read();
  if (h.descr != descr) bad(name, "dtype '" + h.descr + "' is not supported; allowed: " + allowed);
  if (h.fortran_order) bad(name, "Fortran-ordered arrays are not supported; save with C order");

  const std::streamoff data_start = in.tellg();
  in.seekg(0, std::ios::end);
  const auto have = static_cast<std::uint64_t>(in.tellg() - data_start);
  in.seekg(data_start);
  // The bytes the shape needs, without overflow: past what the file holds is wrong anyway.
  std::uint64_t need = elem;
  bool too_big = false;
  for (const auto d : h.shape) too_big = too_big || __builtin_mul_overflow(need, static_cast<std::uint64_t>(d), &need);
  if (too_big || need != have)
    bad(name, "data is " + std::to_string(have) + " bytes, the shape " + shape_text(h.shape) + " needs " +
                  (too_big ? std::string("more than 2^64") : std::to_string(need)));
  std::vector<char> bytes(need);
  if (!in.read(bytes.data(), static_cast<std::streamsize>(need))) bad(name, "read failed");
  return {h.shape, std::move(bytes)};
}

}  // namespace

HostTensor read_npy(std::istream& in, const std::string& name) {
  auto [shape, bytes] = read_array(in, name, "<f4", 4, "float32 ('<f4')");
  HostTensor t;
  t.shape = shape;
  t.data.resize(bytes.size() / 4);
  if (!bytes.empty()) std::memcpy(t.data.data(), bytes.data(), bytes.size());  // an empty array has no buffer
  return t;
}

std::vector<std::int64_t> read_npy_int64(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) bad(path, "cannot open .npy file");
  auto [shape, bytes] = read_array(in, path, "<i8", 8, "int64 ('<i8')");
  if (shape.size() != 1) bad(path, "shape " + shape_text(shape) + ": a list of integers is one-dimensional");
  std::vector<std::int64_t> out(bytes.size() / 8);
  if (!bytes.empty()) std::memcpy(out.data(), bytes.data(), bytes.size());
  return out;
}

HostTensor read_npy(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) bad(path, "cannot open .npy file");
  return read_npy(in, path);
}

void write_npy(const std::string& path, const HostTensor& t) {
  std::string shape = "(";
  for (const auto d : t.shape) shape += std::to_string(d) + ", ";
  if (t.shape.size() > 1) shape.erase(shape.size() - 2);
  else if (t.shape.size() == 1) shape.erase(shape.size() - 1);
  shape += ")";
  std::string header = "{'descr': '<f4', 'fortran_order': False, 'shape': " + shape + ", }";
  while ((10 + header.size() + 1) % 64 != 0) header += ' ';
  header += '\n';
  std::string out = "\x93NUMPY";
  out += '\x01';
  out += '\x00';
  out += static_cast<char>(header.size() & 0xff);
  out += static_cast<char>(header.size() >> 8);
  out += header;
  out.append(reinterpret_cast<const char*>(t.data.data()), t.data.size() * 4);
  write_file_atomically(path, out);
}

}  // namespace kb
