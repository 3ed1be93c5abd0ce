// The decode batch's lengths (--batch) and its paged KV cache: what the allocator promises.
#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <numeric>
#include <set>

#include "tests/support.h"
#include "workloads/gqa_decode_batch/batch_spec.h"
#include "workloads/gqa_decode_batch/paged_kv.h"
#include "workloads/workload.h"

namespace kb::gqa {
namespace {

using workloads::ConfigError;

std::string error_of(const std::string& spec) {
  try {
    parse_batch(spec);
  } catch (const ConfigError& e) {
    return e.text();
  }
  return "";
}

TEST(BatchSpec, ListsFilesAndRandomBatches) {
  EXPECT_EQ(parse_batch("32768,1024, 4096"), (std::vector<std::uint64_t>{32768, 1024, 4096}));
  const std::string path = ::testing::TempDir() + "batch_lengths.txt";
  std::ofstream(path) << "# a serving step\n1\n\n  300  # a short one\n70000\n";
  EXPECT_EQ(parse_batch("@" + path), (std::vector<std::uint64_t>{1, 300, 70000}));
  std::remove(path.c_str());
  const auto a = parse_batch("random:64:1024-32768:7"), b = parse_batch("random:64:1024-32768:7");
  ASSERT_EQ(a.size(), 64u);
  EXPECT_EQ(a, b) << "a seed gives one batch";
  EXPECT_NE(a, parse_batch("random:64:1024-32768:8"));
  for (const std::uint64_t len : a) {
    EXPECT_GE(len, 1024u);
    EXPECT_LE(len, 32768u);
  }
  EXPECT_EQ(parse_batch("random:3:5-5"), (std::vector<std::uint64_t>{5, 5, 5}));
}

TEST(BatchSpec, BadSpecsAreRefusedSayingWhat) {
  EXPECT_NE(error_of("1024,0").find("{batch} item 2 0"), std::string::npos) << error_of("1024,0");
  EXPECT_NE(error_of("").find("{batch} is empty"), std::string::npos);
  EXPECT_NE(error_of("1024,,5").find("item 2 ''"), std::string::npos) << error_of("1024,,5");
  EXPECT_NE(error_of("12k").find("'12k'"), std::string::npos);
  EXPECT_NE(error_of("random:4:100-10").find("MIN 100 is over MAX 10"), std::string::npos);
  EXPECT_NE(error_of("random:4:100").find("random:N:MIN-MAX[:SEED] expected"), std::string::npos);
  EXPECT_NE(error_of("random:0:1-2").find("N 0"), std::string::npos);
  EXPECT_NE(error_of("@/no/such/file").find("cannot read"), std::string::npos);
  const std::string path = ::testing::TempDir() + "bad_lengths.txt";
  std::ofstream(path) << "100\n# fine\nten\n";
  EXPECT_NE(error_of("@" + path).find(path + ":3: {batch} length 'ten'"), std::string::npos) << error_of("@" + path);
  std::remove(path.c_str());
}

// Every page of every request sits on exactly one rank, in request-row order; only a
// request's last page is partly filled; a rank's pages are one run of the batch's pages.
void expect_consistent(const std::vector<std::uint64_t>& lens, const PagedKv& kv) {
  std::uint64_t seen = 0;
  for (std::uint32_t q = 0; q < lens.size(); ++q) {
    std::uint64_t row = 0;
    for (std::size_t i = 0; i < kv.tables[q].size(); ++i) {
      const PageRef& at = kv.tables[q][i];
      const Page& p = kv.ranks.at(at.rank).at(at.slot);
      EXPECT_EQ(p.request, q);
      EXPECT_EQ(p.row0, row);
      EXPECT_EQ(p.rows, i + 1 < kv.tables[q].size() ? kv.page_rows : lens[q] - row) << "request " << q << " page " << i;
      row += p.rows;
      ++seen;
    }
    EXPECT_EQ(row, lens[q]);
  }
  EXPECT_EQ(seen, kv.pages()) << "a page no request's table names";
  std::uint32_t last_request = 0;
  for (const auto& rank : kv.ranks)
    for (const Page& p : rank) {
      EXPECT_GE(p.request, last_request) << "a rank's pages are not one run";
      last_request = p.request;
    }
}

TEST(PagedKv, PagesFillFromTheFrontAndRanksGetEqualRows) {
  const std::vector<std::uint64_t> ragged{1, 100, 64, 65, 5000, 6000};  // 1 row; not multiples of 64; the last longer
  const PagedKv kv = allocate_pages(ragged, 64, 8);
  expect_consistent(ragged, kv);
  EXPECT_EQ(kv.pages(), 1u + 2 + 1 + 2 + 79 + 94);
  // 11,230 rows over 8 ranks: 1,403.75 each; a cut falls inside a page at most.
  for (std::uint32_t r = 0; r < 8; ++r) EXPECT_NEAR(static_cast<double>(kv.rows(r)), 11230.0 / 8, 64.0) << "rank " << r;
  for (const char* spec : {"random:64:1024-32768:7", "random:256:128-4096:11"}) {
    const auto lens = parse_batch(spec);
    const PagedKv big = allocate_pages(lens, 64, 64);
    expect_consistent(lens, big);
    const double mean = static_cast<double>(std::accumulate(lens.begin(), lens.end(), std::uint64_t{0})) / 64;
    EXPECT_LE(big.imbalance(), (mean + 64) / mean) << spec;
    EXPECT_LE(big.imbalance(), 1.1) << spec;
  }
}

TEST(PagedKv, ABatchOfOneSpreadsOverEveryRankAsDecodeDoes) {
  const PagedKv kv = allocate_pages({32768}, 64, 64);
  for (std::uint32_t r = 0; r < 64; ++r) {
    ASSERT_EQ(kv.ranks[r].size(), 8u);
    EXPECT_EQ(kv.ranks[r].front().row0, r * 512u) << "rank r holds rows [512 r, 512 (r + 1)), decode's shard";
  }
  EXPECT_DOUBLE_EQ(kv.imbalance(), 1.0);
}

// Every position of every request has its own cache row, inside the pages of its rank,
// at its offset in its page: what the decode reads as the request's rows.
TEST(PagedKv, EachPositionHasOneCacheRowInItsPage) {
  const std::vector<std::uint64_t> lens{1, 100, 64, 65, 500};
  const PagedKv kv = allocate_pages(lens, 64, 4);
  const std::uint64_t rank_rows = 64 * 8;
  std::set<std::uint64_t> seen;
  for (std::uint32_t q = 0; q < lens.size(); ++q)
    for (std::uint64_t p = 0; p < lens[q]; ++p) {
      const std::uint64_t row = kv.cache_row(q, p, rank_rows);
      EXPECT_TRUE(seen.insert(row).second) << "request " << q << " position " << p;
      const std::uint32_t rank = static_cast<std::uint32_t>(row / rank_rows), slot = static_cast<std::uint32_t>(row % rank_rows / 64);
      const Page& page = kv.ranks.at(rank).at(slot);
      EXPECT_EQ(page.request, q);
      EXPECT_EQ(page.row0 + row % 64, p);
    }
  EXPECT_EQ(seen.size(), 1u + 100 + 64 + 65 + 500);
}

TEST(PagedKv, BadInputAndAFullChannelAreRefused) {
  EXPECT_THROW(allocate_pages({10, 0}, 64, 8), ConfigError);
  EXPECT_THROW(allocate_pages({10}, 0, 8), ConfigError);
  const Topology topo = test::topology("llama70b_4sip");
  const std::uint64_t page_bytes = 64 * 128 * 2;  // 64 rows x d 128 x bf16
  // A channel holds 1 GiB: 32,768 pages of 32 KiB (K and V). One rank's 40,000 pages do not fit.
  auto refusal = [&](const std::vector<std::uint64_t>& lens, std::uint32_t ranks) {
    try {
      allocate_checked(lens, 64, ranks, page_bytes, topo);
    } catch (const ConfigError& e) {
      return e.text();
    }
    return std::string("no error");
  };
  const std::string one = refusal({40000ull * 64}, 1);
  EXPECT_NE(one.find("need at least 1250MiB"), std::string::npos) << one;  // 40,000 x 32 KiB: found without dealing
  EXPECT_NE(one.find("a channel holds 1GiB"), std::string::npos) << one;
  // A full channel fits: the pages are allocate_pages's.
  EXPECT_EQ(allocate_checked({32768ull * 64}, 64, 1, page_bytes, topo).pages(), 32768u);
  // 40,000 requests of one row, then one of 20,000 pages, over 2 ranks: 60,000 pages fit
  // two channels, but pages are dealt by rows: rank 0 takes those starting below row
  // 660,000, the 40,000 short ones and 9,688 of the long one's.
  std::vector<std::uint64_t> lens(40000, 1);
  lens.push_back(20000ull * 64);
  const std::string dealt = refusal(lens, 2);
  EXPECT_NE(dealt.find("(49688 pages"), std::string::npos) << dealt;
  EXPECT_EQ(dealt.find("at least"), std::string::npos) << dealt;
  // Lengths whose sum overflows 64 bits are refused before a page is dealt.
  const std::string huge = refusal({1ull << 63, 1ull << 63, 1ull << 63}, 64);
  EXPECT_NE(huge.find("need more than 2^64 bytes"), std::string::npos) << huge;
  const std::string mean = refusal({40000ull * 64 * 2, 40000ull * 64 * 2}, 4);  // 40,000 pages a rank at the least
  EXPECT_NE(mean.find("need at least 1250MiB"), std::string::npos) << mean;
  EXPECT_NE(mean.find("(40000 pages"), std::string::npos) << mean;
}

}  // namespace
}  // namespace kb::gqa
