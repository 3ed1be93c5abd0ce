// Critical-path attribution (docs/critical_path.md), tested by its physics: a run bound
// by a resource attributes its latency to it, and halving that resource's speed moves
// the latency by the attributed share.
#include <gtest/gtest.h>

#include <fstream>

#include <nlohmann/json.hpp>

#include "tests/sc_main/cli_support.h"

namespace kb::test {
namespace {

struct Attribution {
  std::uint64_t cycles = 0;
  std::map<std::string, std::uint64_t> by_cause;
  double share(const std::string& cause) const {
    const auto it = by_cause.find(cause);
    return it == by_cause.end() ? 0.0 : static_cast<double>(it->second) / static_cast<double>(cycles);
  }
};

// `kernbench run ARGS --json`: the latency and its attribution, which sums to it.
Attribution attribute(const std::string& name, const std::string& args) {
  const std::string json = temp_dir("critical_" + name) + "/r.json";
  const Result r = run("run " + args + " --json " + json);
  EXPECT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("critical path"), std::string::npos) << "the report prints the attribution\n" << r.out;
  std::ifstream in(json);
  const auto j = nlohmann::json::parse(in);
  Attribution a;
  a.cycles = j.at("simulated_cycles");
  std::uint64_t sum = 0;
  for (const auto& [cause, cycles] : j.at("critical_path").items()) {
    a.by_cause[cause] = cycles.get<std::uint64_t>();
    sum += a.by_cause[cause];
  }
  EXPECT_EQ(sum, a.cycles) << "the attribution sums to the latency: " << j.at("critical_path").dump();
  return a;
}

// `bound` attributes at least `least` of its latency to `cause`; `slowed` (that resource
// at half speed) takes longer by that share of the latency, within 15% of it.
void expect_bound_by(const std::string& cause, double least, const Attribution& bound, const Attribution& slowed) {
  const double share = bound.share(cause);
  EXPECT_GE(share, least) << cause << " share of " << bound.cycles << " cycles";
  const double growth = static_cast<double>(slowed.cycles) / static_cast<double>(bound.cycles) - 1;
  EXPECT_NEAR(growth, share, 0.15 * share) << "latency " << bound.cycles << " -> " << slowed.cycles << " with " << cause
                                           << " at half speed; attributed share " << share;
}

const std::string kOneSip = "--kernel gqa_prefill --set system.sips=1 --heads-kv 2 --heads-q 16";

TEST(CriticalPath, NocBoundPrefillIsAttributedToTheNoc) {
  const std::string args = kOneSip + " --seq-len 4096";
  // Each block crosses each ring link once, so it takes a slow NOC to bind.
  expect_bound_by("noc", 0.5, attribute("noc", args + " --set sip.noc.link_bandwidth=2B/cycle"),
                  attribute("noc_half", args + " --set sip.noc.link_bandwidth=1B/cycle"));
}

TEST(CriticalPath, LongDecodeIsAttributedToHbm) {
  const std::string args = "--seq-len 131072";
  expect_bound_by("hbm", 0.5, attribute("hbm", args),
                  attribute("hbm_half", args + " --set cube.hbm.bandwidth=32B/cycle"));
}

TEST(CriticalPath, LongPrefillIsAttributedToTheGemmEngine) {
  const std::string args = kOneSip + " --seq-len 16384";
  expect_bound_by("gemm", 0.7, attribute("gemm", args), attribute("gemm_half", args + " --set pe.gemm.rows=8"));
}

TEST(CriticalPath, AnHbmStreamIsAllHbm) {
  for (const char* way : {"", " --write"}) {
    const Attribution a = attribute("stream", std::string("--kernel hbm_stream --bytes 64KiB") + way);
    EXPECT_EQ(a.by_cause, (std::map<std::string, std::uint64_t>{{"hbm", a.cycles}})) << way;
  }
}

}  // namespace
}  // namespace kb::test
