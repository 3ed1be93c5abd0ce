#include "kernels/nn/kv_cache.h"

namespace kb::nn {

namespace {

// The shard of `cache` that holds global row `row`.
std::size_t shard_of(const DeviceTensor& cache, std::uint64_t row) {
  const auto& shards = cache.placements();
  for (std::size_t s = 0; s < shards.size(); ++s)
    if (row >= shards[s].rows.begin && row < shards[s].rows.begin + shards[s].rows.count) return s;
  return shards.size();
}

}  // namespace

void kv_append(tl::Ctx& tl, const tl::Tensor& x, const DeviceTensor& cache, const std::vector<std::uint64_t>& rows) {
  if (rows.size() != x.rows()) tl.fail("kv_append", "one cache row per row of x");
  if (x.cols() != cache.cols()) tl.fail("kv_append", "x's rows are not the cache's width");
  const tl::Tensor stored = tl.cast(x, cache.dtype());
  for (std::size_t t = 0; t < rows.size();) {
    std::size_t run = 1;
    while (t + run < rows.size() && rows[t + run] == rows[t] + run &&
           shard_of(cache, rows[t + run]) == shard_of(cache, rows[t]))
      ++run;
    tl.store(cache, {rows[t], run}, tl.rows(stored, static_cast<std::uint32_t>(t), static_cast<std::uint32_t>(run)));
    t += run;
  }
}

}  // namespace kb::nn
