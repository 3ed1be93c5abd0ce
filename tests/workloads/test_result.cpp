// The one result schema: JSON round trips, and the merge of a run split by SIP follows
// each figure's rule (sums, maxima, spans, shared values; derived ones recomputed).
#include <gtest/gtest.h>

#include "sc_main/partition.h"
#include "tests/support.h"
#include "workloads/result.h"
#include "workloads/workload.h"

namespace kb::workloads {
namespace {

Result part(std::uint32_t sip, std::uint64_t cycles, std::uint64_t bytes, double busy_max, std::uint64_t begin,
            std::uint64_t end) {
  Result r;
  r.workload = "gqa_prefill";
  r.topology_file = "t.yaml";
  r.topology_name = "t";
  r.mode = "timing";
  r.knobs = {{"seq_len", 1024}};
  r.devices = {SipId(0), SipId(1)};
  r.simulated_cycles = cycles;
  r.simulated_seconds = static_cast<double>(cycles) * 1e-9;
  r.add("ring.bytes", bytes, Merge::Sum);
  r.add("gemm_busy.max", busy_max, Merge::Max);
  r.add("roofline_cycles", 500.0, Merge::Same);
  r.add("breakdown.sweep", {{"begin", begin}, {"end", end}}, Merge::Widen);
  r.add("roofline_efficiency", 500.0 / static_cast<double>(cycles), Merge::Derived);
  r.use = Utilisation{cycles, {{"sip" + std::to_string(sip), 128, {{"gemm", {10, 900, 0, 4096}}}}}, {}};
  r.wall = {0.1 * (sip + 1), 2.0, 1000 + sip, 50};
  return r;
}

TEST(Result, JsonRoundTripKeepsEveryField) {
  const Result a = part(0, 1000, 64, 700.0, 10, 900);
  const nlohmann::json j = a.to_json();
  EXPECT_EQ(j["ring"]["bytes"], 64);  // dotted names nest
  EXPECT_EQ(j["breakdown"]["sweep"]["end"], 900);
  const Result b = Result::from_json(j);
  EXPECT_EQ(b.to_json(), j);
  EXPECT_EQ(b.figure("gemm_busy.max"), 700.0);
  EXPECT_EQ(b.use->sips.at(0).engines.at("gemm").busy_cycles, 900u);
}

TEST(Result, MergeFollowsEachFiguresRule) {
  const std::vector<Result> parts = {part(0, 1000, 64, 700.0, 10, 900), part(1, 1200, 36, 650.0, 5, 800)};
  const Result m = Result::merge(parts);
  EXPECT_EQ(m.simulated_cycles, 1200u);  // the slowest part
  EXPECT_EQ(m.count("ring.bytes"), 100u);
  EXPECT_EQ(m.number("gemm_busy.max"), 700.0);
  EXPECT_EQ(m.number("roofline_cycles"), 500.0);
  EXPECT_EQ(m.figure("breakdown.sweep"), (nlohmann::json{{"begin", 5}, {"end", 900}}));
  EXPECT_FALSE(m.has("roofline_efficiency"));  // left for Workload::derive
  ASSERT_EQ(m.use->sips.size(), 2u);
  EXPECT_EQ(m.use->cycles, 1200u);
  EXPECT_EQ(m.wall.transactions, 100u);
  EXPECT_EQ(m.wall.peak_rss_kib, 1001);
  EXPECT_DOUBLE_EQ(m.wall.elaboration_seconds, 0.2);
  // Parts read back from their files merge the same.
  std::vector<Result> read;
  for (const Result& p : parts) read.push_back(Result::from_json(p.to_json()));
  EXPECT_EQ(Result::merge(read).to_json(), m.to_json());
}

TEST(Result, PrefillDerivesItsMeansFromTheMergedSums) {
  Result r;
  r.simulated_cycles = 1000;
  r.add("roofline_cycles", 800.0, Merge::Same);
  r.add("gemm_busy.total", 1500.0, Merge::Sum);
  r.add("gemm_busy.max", 900.0, Merge::Max);
  r.add("pes_measured", 2, Merge::Sum);
  find("gqa_prefill")->derive(r, test::topology("small_1sip_2x2x2"));
  EXPECT_EQ(r.number("roofline_efficiency"), 0.8);
  EXPECT_EQ(r.number("gemm_busy.mean"), 750.0);
  EXPECT_EQ(r.number("imbalance"), 1.2);
}

TEST(Partition, DevicesSplitIntoContiguousNearlyEqualParts) {
  const std::vector<SipId> four = {SipId(0), SipId(1), SipId(2), SipId(3)};
  auto split = [](const std::vector<SipId>& devices, std::uint32_t groups, std::size_t n) {
    std::vector<std::string> parts;
    for (const auto& part : cli::split_units(devices, groups, n)) parts.push_back(cli::units_text(part));
    return parts;
  };
  using Parts = std::vector<std::string>;
  EXPECT_EQ(split(four, 1, 2), (Parts{"0,1", "2,3"}));
  EXPECT_EQ(split(four, 1, 3), (Parts{"0,1", "2", "3"}));
  EXPECT_EQ(split(four, 1, 8), (Parts{"0", "1", "2", "3"}));
  EXPECT_EQ(split({SipId(0), SipId(2)}, 1, 1), (Parts{"0,2"}));
  // By CUBE group: whole SIPs where a part holds all of a SIP's groups.
  EXPECT_EQ(split(four, 2, 2), (Parts{"0,1", "2,3"}));
  EXPECT_EQ(split(four, 2, 3), (Parts{"0,1.0", "1.1,2", "3"}));
  EXPECT_EQ(split(four, 2, 8), (Parts{"0.0", "0.1", "1.0", "1.1", "2.0", "2.1", "3.0", "3.1"}));
  EXPECT_EQ(split(four, 2, 16).size(), 8u);
  EXPECT_EQ(devices_text({SipId(0), SipId(2)}), "0,2");
  const std::vector<SimUnit> units = cli::parse_units("0,1.1", 2);
  EXPECT_EQ(units, (std::vector<SimUnit>{{SipId(0), std::nullopt}, {SipId(1), 1u}}));
  for (const char* bad : {"2", "0.x", "1,", "a", "0.1.2"}) EXPECT_THROW(cli::parse_units(bad, 2), std::invalid_argument) << bad;
}

}  // namespace
}  // namespace kb::workloads
