#pragma once
// NumPy .npy files of float32 (little-endian, C order), the exchange format of
// --inputs/--outputs.
#include <string>
#include <vector>

#include "platform/device_tensor.h"

namespace kb {

struct HostTensor {
  Shape shape;
  std::vector<float> data;  // row-major
  std::uint64_t elements() const;
};

// Throws std::runtime_error naming the file and what is wrong with it.
HostTensor read_npy(const std::string& path);
// Written whole or not at all.
void write_npy(const std::string& path, const HostTensor& t);

}  // namespace kb
