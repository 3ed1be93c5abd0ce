// The op log's CSV, read back with a real CSV parser: every row has the header's fields
// and every field its value, commas and quotes included.
#include <gtest/gtest.h>

#include "base/op_log.h"
#include "tests/csv_support.h"

namespace kb {
namespace {

TEST(OpLogCsv, EveryRowHasTheHeadersFieldsWithCommasAndQuotesIntact) {
  OpLog log;
  const PeCoord pe{SipId(0), CubeId(3), PeId(1)};
  log.append({.id = 0, .kernel = "row_softmax", .pe = pe, .engine = "dma", .kind = "load", .issue = 4, .start = 4,
              .end = 200, .bytes = 8192, .flops = 0, .peer = std::nullopt, .tag = 0, .tensor = "x",
              .shape = "[64, 64]", .hops = 0, .critical = {}});
  log.append({.id = 0, .kernel = "row_softmax", .pe = pe, .engine = "ipcq", .kind = "send", .issue = 4, .start = 4,
              .end = 200, .bytes = 8192, .flops = 0, .peer = PeCoord{SipId(0), CubeId(2), PeId(0)}, .tag = 7,
              .tensor = "odd \"name\", with a comma", .shape = "64 x 128 x 64", .hops = 1, .critical = {{4, 100}, {150, 200}}});

  const auto rows = test::parse_csv(log.to_csv());
  ASSERT_EQ(rows.size(), 3u);
  const std::vector<std::string> header = {"id",    "kernel", "pe",   "engine", "kind",   "issue", "start",
                                           "end",   "bytes",  "flops", "peer",  "tag",  "hops",  "tensor",
                                           "shape", "critical"};
  EXPECT_EQ(rows[0], header);
  const std::vector<std::string> first = {"0",    "row_softmax", "sip0.cube3.pe1", "dma", "load", "4", "4", "200",
                                          "8192", "0",           "",               "0",   "0",    "x", "[64, 64]",
                                          ""};
  EXPECT_EQ(rows[1], first);
  ASSERT_EQ(rows[2].size(), header.size());
  EXPECT_EQ(rows[2][10], "sip0.cube2.pe0");
  EXPECT_EQ(rows[2][13], "odd \"name\", with a comma");
  EXPECT_EQ(rows[2][14], "64 x 128 x 64");
  EXPECT_EQ(rows[2][15], "4-100 150-200");  // its spans on the critical path
}

}  // namespace
}  // namespace kb
