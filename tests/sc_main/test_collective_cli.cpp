// The collective workload from the command line: its report, a link's numbers swept
// with --set (halve the bandwidth and a bandwidth-bound all-reduce's busbw halves), and
// its check failing the run's exit code only when asked for.
#include <gtest/gtest.h>

#include <regex>

#include "tests/sc_main/cli_support.h"

namespace kb {
namespace {

using test::run;

double figure(const std::string& out, const std::string& name) {
  std::smatch m;
  EXPECT_TRUE(std::regex_search(out, m, std::regex(name + " +([0-9.]+) GB/s"))) << out;
  return m.empty() ? 0 : std::stod(m[1]);
}

TEST(CollectiveCli, ReportsTheBandwidthsAndPassesItsCheck) {
  const auto r = run("run --kernel collective --op all_reduce --bytes 64KiB --algorithm two_shot --data --check");
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("all_reduce of 64KiB per rank, 4 ranks (sip) of 128 PEs each, by two_shot"), std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("link_peak_busbw 450.0 GB/s"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find(": PASS"), std::string::npos) << r.out;
  // busbw = algbw x 2 (n - 1) / n (nccl-tests)
  EXPECT_NEAR(figure(r.out, "busbw"), figure(r.out, "algbw") * 1.5, 0.01);
}

std::uint64_t cycles(const std::string& out) {
  std::smatch m;
  EXPECT_TRUE(std::regex_search(out, m, std::regex("simulated +([0-9]+) cycles"))) << out;
  return m.empty() ? 0 : std::stoull(m[1]);
}

// Two-shot on 32 MiB keeps every link direction busy for 2 x 32 MiB / 4 of bytes: at half
// the bandwidth that busy time doubles, and the run moves by it (within 5%).
TEST(CollectiveCli, HalfTheLinkBandwidthMovesTheRunByTheLinksBusyTime) {
  const std::string base = "run --kernel collective --bytes 32MiB --algorithm two_shot";
  const auto full = run(base);
  const auto half = run(base + " --set system.links.bandwidth=75GB/s");
  ASSERT_EQ(full.code, 0) << full.out;
  ASSERT_EQ(half.code, 0) << half.out;
  EXPECT_NE(half.out.find("link_peak_busbw 225.0 GB/s"), std::string::npos) << half.out;
  const double busy = 2.0 * (32 << 20) / 4 / 150;  // a direction's busy cycles at full bandwidth
  EXPECT_NEAR(static_cast<double>(cycles(half.out)) / (static_cast<double>(cycles(full.out)) + busy), 1.0, 0.05);
  EXPECT_GT(figure(full.out, "busbw") / figure(half.out, "busbw"), 1.8);
}

TEST(CollectiveCli, BadKnobsAreUsageErrors) {
  auto r = run("run --kernel collective --op all_sum");
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.out.find("--op 'all_sum': allowed values: all_reduce, reduce_scatter, all_gather, broadcast, reduce"),
            std::string::npos) << r.out;
  r = run("run --kernel collective --bytes 100B");
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.out.find("--bytes '100B': a rank's buffer must be a multiple of 512B"), std::string::npos) << r.out;
  r = run("run --kernel collective --devices 0");
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.out.find("gives 1 rank: a collective needs 2 or more"), std::string::npos) << r.out;
  r = run("run --kernel collective --check");
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.out.find("--check needs --data"), std::string::npos) << r.out;
}

}  // namespace
}  // namespace kb
