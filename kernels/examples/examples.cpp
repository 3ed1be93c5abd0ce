#include "kernels/examples/examples.h"

#include <algorithm>
#include <array>

namespace kb::kernels {
namespace {

// The row tiles of this PE's shard of t.
std::vector<RowRange> row_tiles(const tl::Ctx& tl, const DeviceTensor& t, std::uint32_t tile) {
  const RowRange mine = tl.shard_rows(t);
  std::vector<RowRange> out;
  for (std::uint64_t r = mine.begin; r < mine.end(); r += tile)
    out.push_back({r, std::min<std::uint64_t>(tile, mine.end() - r)});
  return out;
}

// Two persistent buffers of `rows` x `cols`: tile i+1 fills one while tile i is used
// from the other.
std::array<tl::Tensor, 2> ping_pong(tl::Ctx& tl, std::uint32_t rows, std::int64_t cols, DType dtype,
                                    const std::string& name) {
  return {tl.persistent({rows, cols}, dtype, name + ".ping"), tl.persistent({rows, cols}, dtype, name + ".pong")};
}

}  // namespace

void tiled_gemm(tl::Ctx& tl, DeviceTensor a, DeviceTensor b, DeviceTensor c, std::uint32_t m_tile,
                std::uint32_t k_tile) {
  const auto tiles = row_tiles(tl, a, m_tile);
  if (tiles.empty()) return;
  const auto n = static_cast<std::int64_t>(c.cols());
  const auto a_buf = ping_pong(tl, m_tile, static_cast<std::int64_t>(a.cols()), a.dtype(), a.name());
  const auto acc_buf = ping_pong(tl, m_tile, n, DType::fp32, "acc");
  const auto c_buf = ping_pong(tl, m_tile, n, c.dtype(), c.name());
  const tl::Tensor b_ref = tl.ref(b, tl.shard_rows(b));
  tl::Tensor next = tl.load(a, tiles[0], &a_buf[0]);
  for (std::size_t i = 0; i < tiles.size(); ++i) {
    const auto scope = tl.scratch_scope();  // holds the composite's staging buffers
    const tl::Tensor a_tile = next;
    if (i + 1 < tiles.size()) next = tl.load(a, tiles[i + 1], &a_buf[(i + 1) % 2]);
    const auto rows = static_cast<std::uint32_t>(tiles[i].count);
    const tl::Tensor acc = tl.rows(acc_buf[i % 2], 0, rows);
    tl::CompositeOpts opts;
    opts.tile_rows = k_tile;
    opts.out = &acc;
    tl.composite(a_tile, b_ref, opts);
    if (c.dtype() == DType::fp32) {
      tl.store(c, tiles[i], acc);
    } else {
      const tl::Tensor out = tl.rows(c_buf[i % 2], 0, rows);
      tl.copy(acc, out);
      tl.store(c, tiles[i], out);
    }
  }
}

void row_softmax(tl::Ctx& tl, DeviceTensor x, DeviceTensor y, std::uint32_t m_tile) {
  const auto tiles = row_tiles(tl, x, m_tile);
  if (tiles.empty()) return;
  const auto buf = ping_pong(tl, m_tile, static_cast<std::int64_t>(x.cols()), x.dtype(), x.name());
  tl::Tensor next = tl.load(x, tiles[0], &buf[0]);
  for (std::size_t i = 0; i < tiles.size(); ++i) {
    const auto scope = tl.scratch_scope();
    const tl::Tensor xt = next;
    if (i + 1 < tiles.size()) next = tl.load(x, tiles[i + 1], &buf[(i + 1) % 2]);
    const tl::Tensor row_max = tl.max(xt, 1);
    const tl::Tensor shifted = tl.sub(xt, row_max);
    const tl::Tensor e = tl.exp(shifted);
    const tl::Tensor row_sum = tl.sum(e, 1);
    const tl::Tensor out = tl.div(e, row_sum);
    const tl::Tensor stored = y.dtype() == DType::fp32 ? out : tl.cast(out, y.dtype());
    tl.store(y, tiles[i], stored);
  }
}

}  // namespace kb::kernels
