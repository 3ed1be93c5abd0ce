// `kernbench run --jobs N`: a run split over processes by SIP, or by CUBE group past one
// part per SIP, gives the single-process run's op log, result (its critical path and
// energy included), power trace and report, byte for byte (apart from wall-time figures).
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include <nlohmann/json.hpp>

#include "tests/sc_main/cli_support.h"

namespace kb::test {
namespace {

std::string file_text(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// The report without its wall-time and simulator-speed lines.
std::string model_lines(const std::string& report) {
  std::istringstream in(report);
  std::string out;
  for (std::string line; std::getline(in, line);)
    if (line.find("wall time") == std::string::npos && line.find("simulator ") == std::string::npos) out += line + "\n";
  return out;
}

// `jobs`: the splits to compare with one process; the last one's op log is also written
// alone (as the run goes, the parts' files merged by PE) and compared.
void expect_split_equals_serial(const std::string& name, const std::string& args,
                                const std::vector<int>& splits = {2, 4, 8}) {
  const std::string dir = temp_dir(name);
  std::map<int, Result> runs;
  std::vector<int> all = {1};
  all.insert(all.end(), splits.begin(), splits.end());
  for (const int jobs : all) {
    const std::string stem = dir + "/j" + std::to_string(jobs);
    runs[jobs] = run("run " + args + " --jobs " + std::to_string(jobs) + " --json " + stem +
                     ".json --op-log " + stem + ".jsonl --timeline " + stem +
                     ".tl.json --power-trace " + stem + ".power.csv");
    ASSERT_EQ(runs[jobs].code, 0) << runs[jobs].out;
  }
  const std::string serial_log = file_text(dir + "/j1.jsonl");
  ASSERT_FALSE(serial_log.empty());
  auto result = [&](int jobs) {
    auto j = nlohmann::json::parse(file_text(dir + "/j" + std::to_string(jobs) + ".json"));
    j.erase("wall");
    return j;
  };
  // The attribution is there to compare: the slowest device's, summing to the latency.
  const nlohmann::json serial = result(1);
  std::uint64_t attributed = 0;
  for (const auto& [cause, cycles] : serial.at("critical_path").items()) attributed += cycles.get<std::uint64_t>();
  EXPECT_EQ(attributed, serial.at("simulated_cycles").get<std::uint64_t>());
  const std::string alone = dir + "/alone.csv";
  const Result streamed = run("run " + args + " --jobs " + std::to_string(splits.back()) + " --op-log " + alone);
  ASSERT_EQ(streamed.code, 0) << streamed.out;
  const Result serial_csv = run("run " + args + " --op-log " + dir + "/serial.csv");
  ASSERT_EQ(serial_csv.code, 0) << serial_csv.out;
  EXPECT_EQ(file_text(alone), file_text(dir + "/serial.csv")) << "op log written alone, --jobs " << splits.back();
  for (const int jobs : splits) {
    EXPECT_EQ(file_text(dir + "/j" + std::to_string(jobs) + ".jsonl"), serial_log) << "op log, --jobs " << jobs;
    EXPECT_EQ(file_text(dir + "/j" + std::to_string(jobs) + ".tl.json"), file_text(dir + "/j1.tl.json"))
        << "timeline, --jobs " << jobs;
    EXPECT_EQ(result(jobs), result(1)) << "result, --jobs " << jobs;
    EXPECT_EQ(file_text(dir + "/j" + std::to_string(jobs) + ".power.csv"),
              file_text(dir + "/j1.power.csv"))
        << "power trace, --jobs " << jobs;
    EXPECT_EQ(model_lines(runs[jobs].out), model_lines(runs[1].out)) << "report, --jobs " << jobs;
  }
}

TEST(Jobs, SplitDecodeEqualsTheSingleProcessRun) { expect_split_equals_serial("jobs_decode", "--seq-len 4096"); }

// Groups of 2 x 2 cubes: a SIP's groups interleave in cube order (group 0 holds cubes 0,
// 1, 4, 5 and group 1 cubes 2, 3, 6, 7), so the parts' op logs and utilisation rows
// interleave too, and every group ends at the same cycle (the critical path is the one
// ending on the first PE).
TEST(Jobs, SplitByInterleavedGroupsEqualsTheSingleProcessRun) {
  expect_split_equals_serial("jobs_groups", "--seq-len 2048 --heads-kv 4 --heads-q 32 --cubes-per-group 4 --pes 8 --set system.sips=1", {2, 4});
}

// Two SIPs of two groups each (two replicas per head): 2 parts by SIP, 4 by group.
TEST(Jobs, SplitPrefillEqualsTheSingleProcessRun) {
  expect_split_equals_serial("jobs_prefill",
                             "--kernel gqa_prefill --seq-len 512 --heads-q 16 --heads-kv 2 --cubes-per-group 8 --devices 0,1",
                             {2, 4});
}

TEST(Jobs, SplitBatchedDecodeEqualsTheSingleProcessRun) {
  expect_split_equals_serial("jobs_batch", "--kernel gqa_decode_batch --batch random:24:64-2048:3");
}

// The SIPs of a collective exchange messages over the links: the parts simulate them in
// step, window by window, and the critical path goes from part to part.
TEST(Jobs, SplitCoupledSipsEqualTheSingleProcessRun) {
  const std::string args = "--kernel collective --bytes 1MiB --algorithm ring";
  expect_split_equals_serial("jobs_coupled", args, {2, 3, 4});
  // What the comparison covers: the critical path marks ops of SIPs that different parts
  // simulate, and link records sit on every SIP.
  const std::string dir = temp_dir("jobs_coupled_path");
  ASSERT_EQ(run("run " + args + " --op-log " + dir + "/s.jsonl").code, 0);
  std::set<std::string> critical_sips, link_sips;
  std::istringstream in(file_text(dir + "/s.jsonl"));
  for (std::string line; std::getline(in, line);) {
    const auto r = nlohmann::json::parse(line);
    const std::string sip = r.at("pe").get<std::string>().substr(0, 4);
    if (!r.at("critical").empty()) critical_sips.insert(sip);
    if (r.at("engine") == "link") link_sips.insert(sip);
  }
  EXPECT_EQ(critical_sips, (std::set<std::string>{"sip0", "sip1", "sip2", "sip3"}));
  EXPECT_EQ(link_sips, critical_sips);
}

// On a ring of links, messages between SIPs 0 and 2 pass through SIP 1 or 3, which no
// device of the run holds: the first part simulates them too.
TEST(Jobs, SplitCoupledSipsPassingThroughOthersEqualTheSingleProcessRun) {
  expect_split_equals_serial("jobs_coupled_ring",
                             "--kernel collective --bytes 256KiB --op all_gather --devices 0,2 "
                             "--set system.links.topology=ring",
                             {2});
}

TEST(Jobs, WhatCannotBeSplitIsRefused) {
  Result r = run("run --kernel tiled_gemm --jobs 2");
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_NE(r.out.find("--jobs splits --kernel gqa_decode, gqa_decode_batch, gqa_prefill and collective by SIP and CUBE group; tiled_gemm runs in "
                       "one process"),
            std::string::npos)
      << r.out;
  r = run("run --data --seq-len 1024 --jobs 2");
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_NE(r.out.find("--jobs splits timing-mode runs"), std::string::npos) << r.out;
  r = run("run --jobs 0");
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_NE(r.out.find("--jobs '0': expected a whole number from 1 to 256"), std::string::npos) << r.out;
  // A part's unit must exist: decode at C = 8 has 2 groups per SIP.
  const std::string dir = temp_dir("jobs_bad_part");
  r = run("run --seq-len 1024 --simulate 0.2 --part " + dir + "/p.json");
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_NE(r.out.find("--simulate '0.2': SIP 0 has 2 CUBE group(s) in this run, numbered from 0"), std::string::npos)
      << r.out;
  EXPECT_FALSE(std::filesystem::exists(dir + "/p.json"));
}

}  // namespace
}  // namespace kb::test

namespace kb::test {
namespace {

// `mpirun -n RANKS kernbench run ARGS` gives the single-process op log, result and report.
void expect_ranks_equal_serial(const std::string& name, int ranks, const std::string& args) {
  const std::string dir = temp_dir(name);
  const std::string run_args = " run " + args + " --json ";
  const Result serial = run(run_args + dir + "/s.json --op-log " + dir + "/s.jsonl");
  const Result split = run_shell(mpirun() + " -n " + std::to_string(ranks) + " " + KERNBENCH_BINARY + run_args + dir +
                                 "/m.json --op-log " + dir + "/m.jsonl");
  ASSERT_EQ(serial.code, 0) << serial.out;
  ASSERT_EQ(split.code, 0) << split.out;
  EXPECT_EQ(file_text(dir + "/m.jsonl"), file_text(dir + "/s.jsonl"));
  auto result = [&](const std::string& f) {
    auto j = nlohmann::json::parse(file_text(dir + "/" + f));
    j.erase("wall");
    return j;
  };
  EXPECT_EQ(result("m.json"), result("s.json"));
  EXPECT_EQ(model_lines(split.out), model_lines(serial.out));
}

// Four ranks over one SIP's four groups of 2 x 2 cubes, which interleave in cube order.
TEST(Mpi, RunOverRanksEqualsTheSingleProcessRun) {
  if (const std::string why = mpi_unavailable(); !why.empty()) GTEST_SKIP() << why;
  expect_ranks_equal_serial("mpi_run", 4,
                            "--kernel gqa_prefill --seq-len 512 --heads-q 16 --heads-kv 2 --cubes-per-group 4 --devices 0");
}

// Three ranks over four coupled SIPs: parts of two SIPs and of one, in step through MPI.
TEST(Mpi, CoupledRunOverRanksEqualsTheSingleProcessRun) {
  if (const std::string why = mpi_unavailable(); !why.empty()) GTEST_SKIP() << why;
  expect_ranks_equal_serial("mpi_coupled", 3, "--kernel collective --bytes 1MiB --algorithm two_shot");
}

TEST(Mpi, BenchOverRanksWritesTheSingleProcessRows) {
  if (const std::string why = mpi_unavailable(); !why.empty()) GTEST_SKIP() << why;
  const std::string one = temp_dir("mpi_bench1"), two = temp_dir("mpi_bench2");
  const Result serial = run("bench gqa_llama70b --quick --out " + one + "/sweep.json");
  const Result ranks =
      run_shell(mpirun() + " -n 2 " + KERNBENCH_BINARY + " bench gqa_llama70b --quick --out " + two + "/sweep.json");
  ASSERT_EQ(serial.code, 0) << serial.out;
  ASSERT_EQ(ranks.code, 0) << ranks.out;
  auto rows = [](const std::string& f) {
    auto j = nlohmann::json::parse(file_text(f));
    for (auto& r : j["rows"]) r["result"].erase("wall");
    return j;
  };
  EXPECT_EQ(rows(two + "/sweep.json"), rows(one + "/sweep.json"));
  EXPECT_EQ(file_text(two + "/sp_table.json"), file_text(one + "/sp_table.json"));
}

}  // namespace
}  // namespace kb::test
