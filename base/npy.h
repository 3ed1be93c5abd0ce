#pragma once
// NumPy .npy files of float32 (little-endian, C order), the exchange format of
// --inputs/--outputs, and int64 lists (a batch's lengths).
#include <cstdint>
#include <istream>
#include <string>
#include <vector>

#include "base/shape.h"

namespace kb {

struct HostTensor {
  Shape shape;
  std::vector<float> data;  // row-major
  std::uint64_t elements() const;
};

// Throws std::runtime_error naming the file and what is wrong with it. Nothing is
// allocated for the data before the file is known to hold all of it.
HostTensor read_npy(const std::string& path);
// The same from an open stream; `name` is what the messages call it.
HostTensor read_npy(std::istream& in, const std::string& name);
// A one-dimensional int64 ('<i8') array, e.g. lens.npy of a batch.
std::vector<std::int64_t> read_npy_int64(const std::string& path);
// Written whole or not at all.
void write_npy(const std::string& path, const HostTensor& t);

}  // namespace kb
