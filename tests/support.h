#pragma once
// Helpers shared by the test suites.
#include <fstream>
#include <string>
#include <vector>

#include "base/topology.h"
#include "models/common/clock.h"

namespace kb::test {

inline std::string source_path(const std::string& relative) {
  return std::string(KERNBENCH_SOURCE_DIR) + "/" + relative;
}

// A topology from topologies/NAME.yaml, with optional --set overrides.
inline Topology topology(const std::string& name, const std::vector<std::string>& sets = {}) {
  return Topology::load(source_path("topologies/" + name + ".yaml"), sets);
}

inline std::uint64_t cycles(const sc_core::sc_time& t, const Topology& topo) {
  return static_cast<std::uint64_t>(t / cycle_time(topo) + 0.5);
}

// A version-1 .npy file with the header dict `header_dict` (padded as NumPy does) and
// `data_bytes` zero bytes of data: for files NumPy itself would not write.
inline void write_raw_npy(const std::string& path, const std::string& header_dict, const std::string& data) {
  std::string header = header_dict;
  while ((10 + header.size() + 1) % 64 != 0) header += ' ';
  header += '\n';
  std::ofstream out(path, std::ios::binary);
  out << "\x93NUMPY" << '\x01' << '\x00' << static_cast<char>(header.size() & 0xff) << static_cast<char>(header.size() >> 8)
      << header << data;
}
inline void write_raw_npy(const std::string& path, const std::string& header_dict, std::size_t data_bytes) {
  write_raw_npy(path, header_dict, std::string(data_bytes, '\0'));
}
// An int64 list, as a batch's lens.npy.
inline void write_int64_npy(const std::string& path, const std::vector<std::int64_t>& values) {
  write_raw_npy(path, "{'descr': '<i8', 'fortran_order': False, 'shape': (" + std::to_string(values.size()) + ",), }",
                std::string(reinterpret_cast<const char*>(values.data()), values.size() * 8));
}

inline std::uint64_t ceil_div(std::uint64_t a, std::uint64_t b) { return (a + b - 1) / b; }

}  // namespace kb::test
