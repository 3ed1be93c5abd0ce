#include "workloads/gqa_decode_batch/paged_kv.h"

#include <algorithm>
#include <limits>
#include <numeric>

#include "base/units.h"
#include "workloads/workload.h"

namespace kb::gqa {

using workloads::ConfigError;

std::uint64_t PagedKv::rows(std::uint32_t rank) const {
  std::uint64_t n = 0;
  for (const Page& p : ranks.at(rank)) n += p.rows;
  return n;
}

std::uint64_t PagedKv::pages() const {
  std::uint64_t n = 0;
  for (const auto& r : ranks) n += r.size();
  return n;
}

double PagedKv::imbalance() const {
  std::uint64_t total = 0, most = 0;
  for (std::uint32_t r = 0; r < ranks.size(); ++r) {
    total += rows(r);
    most = std::max(most, rows(r));
  }
  return total == 0 ? 1.0 : static_cast<double>(most) * static_cast<double>(ranks.size()) / static_cast<double>(total);
}

std::uint64_t PagedKv::cache_row(std::uint32_t request, std::uint64_t position, std::uint64_t rank_rows) const {
  const PageRef& page = tables.at(request).at(position / page_rows);
  return page.rank * rank_rows + static_cast<std::uint64_t>(page.slot) * page_rows + position % page_rows;
}

PagedKv allocate_pages(const std::vector<std::uint64_t>& lens, std::uint32_t page_rows, std::uint32_t ranks) {
  if (page_rows == 0) throw ConfigError("{page_rows} 0: a page holds at least one row", true);
  if (ranks == 0) throw ConfigError("a paged KV cache needs at least one rank");
  if (std::find(lens.begin(), lens.end(), 0) != lens.end())
    throw ConfigError("{batch}: a request of length 0 has no KV rows to attend to", true);
  const std::uint64_t total = std::accumulate(lens.begin(), lens.end(), std::uint64_t{0});
  PagedKv kv;
  kv.page_rows = page_rows;
  kv.ranks.resize(ranks);
  kv.tables.resize(lens.size());
  std::uint64_t before = 0;  // rows of the batch before the page
  for (std::uint32_t q = 0; q < lens.size(); ++q)
    for (std::uint64_t row = 0; row < lens[q]; row += page_rows) {
      // before x ranks: at most the batch's rows times the group's ranks, far below 2^64.
      const auto rank = static_cast<std::uint32_t>(before * ranks / total);
      const auto rows = static_cast<std::uint32_t>(std::min<std::uint64_t>(page_rows, lens[q] - row));
      kv.tables[q].push_back({rank, static_cast<std::uint32_t>(kv.ranks[rank].size())});
      kv.ranks[rank].push_back({q, row, rows});
      before += rows;
    }
  return kv;
}

PagedKv allocate_checked(const std::vector<std::uint64_t>& lens, std::uint32_t page_rows, std::uint32_t ranks,
                         std::uint64_t page_bytes, const Topology& topo) {
  constexpr std::uint64_t kMost = std::numeric_limits<std::uint64_t>::max();
  const std::uint64_t room = topo.cube.hbm.capacity / (2 * page_bytes);  // pages of K and V a channel holds
  auto refuse = [&](std::uint64_t fullest, const char* exact) {
    const std::string need = fullest > kMost / (2 * page_bytes) ? std::string("more than 2^64 bytes")
                                                               : exact + units::format_bytes(2 * page_bytes * fullest);
    throw ConfigError("the batch's K and V pages need " + need + " in the fullest HBM channel (" +
                      std::to_string(fullest) + " pages of " + std::to_string(page_rows) +
                      " rows, K and V); a channel holds " + units::format_bytes(topo.cube.hbm.capacity) +
                      ": give shorter or fewer requests, or more SIPs");
  };
  // First without a page table: some rank holds at least 1/R of the pages, so a batch
  // far over the machine (a sum that overflows too) is refused before its pages are dealt.
  std::uint64_t pages = 0;
  for (const std::uint64_t len : lens) {
    const std::uint64_t n = page_rows == 0 || len == 0 ? 0 : (len - 1) / page_rows + 1;
    pages = n > kMost - pages ? kMost : pages + n;
  }
  if (ranks > 0 && pages > room * ranks) refuse((pages - 1) / ranks + 1, "at least ");
  PagedKv kv = allocate_pages(lens, page_rows, ranks);
  std::size_t most = 0;
  for (const auto& r : kv.ranks) most = std::max(most, r.size());
  if (most > room) refuse(most, "");
  return kv;
}

}  // namespace kb::gqa
