#include "platform/npy.h"

#include <cstring>
#include <fstream>
#include <regex>
#include <sstream>
#include <stdexcept>

#include "platform/output_file.h"

namespace kb {

std::uint64_t HostTensor::elements() const {
  std::uint64_t n = 1;
  for (const auto d : shape) n *= static_cast<std::uint64_t>(d);
  return n;
}

namespace {
[[noreturn]] void bad(const std::string& path, const std::string& what) {
  throw std::runtime_error(path + ": " + what);
}
}  // namespace

HostTensor read_npy(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) bad(path, "cannot open .npy file");
  char magic[8];
  if (!in.read(magic, 8) || std::memcmp(magic, "\x93NUMPY", 6) != 0) bad(path, "not a .npy file (bad magic)");
  const int major = static_cast<unsigned char>(magic[6]);
  std::uint32_t header_len = 0;
  if (major == 1) {
    unsigned char l[2];
    if (!in.read(reinterpret_cast<char*>(l), 2)) bad(path, "truncated header");
    header_len = l[0] | (l[1] << 8);
  } else if (major == 2 || major == 3) {
    unsigned char l[4];
    if (!in.read(reinterpret_cast<char*>(l), 4)) bad(path, "truncated header");
    header_len = l[0] | (l[1] << 8) | (l[2] << 16) | (static_cast<std::uint32_t>(l[3]) << 24);
  } else {
    bad(path, "unsupported .npy version " + std::to_string(major));
  }
  if (header_len > 1 << 20) bad(path, "header too long");
  std::string header(header_len, '\0');
  if (!in.read(header.data(), header_len)) bad(path, "truncated header");
  std::smatch m;
  if (!std::regex_search(header, m, std::regex(R"('descr'\s*:\s*'([^']*)')")))
    bad(path, "header has no 'descr'");
  if (m[1] != "<f4") bad(path, "dtype '" + m[1].str() + "' is not supported; allowed: float32 ('<f4')");
  if (std::regex_search(header, std::regex(R"('fortran_order'\s*:\s*True)")))
    bad(path, "Fortran-ordered arrays are not supported; save with C order");
  if (!std::regex_search(header, m, std::regex(R"('shape'\s*:\s*\(([^)]*)\))"))) bad(path, "header has no 'shape'");
  HostTensor t;
  std::stringstream dims(m[1].str());
  for (std::string d; std::getline(dims, d, ',');) {
    d.erase(0, d.find_first_not_of(" \t"));
    d.erase(d.find_last_not_of(" \t") + 1);
    if (d.empty()) continue;
    if (d.find_first_not_of("0123456789") != std::string::npos || d.size() > 12) bad(path, "bad shape entry '" + d + "'");
    t.shape.push_back(std::stoll(d));
  }
  const std::uint64_t n = t.elements();
  in.seekg(0, std::ios::end);
  const std::uint64_t have = static_cast<std::uint64_t>(in.tellg()) - (major == 1 ? 10 : 12) - header_len;
  if (have != n * 4)
    bad(path, "data is " + std::to_string(have) + " bytes, the shape " + shape_text(t.shape) + " needs " +
                  std::to_string(n * 4));
  in.seekg(static_cast<std::streamoff>((major == 1 ? 10 : 12) + header_len));
  t.data.resize(n);
  in.read(reinterpret_cast<char*>(t.data.data()), static_cast<std::streamsize>(n * 4));
  return t;
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
