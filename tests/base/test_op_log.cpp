// The op log's CSV, read back with a real CSV parser: every row has the header's fields
// and every field its value, commas and quotes included. A log that keeps no record hands
// each to its listeners as it closes, and a file written as the run goes (OpLogFile) has
// the bytes of the log kept whole.
#include <gtest/gtest.h>

#include <array>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <unistd.h>

#include "base/op_log.h"
#include "base/op_log_file.h"
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

// Records of three PEs, opened in an interleaved issue order and closed in another, one
// with a line break and quotes in its tensor name.
struct Interleaved {
  std::vector<OpRecord> issued;
  std::vector<std::size_t> close_order;
  explicit Interleaved(std::array<PeCoord, 3> pes = {PeCoord{SipId(1), CubeId(0), PeId(2)},
                                                     PeCoord{SipId(0), CubeId(3), PeId(1)},
                                                     PeCoord{SipId(0), CubeId(0), PeId(5)}}) {
    for (std::uint64_t i = 0; i < 30; ++i) {
      OpRecord r;
      r.kernel = "k";
      r.pe = pes[i % 3];
      r.engine = i % 2 ? Name("dma") : Name("gemm");
      r.kind = Name::intern("op" + std::to_string(i));
      r.issue = i;
      r.start = i + 1;
      r.end = i + 10;
      r.bytes = 100 * i;
      r.tensor = i == 7 ? "a \"quoted\",\nname" : "t";
      issued.push_back(r);
      close_order.push_back((i * 7) % 30);  // 7 and 30 are coprime: every record once
    }
  }
  // Opens every record, sets its end and closes it in close_order (ids from `first`).
  void replay(OpLog& log, std::uint64_t first = 0) const {
    for (const OpRecord& r : issued) log.append(r);
    for (const std::size_t i : close_order) {
      log.at(first + i).end += 1;
      log.close(first + i);
    }
  }
};

std::string read_text(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

TEST(OpLogListeners, AnUnkeptLogHandsEveryRecordOverAsItClosesAndHoldsNone) {
  const Interleaved run;
  OpLog log;
  log.keep(false);
  std::vector<std::uint64_t> seen;
  std::uint64_t end_sum = 0;
  {
    const OpLog::Listening listening = log.listen([&](const OpRecord& r) {
      seen.push_back(r.id);
      end_sum += r.end;
    });
    run.replay(log);
  }
  EXPECT_EQ(log.size(), 30u);
  EXPECT_TRUE(log.records().empty());
  ASSERT_EQ(seen.size(), 30u);
  for (std::size_t i = 0; i < 30; ++i) EXPECT_EQ(seen[i], run.close_order[i]);  // final values, as closed
  EXPECT_EQ(end_sum, 30u * 10 + 29u * 30 / 2 + 30);
  EXPECT_THROW(log.at(3), std::out_of_range);  // gone once closed
  OpRecord late;
  late.kind = "late";
  log.append(late);
  log.close(30);  // no listener any more: nothing is called
  EXPECT_EQ(seen.size(), 30u);
  EXPECT_TRUE(log.records().empty());
}

// Writes `run` as the run goes to `path` (no record kept).
void stream(const Interleaved& run, const std::string& path, const std::map<std::uint64_t, CriticalSpans>& critical) {
  OpLog streamed;
  streamed.keep(false);
  OpLogFile file(path);
  const OpLog::Listening listening = streamed.listen([&](const OpRecord& r) { file.add(r); });
  run.replay(streamed);
  file.finish(critical);
}

TEST(OpLogFile, AFileWrittenAsTheRunGoesHasTheBytesOfTheLogKeptWhole) {
  const Interleaved run;
  // Another part's PEs, between the first part's in PE order (CUBE groups of one SIP).
  const Interleaved other({PeCoord{SipId(0), CubeId(1), PeId(0)}, PeCoord{SipId(1), CubeId(0), PeId(1)},
                           PeCoord{SipId(0), CubeId(4), PeId(7)}});
  const std::map<std::uint64_t, CriticalSpans> critical = {{4, {{3, 5}, {8, 9}}}, {25, {{20, 30}}}};
  const auto dir = std::filesystem::temp_directory_path() / ("kernbench_oplog_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  for (const std::string ext : {".jsonl", ".csv"}) {
    auto text_of = [&](const OpLog& log) { return ext == ".csv" ? log.to_csv() : log.to_jsonl(); };
    OpLog kept;
    run.replay(kept);
    for (const auto& [id, spans] : critical) kept.at(id).critical = spans;
    kept.group_by_pe(0);
    const std::string path = (dir / ("log" + ext)).string();
    stream(run, path, critical);
    EXPECT_EQ(read_text(path), text_of(kept)) << ext;
    EXPECT_EQ(std::distance(std::filesystem::directory_iterator(dir), {}), 1) << "the scratch file is removed";

    // Two parts of a split run merged by PE: numbered anew, one CSV header, the quoted
    // line break intact.
    const std::string part = (dir / ("part" + ext)).string(), merged = (dir / ("merged" + ext)).string();
    stream(other, part, {});
    merge_op_logs(merged, {path, part});
    OpLog both;
    run.replay(both);
    other.replay(both, 30);
    for (const auto& [id, spans] : critical) both.at(id).critical = spans;
    both.group_by_pe(0);
    EXPECT_EQ(read_text(merged), text_of(both)) << ext;
    for (const std::string& f : {path, part, merged}) std::filesystem::remove(f);
  }
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace kb
