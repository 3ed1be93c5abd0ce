// The machine as specified by default: prefill and decode issue tl ops only (no sequence
// command in their op logs); --variant fused issues the sequences of an optional
// hardware sequencer; both agree in data mode and pass the fp64 check.
#include <gtest/gtest.h>

#include <algorithm>
#include <set>

#include "base/npy.h"
#include "tests/csv_support.h"
#include "tests/sc_main/cli_support.h"

namespace kb {
namespace {

using test::Result;
using test::run;
using test::temp_dir;
using test::topo;

// The kinds of an op log's records (CSV: kind is the fifth field), and how many of each.
std::map<std::string, std::size_t> kinds(const std::string& csv_file) {
  std::ifstream in(csv_file);
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const auto rows = test::parse_csv(text);
  std::map<std::string, std::size_t> out;
  for (std::size_t i = 1; i < rows.size(); ++i)
    if (rows[i].at(3) != "phase") ++out[rows[i].at(4)];
  return out;
}

// What the machine as specified runs: the tl ops' own kinds (docs/tl.md, the op table).
const std::set<std::string> kTlOps = {"load",  "store", "ref",      "composite", "dot",       "add",  "sub",
                                      "mul",   "div",   "maximum",  "scale",     "exp",       "fma",  "exp_diff",
                                      "where", "copy",  "cast",     "fill",      "max",       "sum",  "trans",
                                      "view",  "rows",  "cols",     "alloc",     "send",      "recv", "causal_bias",
                                      "causal_mask"};

void expect_tl_ops_only(const std::map<std::string, std::size_t>& k) {
  ASSERT_FALSE(k.empty());
  for (const auto& [kind, n] : k) EXPECT_TRUE(kTlOps.count(kind)) << "'" << kind << "' (" << n << " records) is no tl op";
  EXPECT_EQ(k.count("flash_tile") + k.count("merge_state"), 0u);
}

const std::string kPrefill = "run --kernel gqa_prefill --topology " + topo("llama70b_4sip") +
                             " --set system.sips=1 --heads-q 16 --heads-kv 2";

TEST(Variants, DefaultPrefillIssuesTlOpsOnly) {
  const std::string dir = temp_dir("variant_prefill");
  const Result r = run(kPrefill + " --seq-len 1024 --op-log " + dir + "/log.csv --json " + dir + "/r.json");
  ASSERT_EQ(r.code, 0) << r.out;
  expect_tl_ops_only(kinds(dir + "/log.csv"));
  std::ifstream in(dir + "/r.json");
  const nlohmann::json j = nlohmann::json::parse(in);
  EXPECT_EQ(j.at("knobs").at("variant"), "pipelined");
  EXPECT_NE(r.out.find("gqa_prefill (pipelined, striped)"), std::string::npos) << r.out;
}

TEST(Variants, DefaultDecodeIssuesTlOpsOnly) {
  const std::string dir = temp_dir("variant_decode");
  const Result r = run("run --topology " + topo("llama70b_4sip") + " --seq-len 4096 --op-log " + dir + "/log.csv");
  ASSERT_EQ(r.code, 0) << r.out;
  expect_tl_ops_only(kinds(dir + "/log.csv"));
}

TEST(Variants, FusedPrefillIsOneSequencePerPair) {
  // The same pairs, each one flash tile instead of its two composites and MATH ops.
  const std::string dir = temp_dir("variant_fused");
  ASSERT_EQ(run(kPrefill + " --seq-len 1024 --op-log " + dir + "/pipelined.csv").code, 0);
  const Result r =
      run(kPrefill + " --seq-len 1024 --variant fused --op-log " + dir + "/fused.csv --json " + dir + "/r.json");
  ASSERT_EQ(r.code, 0) << r.out;
  const auto pipelined = kinds(dir + "/pipelined.csv"), fused = kinds(dir + "/fused.csv");
  ASSERT_GT(fused.count("flash_tile"), 0u);
  EXPECT_EQ(fused.at("flash_tile"), pipelined.at("composite") / 2);
  EXPECT_EQ(fused.count("composite") + fused.count("exp_diff"), 0u);
  std::ifstream in(dir + "/r.json");
  EXPECT_EQ(nlohmann::json::parse(in).at("knobs").at("variant"), "fused");
  const Result naive = run(kPrefill + " --variant naive");
  EXPECT_EQ(naive.code, 2);
  EXPECT_NE(naive.out.find("--variant 'naive': allowed values: pipelined, fused"), std::string::npos) << naive.out;
}

TEST(Variants, PipelinedAndFusedPrefillAgreeAndPassTheCheck) {
  const std::string dir = temp_dir("variant_data");
  std::filesystem::create_directories(dir + "/pipelined");
  std::filesystem::create_directories(dir + "/fused");
  for (const char* v : {"pipelined", "fused"}) {
    const Result r = run(kPrefill + " --seq-len 512 --data --dtype fp32 --check --variant " + v + " --outputs " + dir +
                         "/" + v);
    ASSERT_EQ(r.code, 0) << r.out;
    EXPECT_NE(r.out.find(": PASS"), std::string::npos) << r.out;
  }
  const HostTensor a = read_npy(dir + "/pipelined/o.npy"), b = read_npy(dir + "/fused/o.npy");
  ASSERT_EQ(a.shape, b.shape);
  double diff = 0;
  for (std::size_t i = 0; i < a.data.size(); ++i)
    diff = std::max(diff, static_cast<double>(std::abs(a.data[i] - b.data[i])));
  EXPECT_LE(diff, 1e-4);
}

}  // namespace
}  // namespace kb
