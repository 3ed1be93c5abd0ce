#pragma once
// The paged KV cache of a decode batch (docs/gqa_decode_batch.md). Per KV head, each
// request's K and V rows sit in pages of `page_rows` rows, filled from the front (only a
// request's last page is partly filled), over the R ranks (PEs) of the head's group. The
// allocator deals the pages, in request order, to the ranks in contiguous runs: a page
// goes to rank floor(first row x R / all rows), where its first row counts over the
// whole batch, so every rank holds about all rows / R and the pages a rank reads are in
// its own HBM channel. A request's pages may span ranks; its page table says where each is.
#include <cstdint>
#include <vector>

#include "base/topology.h"

namespace kb::gqa {

struct Page {
  std::uint32_t request = 0;
  std::uint64_t row0 = 0;  // its first row in the request
  std::uint32_t rows = 0;  // the rows it holds: page_rows but for a request's last page
};

struct PageRef {
  std::uint32_t rank = 0;  // the rank whose channel holds it
  std::uint32_t slot = 0;  // its place among that rank's pages
};

struct PagedKv {
  std::uint32_t page_rows = 0;
  std::vector<std::vector<Page>> ranks;      // per rank: its pages, in slot order
  std::vector<std::vector<PageRef>> tables;  // per request: its page table, in row order

  std::uint64_t rows(std::uint32_t rank) const;  // the KV rows a rank holds
  // The row of a KV head's K (and V) tensor, [ranks x rank_rows, d] with rank r's pages
  // from row r x rank_rows in slot order, that holds `position` of `request`: where the
  // step's KV-cache append writes it (kernels/nn/kv_cache.h) and the decode reads it.
  std::uint64_t cache_row(std::uint32_t request, std::uint64_t position, std::uint64_t rank_rows) const;
  std::uint64_t pages() const;
  double imbalance() const;  // the most rows of a rank over the mean (1: perfect)
};

// Throws workloads::ConfigError when a length is 0, page_rows is 0 or ranks is 0.
PagedKv allocate_pages(const std::vector<std::uint64_t>& lens, std::uint32_t page_rows, std::uint32_t ranks);

// allocate_pages, when its pages fit the HBM channels (`page_bytes` each of K and of V);
// else throws workloads::ConfigError saying how much the fullest channel needs and how
// much it has. A batch far too large (whose mean rank overflows a channel) is refused
// before any page is dealt.
PagedKv allocate_checked(const std::vector<std::uint64_t>& lens, std::uint32_t page_rows, std::uint32_t ranks,
                         std::uint64_t page_bytes, const Topology& topo);

}  // namespace kb::gqa
