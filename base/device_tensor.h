#pragma once
// A tensor in HBM, placed over a CUBE Group of one SIP by a DPPolicy. The first axis
// is the row axis (the one sharded); the other axes form a row.
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "base/ids.h"
#include "base/dp_policy.h"
#include "base/dtype.h"
#include "base/shape.h"

namespace kb {

// Every shard of a placed tensor starts on this boundary of its channel (bursts then
// never straddle two tensors).
constexpr std::uint64_t kShardAlign = 256;  // bytes

// Where one (cube, pe) of the group keeps its rows: byte offset in that PE's HBM channel.
struct ShardPlacement {
  CubeId cube;
  PeId pe;
  std::uint64_t offset = 0;
  RowRange rows;
};

class DeviceTensor {
 public:
  struct Layout {
    std::string name;
    Shape shape;
    DType dtype = DType::fp32;
    DPPolicy policy;
    SipId device;
    std::vector<CubeId> cubes;              // the group, in group order
    std::vector<ShardPlacement> placements;  // [cube_in_group * P + pe]
  };

  DeviceTensor() = default;
  explicit DeviceTensor(std::shared_ptr<const Layout> layout) : layout_(std::move(layout)) {}

  bool valid() const { return static_cast<bool>(layout_); }
  const std::string& name() const { return layout_->name; }
  const Shape& shape() const { return layout_->shape; }
  DType dtype() const { return layout_->dtype; }
  const DPPolicy& policy() const { return layout_->policy; }
  SipId device() const { return layout_->device; }
  std::uint64_t rows() const { return layout_->shape.empty() ? 1 : static_cast<std::uint64_t>(layout_->shape[0]); }
  std::uint64_t cols() const;
  std::uint64_t row_bytes() const { return cols() * dtype_bytes(dtype()); }
  const std::vector<CubeId>& cubes() const { return layout_->cubes; }
  const std::vector<ShardPlacement>& placements() const { return layout_->placements; }
  std::optional<std::uint32_t> cube_index(CubeId c) const;
  // The placement of PE `pe` of `cube`, or nullptr when that PE holds no part of it.
  const ShardPlacement* shard_at(CubeId cube, PeId pe) const;

 private:
  std::shared_ptr<const Layout> layout_;
};

}  // namespace kb
