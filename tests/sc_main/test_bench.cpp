// `kernbench bench gqa_llama70b --quick`: the rows and their invariants, --jobs, --resume
// after a killed sweep, and the SP table behind `run --cubes-per-group auto --pes auto`.
#include <gtest/gtest.h>

#include <map>

#include <signal.h>
#include <unistd.h>

#include <fstream>
#include <tuple>
#include <vector>

#include <nlohmann/json.hpp>

#include "tests/sc_main/cli_support.h"

namespace kb::test {
namespace {

using Json = nlohmann::json;

Json read_json(const std::string& file) {
  std::ifstream in(file);
  return Json::parse(in);
}

// The rows without the fields that measure the simulator rather than the model.
Json model_rows(const Json& sweep) {
  Json rows = sweep["rows"];
  for (auto& r : rows) r["result"].erase("wall");
  return rows;
}

std::string quick_sweep(const std::string& dir, int jobs, const std::string& more = "") {
  const Result r = run("bench gqa_llama70b --quick --out " + dir + "/sweep.json --jobs " + std::to_string(jobs) + more);
  EXPECT_EQ(r.code, 0) << r.out;
  return dir + "/sweep.json";
}

TEST(Bench, QuickSweepRowsHoldTheirInvariants) {
  const std::string dir = temp_dir("bench_quick");
  const Json sweep = read_json(quick_sweep(dir, 2));
  const Json& rows = sweep["rows"];
  // decode: 2 S x 16 (C, P); prefill: 1 S x 2 layouts; chunked: 2 rings; batch: 1 and 4 requests
  ASSERT_EQ(rows.size(), 38u);
  EXPECT_EQ(sweep["points"], 38);
  EXPECT_EQ(sweep["sweep"], "gqa_llama70b_quick");
  std::size_t decode = 0, prefill = 0, chunked = 0;
  std::vector<std::uint64_t> batches;
  std::map<std::string, std::pair<double, double>> ring;  // ring -> (simulated, model)
  for (std::size_t i = 0; i < rows.size(); ++i) {
    const Json& row = rows[i];
    const Json& r = row["result"];
    EXPECT_EQ(row["point"], i);
    EXPECT_FALSE(row["git_revision"].get<std::string>().empty());
    EXPECT_EQ(row["command"].get<std::string>().rfind("kernbench run ", 0), 0u) << row["command"];
    EXPECT_GT(r["simulated_cycles"].get<std::uint64_t>(), 0u) << row["key"];
    const double eff = r["roofline_efficiency"];
    EXPECT_GT(eff, 0.0) << row["key"];
    EXPECT_LE(eff, 1.0) << row["key"];
    EXPECT_GT(r["wall"]["simulation_seconds"].get<double>(), 0.0);
    EXPECT_GT(r["wall"]["transactions"].get<std::uint64_t>(), 0u);
    std::uint64_t attributed = 0;  // the row's critical path accounts for its latency
    for (const auto& [cause, cycles] : r["critical_path"].items()) attributed += cycles.get<std::uint64_t>();
    EXPECT_EQ(attributed, r["simulated_cycles"].get<std::uint64_t>()) << row["key"];
    const Json& k = r["knobs"];
    const Json& v = row["values"];  // the point's values, as the spec names them
    const std::uint64_t s = k["seq_len"], h_kv = k["heads_kv"], h_q = k["heads_q"], d = k["head_dim"];
    if (row["part"] == "decode") {
      ++decode;
      EXPECT_EQ(r["kv_bytes"].get<std::uint64_t>(), 2 * s * h_kv * d * 2) << row["key"];  // K and V once, bf16
      EXPECT_EQ(v, (Json{{"seq-len", s}, {"cubes-per-group", k["cubes_per_group"]}, {"pes", k["pes"]}})) << row["key"];
    } else if (row["part"] == "batch") {
      batches.push_back(k["batch"]);
      EXPECT_EQ(v["batch"], "random:" + std::to_string(k["batch"].get<std::uint64_t>()) + ":128-2048:7");
      const std::uint64_t context = r["requests"]["context"];
      EXPECT_EQ(r["kv_bytes"].get<std::uint64_t>(), 2 * context * h_kv * d * 2) << row["key"];
      EXPECT_DOUBLE_EQ(r["tokens_per_second"].get<double>(),
                       static_cast<double>(k["batch"].get<std::uint64_t>()) / r["simulated_seconds"].get<double>());
      // Balanced to within a page: the fullest rank holds at most the mean plus one page.
      const double mean = static_cast<double>(context) /
                          static_cast<double>(k["cubes_per_group"].get<std::uint64_t>() * k["pes"].get<std::uint64_t>());
      EXPECT_LE(r["imbalance"].get<double>(), (mean + k["page_rows"].get<double>()) / mean) << row["key"];
    } else {
      ++(row["part"] == "prefill" ? prefill : chunked);
      EXPECT_EQ(v["seq-len"], s);
      const std::uint64_t t_q = k["q_len"];
      double visible = 0;  // causal: query t sees S - T_q + t + 1 keys
      for (std::uint64_t t = 0; t < t_q; ++t) visible += static_cast<double>(s - t_q + t + 1);
      EXPECT_EQ(r["flops"].get<double>(), 4.0 * static_cast<double>(d * h_q) * visible) << row["key"];
      if (row["part"] == "chunked") {
        EXPECT_EQ(v["ring"], k["ring"]);
        ring[k["ring"]] = {static_cast<double>(r["simulated_cycles"].get<std::uint64_t>()), r["model_cycles"].get<double>()};
      } else {
        EXPECT_EQ(v["layout"], k["layout"]);
      }
    }
  }
  EXPECT_EQ(decode, 32u);
  EXPECT_EQ(prefill, 2u);
  EXPECT_EQ(chunked, 2u);
  EXPECT_EQ(batches, (std::vector<std::uint64_t>{1, 4}));
  // --ring auto's rule (the faster by the model) picks the faster ring, or one within 5%.
  ASSERT_EQ(ring.size(), 2u);
  const auto& pick = ring["q"].second < ring["kv"].second ? ring["q"] : ring["kv"];
  EXPECT_LE(pick.first, 1.05 * std::min(ring["q"].first, ring["kv"].first));
  // The CSV: a header and one line per row.
  const auto [header, lines] = csv_header_and_rows(dir + "/sweep.csv");
  EXPECT_EQ(header.rfind("point,part,key,values.seq-len,values.cubes-per-group,values.pes,numbers.seq-len,"
                         "numbers.cubes-per-group,numbers.pes,command,git_revision,",
                         0),
            0u)
      << header;
  EXPECT_EQ(lines, rows.size());
}

TEST(Bench, TwoJobsGiveTheRowsOfOne) {
  const std::string one = temp_dir("bench_jobs1"), two = temp_dir("bench_jobs2");
  const Json a = read_json(quick_sweep(one, 1)), b = read_json(quick_sweep(two, 2));
  EXPECT_EQ(model_rows(a), model_rows(b));
  EXPECT_EQ(read_json(one + "/sp_table.json"), read_json(two + "/sp_table.json"));
}

TEST(Bench, ResumeAfterAKilledSweepGivesTheUninterruptedRows) {
  const std::string whole = temp_dir("bench_whole"), cut = temp_dir("bench_cut");
  const Json uninterrupted = read_json(quick_sweep(whole, 1));
  // Start a sweep in its own process group and kill all of it once some rows are in.
  const pid_t pid = start_until_rows({"bench", "gqa_llama70b", "--quick", "--jobs", "1", "--out", cut + "/sweep.json"},
                                     cut + "/sweep.json", 5, true);
  ASSERT_GT(pid, 0) << "the sweep never wrote rows";
  kill(-pid, SIGKILL);
  kill(pid, SIGKILL);
  waitpid(pid, nullptr, 0);
  const Json killed = read_json(cut + "/sweep.json");  // complete JSON, never a torn file
  ASSERT_LT(killed["rows"].size(), uninterrupted["rows"].size()) << "killed too late to test --resume";
  const Json resumed = read_json(quick_sweep(cut, 1, " --resume"));
  EXPECT_EQ(model_rows(resumed), model_rows(uninterrupted));
  // The rows finished before the kill were kept, not run again.
  for (std::size_t i = 0; i < killed["rows"].size(); ++i)
    EXPECT_EQ(resumed["rows"][i]["result"]["wall"], killed["rows"][i]["result"]["wall"]) << i;
}

TEST(Bench, AutoCAndPAreTheSweepsArgmin) {
  const std::string dir = temp_dir("bench_auto");
  const Json sweep = read_json(quick_sweep(dir, 2));
  std::map<std::uint64_t, std::tuple<std::uint64_t, std::uint64_t, std::uint64_t>> best;  // S -> (cycles, C*P, C)
  std::map<std::uint64_t, std::pair<std::uint64_t, std::uint64_t>> argmin;
  for (const Json& row : sweep["rows"]) {
    if (row["part"] != "decode") continue;
    const Json& r = row["result"];
    const std::uint64_t s = r["knobs"]["seq_len"], c = r["knobs"]["cubes_per_group"], p = r["knobs"]["pes"];
    const auto key = std::make_tuple(r["simulated_cycles"].get<std::uint64_t>(), c * p, c);
    if (!best.count(s) || key < best[s]) {
      best[s] = key;
      argmin[s] = {c, p};
    }
  }
  ASSERT_EQ(argmin.size(), 2u);
  for (const auto& [s, cp] : argmin) {
    const std::string json = dir + "/auto" + std::to_string(s) + ".json";
    const Result r = run("run --seq-len " + std::to_string(s) + " --cubes-per-group auto --pes auto --sp-table " + dir +
                         "/sp_table.json --json " + json);
    ASSERT_EQ(r.code, 0) << r.out;
    const Json res = read_json(json);
    EXPECT_EQ(res["knobs"]["cubes_per_group"], cp.first) << "S = " << s;
    EXPECT_EQ(res["knobs"]["pes"], cp.second) << "S = " << s;
    EXPECT_EQ(res["simulated_cycles"], std::get<0>(best[s])) << "S = " << s;
  }
  // A table of another shape does not apply: the default rule places the heads, and says so.
  const Result other = run("run --seq-len 4096 --heads-kv 4 --cubes-per-group auto --sp-table " + dir + "/sp_table.json");
  EXPECT_EQ(other.code, 0) << other.out;
  EXPECT_NE(other.out.find("placement: the default rule picks C = 16, P = 8"), std::string::npos) << other.out;
}

}  // namespace
}  // namespace kb::test
