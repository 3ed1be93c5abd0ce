#include "kernels/nn/linear.h"

#include <algorithm>
#include <cmath>

namespace kb::nn {

namespace {

// Staged tiles in flight: enough that a tile's HBM latency hides behind the others'
// transfers, whatever the width of the PE's slice.
constexpr std::uint32_t kStages = 4;

}  // namespace

Preloaded plan_preload(const tl::Ctx& tl, const tl::Tensor& w_t, std::uint64_t bytes) {
  Preloaded p;
  p.tile_rows = stream_tile_rows(tl, w_t);
  const std::uint64_t row_bytes = std::uint64_t{w_t.cols()} * dtype_bytes(w_t.dtype());
  p.rows = bytes >= w_t.rows() * row_bytes
               ? w_t.rows()
               : static_cast<std::uint32_t>(bytes / (p.tile_rows * row_bytes) * p.tile_rows);
  p.stage_rows = p.rows + (p.rows < w_t.rows() ? kStages * p.tile_rows : 0);
  return p;
}

Preloaded preload(tl::Ctx& tl, const tl::Tensor& w_t, std::uint64_t bytes) {
  Preloaded p = plan_preload(tl, w_t, bytes);
  if (!p.rows) return p;  // no stage: the linear stages its stream itself, when it runs
  p.stage = tl.empty({p.stage_rows, w_t.cols()}, w_t.dtype(), "stage");
  preload_into(tl, w_t, p);
  return p;
}

void preload_into(tl::Ctx& tl, const tl::Tensor& w_t, const Preloaded& p) {
  if (p.rows) tl.preload(w_t, p.rows, p.stage);
}

tl::Tensor linear(tl::Ctx& tl, const tl::Tensor& x, const tl::Tensor& w_t, const tl::Tensor* bias,
                  std::uint32_t tile_rows, const Preloaded* pre) {
  tl::CompositeOpts opts;
  tl::Tensor stage;
  if (pre && pre->rows) {
    opts.tile_rows = pre->tile_rows;
    opts.preloaded_rows = pre->rows;
    stage = pre->stage;
  } else {
    opts.tile_rows = tile_rows ? tile_rows : stream_tile_rows(tl, w_t);
    stage = tl.empty({static_cast<std::int64_t>(kStages) * opts.tile_rows, w_t.cols()}, w_t.dtype(), "stage");
  }
  opts.stage = &stage;
  const tl::Tensor y = tl.composite(x, w_t, opts);
  return bias ? tl.add(y, *bias, &y) : y;
}

std::uint32_t stream_tile_rows(const tl::Ctx& tl, const tl::Tensor& w) {
  return stream_tile_rows(tl.topology(), w.cols(), w.dtype());
}

std::uint64_t stream_stage_bytes(const Topology& topo, std::uint32_t cols, DType dtype) {
  return std::uint64_t{kStages} * stream_tile_rows(topo, cols, dtype) * cols * dtype_bytes(dtype);
}

std::uint32_t stream_tile_rows(const Topology& topo, std::uint32_t cols, DType dtype) {
  const std::uint64_t row_bytes = std::uint64_t{cols} * dtype_bytes(dtype);
  const std::uint64_t fit = std::max<std::uint64_t>(1, std::min<std::uint64_t>(512, topo.pe.tcm_bytes / 8 / (kStages * row_bytes)));
  // Small tiles start the GEMMs early and leave little for the last one; but a tile's GEMM
  // (a row of W^T a cycle per 64 outputs, plus the array's fill) must keep up with its
  // bytes from HBM, so a tile has at least twice the rows where the two break even.
  const double bytes_per_row = static_cast<double>(row_bytes) / static_cast<double>(topo.cube.hbm.bytes_per_cycle);
  const double gemm_per_row = static_cast<double>((cols + topo.pe.gemm.cols - 1) / topo.pe.gemm.cols);
  if (bytes_per_row <= gemm_per_row) return static_cast<std::uint32_t>(fit);  // GEMM-bound at any size
  const auto even = static_cast<std::uint64_t>(
      std::ceil(static_cast<double>(topo.pe.gemm.rows + topo.pe.gemm.cols) / (bytes_per_row - gemm_per_row)));
  const std::uint64_t rows = std::max<std::uint64_t>(16 * 1024 / row_bytes, 2 * even);
  return static_cast<std::uint32_t>(std::clamp<std::uint64_t>(rows, 1, fit));
}

}  // namespace kb::nn
