// --max-sim-time and --timeout: a run stops cleanly at the limit with a message, exit
// code 1 and results marked partial; a limit it never reaches changes nothing.
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "tests/sc_main/cli_support.h"

namespace kb::test {
namespace {

nlohmann::json json_of(const std::string& path) {
  std::ifstream in(path);
  return nlohmann::json::parse(in);
}

std::string text_of(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

TEST(Limits, MaxSimTimeStopsTheRunWithPartialResults) {
  const std::string dir = temp_dir("limit_cycles");
  const Result r = run("run --max-sim-time 3000cycles --json " + dir + "/r.json --op-log " + dir + "/ops.jsonl");
  EXPECT_EQ(r.code, 1) << r.out;
  EXPECT_NE(r.out.find("run stopped: stopped by the limit of 3000 simulated cycles at cycle"), std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("PEs still running"), std::string::npos) << r.out;
  const auto j = json_of(dir + "/r.json");
  EXPECT_EQ(j["partial"], true);
  EXPECT_LE(j["cycles_reached"].get<std::uint64_t>(), 3000u);
  std::ifstream log(dir + "/ops.jsonl");
  std::size_t records = 0;
  for (std::string line; std::getline(log, line); ++records)
    EXPECT_LE(nlohmann::json::parse(line)["end"].get<std::uint64_t>(), 3000u) << line;
  EXPECT_EQ(records, j["op_log"]["records"].get<std::size_t>());
  EXPECT_GT(records, 0u);
}

TEST(Limits, TimeoutStopsALongRunOnTime) {
  const std::string dir = temp_dir("limit_wall");
  const Result r = run("run --kernel gqa_prefill --seq-len 16384 --timeout 0.5 --json " + dir + "/r.json");
  EXPECT_EQ(r.code, 1) << r.out;
  EXPECT_NE(r.out.find("run stopped: stopped by the limit of 0.5 s of wall time"), std::string::npos) << r.out;
  const auto j = json_of(dir + "/r.json");
  EXPECT_EQ(j["partial"], true);
  EXPECT_GT(j["cycles_reached"].get<std::uint64_t>(), 0u);
}

TEST(Limits, ALimitNotReachedChangesNothing) {
  const std::string dir = temp_dir("limit_none");
  const Result a = run("run --kernel gqa_prefill --seq-len 1024 --heads-q 16 --heads-kv 2 --op-log " + dir + "/a.jsonl");
  const Result b = run("run --kernel gqa_prefill --seq-len 1024 --heads-q 16 --heads-kv 2 --max-sim-time 100000000 "
                       "--timeout 1000 --op-log " + dir + "/b.jsonl");
  ASSERT_EQ(a.code, 0) << a.out;
  ASSERT_EQ(b.code, 0) << b.out;
  EXPECT_EQ(text_of(dir + "/a.jsonl"), text_of(dir + "/b.jsonl"));
}

TEST(Limits, BadLimitsAreUsageErrors) {
  Result r = run("run --max-sim-time 0");
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_NE(r.out.find("--max-sim-time '0': expected a number of cycles above 0"), std::string::npos) << r.out;
  r = run("run --timeout -3");
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_NE(r.out.find("--timeout '-3': expected seconds of wall time above 0"), std::string::npos) << r.out;
  r = run("run --kernel hbm_stream --timeout 5");
  EXPECT_EQ(r.code, 2) << r.out;
}

}  // namespace
}  // namespace kb::test
