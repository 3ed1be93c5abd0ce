#include "base/device_tensor.h"

namespace kb {

std::uint64_t DeviceTensor::cols() const {
  std::uint64_t c = 1;
  for (std::size_t i = 1; i < layout_->shape.size(); ++i) c *= static_cast<std::uint64_t>(layout_->shape[i]);
  return c;
}

std::optional<std::uint32_t> DeviceTensor::cube_index(CubeId c) const {
  for (std::uint32_t i = 0; i < layout_->cubes.size(); ++i)
    if (layout_->cubes[i] == c) return i;
  return std::nullopt;
}

const ShardPlacement* DeviceTensor::shard_at(CubeId cube, PeId pe) const {
  const auto ci = cube_index(cube);
  if (!ci || pe.value >= layout_->policy.pes) return nullptr;
  return &layout_->placements[*ci * layout_->policy.pes + pe.value];
}

}  // namespace kb
