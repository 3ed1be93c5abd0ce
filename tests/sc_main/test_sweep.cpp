// `kernbench sweep SPEC --out DIR`: a grid's points and their values, --jobs, --resume
// after a kill, a spec refused whole (named where it is wrong, nothing written), and the
// physics a sweep and its report (`sweep --report`) must show.
#include <gtest/gtest.h>

#include <signal.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <vector>

#include <nlohmann/json.hpp>

#include "tests/sc_main/cli_support.h"

namespace kb::test {
namespace {

using Json = nlohmann::json;
namespace fs = std::filesystem;

Json read_json(const std::string& file) {
  std::ifstream in(file);
  return Json::parse(in);
}

std::string write_spec(const std::string& dir, const std::string& text) {
  const std::string file = dir + "/spec.yaml";
  std::ofstream(file) << text;
  return file;
}

// The rows without the fields that measure the simulator rather than the model.
Json model_rows(const Json& sweep) {
  Json rows = sweep["rows"];
  for (auto& r : rows) r["result"].erase("wall");
  return rows;
}

Json sweep(const std::string& dir, const std::string& spec, int jobs, const std::string& more = "") {
  const Result r = run("sweep " + write_spec(dir, spec) + " --out " + dir + "/out --jobs " + std::to_string(jobs) + more);
  EXPECT_EQ(r.code, 0) << r.out;
  return read_json(dir + "/out/sweep.json");
}

const char* kGrid = R"(name: hbm-grid
run: {kernel: gqa_decode}
grid:
  seq-len: [1024, 4096]
  set.cube.hbm.bandwidth: [32B/cycle, 64B/cycle, 128B/cycle]
)";

TEST(Sweep, ATwoByThreeGridGivesSixRowsWithTheirValues) {
  const std::string dir = temp_dir("sweep_grid");
  const Json doc = sweep(dir, kGrid, 2);
  EXPECT_EQ(doc["sweep"], "hbm-grid");
  const Json& rows = doc["rows"];
  ASSERT_EQ(rows.size(), 6u);
  EXPECT_EQ(doc["points"], 6);
  const std::uint64_t pes = 512, h_kv = 8, d = 128, esz = 2;
  std::size_t i = 0;
  for (const std::uint64_t s : {1024u, 4096u}) {
    std::uint64_t slower = UINT64_MAX;
    for (const std::uint64_t bw : {32u, 64u, 128u}) {
      const Json& row = rows[i];
      const Json& r = row["result"];
      const std::string bw_text = std::to_string(bw) + "B/cycle";
      EXPECT_EQ(row["point"], i);
      EXPECT_EQ(row["values"], (Json{{"seq-len", s}, {"set.cube.hbm.bandwidth", bw_text}})) << i;
      EXPECT_EQ(row["numbers"], (Json{{"seq-len", s}, {"set.cube.hbm.bandwidth", bw}})) << i;
      EXPECT_EQ(row["key"], "seq-len=" + std::to_string(s) + " set.cube.hbm.bandwidth=" + bw_text);
      EXPECT_NE(row["command"].get<std::string>().find("--set cube.hbm.bandwidth=" + bw_text), std::string::npos);
      // The run is the point: its length, and the bandwidth in its roofline and its machine.
      EXPECT_EQ(r["knobs"]["seq_len"], s);
      EXPECT_DOUBLE_EQ(r["roofline_cycles"].get<double>(), static_cast<double>(2 * s * h_kv * d * esz) / (pes * bw));
      EXPECT_DOUBLE_EQ(r["machine"]["hbm_bytes_per_second"].get<double>(), static_cast<double>(pes * bw) * 1e9);
      const std::uint64_t cycles = r["simulated_cycles"];
      EXPECT_LT(cycles, slower) << "more bandwidth, less latency: " << row["key"];
      slower = cycles;
      ++i;
    }
  }
  const auto [header, lines] = csv_header_and_rows(dir + "/out/sweep.csv");
  EXPECT_EQ(header.rfind("point,part,key,values.seq-len,values.set.cube.hbm.bandwidth,numbers.seq-len,"
                         "numbers.set.cube.hbm.bandwidth,command,git_revision,result.",
                         0),
            0u)
      << header;
  EXPECT_NE(header.find(",result.simulated_cycles,"), std::string::npos) << header;
  EXPECT_EQ(lines, 6u);
}

TEST(Sweep, TwoJobsGiveTheRowsOfOne) {
  const std::string one = temp_dir("sweep_jobs1"), two = temp_dir("sweep_jobs2");
  EXPECT_EQ(model_rows(sweep(one, kGrid, 1)), model_rows(sweep(two, kGrid, 2)));
}

TEST(Sweep, MpiRanksWriteTheRowsOfOneProcess) {
  if (const std::string why = mpi_unavailable(); !why.empty()) GTEST_SKIP() << why;
  const std::string one = temp_dir("sweep_mpi1"), two = temp_dir("sweep_mpi2");
  const Json serial = sweep(one, kGrid, 1);
  const Result ranks = run_shell(mpirun() + " -n 2 " + KERNBENCH_BINARY + " sweep " + write_spec(two, kGrid) +
                                 " --out " + two + "/out");
  ASSERT_EQ(ranks.code, 0) << ranks.out;
  EXPECT_EQ(model_rows(read_json(two + "/out/sweep.json")), model_rows(serial));
}

TEST(Sweep, ResumeAfterSigkillGivesTheUninterruptedRows) {
  const std::string spec = R"(name: resumed
run: {kernel: gqa_decode}
grid:
  seq-len: [1024, 2048, 4096, 8192]
  set.cube.hbm.bandwidth: [32B/cycle, 64B/cycle]
)";
  const std::string whole = temp_dir("sweep_whole"), cut = temp_dir("sweep_cut");
  const Json uninterrupted = sweep(whole, spec, 1);
  const std::string out = cut + "/out";
  const pid_t pid = start_until_rows({"sweep", write_spec(cut, spec), "--out", out}, out + "/sweep.json", 2, true);
  ASSERT_GT(pid, 0) << "the sweep never wrote rows";
  kill(-pid, SIGKILL);  // the driver and its workers
  kill(pid, SIGKILL);
  waitpid(pid, nullptr, 0);
  const Json killed = read_json(out + "/sweep.json");  // complete JSON, never a torn file
  ASSERT_LT(killed["rows"].size(), uninterrupted["rows"].size()) << "killed too late to test --resume";
  // Without --resume the folder's sweep is not overwritten.
  const Result again = run("sweep " + cut + "/spec.yaml --out " + out);
  EXPECT_EQ(again.code, 1) << again.out;
  EXPECT_NE(again.out.find("it holds a sweep already (sweep.json); --resume continues it"), std::string::npos) << again.out;
  const Result resumed_run = run("sweep " + cut + "/spec.yaml --out " + out + " --resume");
  ASSERT_EQ(resumed_run.code, 0) << resumed_run.out;
  const Json resumed = read_json(out + "/sweep.json");
  EXPECT_EQ(model_rows(resumed), model_rows(uninterrupted));
  for (std::size_t i = 0; i < killed["rows"].size(); ++i)  // finished rows were kept, not run again
    EXPECT_EQ(resumed["rows"][i]["result"]["wall"], killed["rows"][i]["result"]["wall"]) << i;
  // Another spec's sweep is not resumed into.
  const Result other = run("sweep " + write_spec(cut, std::string(kGrid)) + " --out " + out + " --resume");
  EXPECT_EQ(other.code, 1) << other.out;
  EXPECT_NE(other.out.find("holds another sweep ('resumed', not 'hbm-grid')"), std::string::npos) << other.out;
}

TEST(Sweep, AMisspeltTopologyPathIsRefusedByNameWithNothingWritten) {
  const std::string dir = temp_dir("sweep_typo");
  const std::string spec = write_spec(dir, R"(name: typo
run: {kernel: gqa_decode, seq-len: 1024}
grid:
  set.cube.hbm.bandwdith: [32B/cycle, 64B/cycle]
)");
  const Result r = run("sweep " + spec + " --out " + dir + "/out");
  EXPECT_EQ(r.code, 1) << r.out;
  // Once, at the key, whatever its values.
  EXPECT_EQ(r.out, "kernbench: error: " + spec + ":4:3: set.cube.hbm.bandwdith: no key 'bandwdith' under 'cube.hbm'; "
                   "valid keys there: bandwidth, latency, capacity\n");
  EXPECT_FALSE(fs::exists(dir + "/out"));
}

// Each problem is named at its place in the spec, and a refused spec writes nothing.
TEST(Sweep, EveryProblemOfASpecIsNamedWhereItIs) {
  struct Case {
    const char* what;
    std::string spec, expected;  // "@" stands for the spec's path
  };
  const std::vector<Case> cases = {
      {"unknown key", "name: a\ngrid:\n  seq-lne: [1024]\n",
       "@:3:3: unknown key 'seq-lne': a key is a `kernbench run` flag without its dashes, or set.<topology path>; did "
       "you mean 'seq-len'?"},
      {"an output flag", "name: a\nrun: {json: x.json}\n",
       "@:2:7: 'json': the sweep writes each point's outputs itself; a spec cannot set --json"},
      {"a value the run refuses", "name: a\ngrid:\n  seq-len: [1024, lots]\n", "@:3:19: --seq-len 'lots'"},
      {"a shape that does not fit", "name: a\nrun: {seq-len: 1024, heads-q: 60}\n",
       "@:2:31: --heads-q 60 is not a multiple of --heads-kv 8"},
      {"a bad topology value", "name: a\nrun: {seq-len: 1024}\ngrid:\n  set.cube.pes: [8, 0]\n",
       "@:4:21: set.cube.pes=0: cube.pes: value '0' is not allowed; allowed: a whole number from 1 to 64"},
      {"zip lists of unequal length", "name: a\nzip:\n  seq-len: [1024, 2048]\n  pes: [8]\n",
       "@:4:3: zip: 'pes' has 1 values and 'seq-len' 2; the lists of zip vary together and must be as long"},
      {"a key fixed and swept", "name: a\nrun: {seq-len: 1024}\ngrid:\n  seq-len: [2048]\n",
       "@:4:3: 'seq-len' is given twice"},
      {"a condition that is not one", "name: a\ngrid:\n  seq-len: [1024]\nwhere: [seq-len ~ 4]\n",
       "@:4:9: where: 'seq-len ~ 4': a condition is 'A OP B'"},
      {"a switch given a word", "name: a\nrun: {data: maybe, seq-len: 1024}\n",
       "@:2:13: data: a switch takes true or false, got 'maybe'"},
      {"no name", "grid:\n  seq-len: [1024]\n", "@:1:1: name: the spec needs a name (text)"},
      {"an unknown top-level key", "name: a\ngird:\n  seq-len: [1024]\n",
       "@:2:1: unknown key 'gird'; valid keys here: name, run, grid, zip, where, parts"},
      {"not a list", "name: a\ngrid:\n  seq-len: 1024\n",
       "@:3:12: seq-len: expected a non-empty list of values, e.g. [32B/cycle, 64B/cycle]"},
      {"malformed YAML", "name: a\ngrid: [\n", "@:3:1: malformed YAML"},
      {"a part that is not a map", "name: a\nparts:\n  x: 3\n", "@:3:6: part 'x': expected a map of run, grid, zip, where"},
      {"a binary file", std::string("name: a\n\0\x01", 10), "@: not a text file (contains NUL bytes)"},
      {"every point skipped", "name: a\ngrid:\n  seq-len: [1024]\nwhere: [seq-len > 4096]\n",
       "@:1:1: the spec gives no point to run (where: skips them all)"},
  };
  {  // a folder where the spec should be
    const std::string dir = temp_dir("sweep_folder");
    const Result r = run("sweep " + dir + " --out " + dir + "/out");
    EXPECT_EQ(r.code, 1) << r.out;
    EXPECT_NE(r.out.find("kernbench: error: sweep spec " + dir + ": cannot read the file"), std::string::npos) << r.out;
    EXPECT_FALSE(fs::exists(dir + "/out"));
  }
  for (const Case& c : cases) {
    const std::string dir = temp_dir("sweep_bad");
    const std::string spec = write_spec(dir, c.spec);
    const Result r = run("sweep " + spec + " --out " + dir + "/out");
    std::string expected = c.expected;
    if (expected.starts_with("@")) expected = spec + expected.substr(1);
    EXPECT_EQ(r.code, 1) << c.what << ":\n" << r.out;
    EXPECT_NE(r.out.find("kernbench: error: " + expected), std::string::npos) << c.what << ":\n" << r.out;
    EXPECT_FALSE(fs::exists(dir + "/out")) << c.what;
  }
}

TEST(Sweep, ZipAndWhereShapeThePoints) {
  const std::string dir = temp_dir("sweep_zip");
  const std::string spec = write_spec(dir, R"(name: shaped
run: {kernel: gqa_decode}
grid:
  pes: [4, 8]
zip:
  seq-len: [1024, 2048, 4096]
  set.cube.hbm.latency: [100cycles, 120cycles, 140cycles]
where: [seq-len >= 2048, pes != 4]
)");
  const Result r = run("sweep " + spec + " --list");
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_EQ(r.out,
            "0\tpes=8 seq-len=2048 set.cube.hbm.latency=120cycles\tkernbench run --kernel gqa_decode --pes 8 --seq-len "
            "2048 --set cube.hbm.latency=120cycles\n"
            "1\tpes=8 seq-len=4096 set.cube.hbm.latency=140cycles\tkernbench run --kernel gqa_decode --pes 8 --seq-len "
            "4096 --set cube.hbm.latency=140cycles\n");
}

// The elasticity the report gives for a swept value: -1 for a value the latency is
// inversely proportional to.
double report_elasticity(const std::string& out, const std::string& key) {
  const Result r = run("sweep --report " + out);
  EXPECT_EQ(r.code, 0) << r.out;
  const Json report = read_json(out + "/report.json");
  EXPECT_EQ(report["elasticities"].size(), 1u) << report.dump(1);
  for (const char* plot : {"roofline.png", "roofline.svg"}) EXPECT_TRUE(fs::exists(out + "/plots/" + plot)) << plot;
  EXPECT_TRUE(fs::exists(out + "/plots/" + key + ".png"));
  EXPECT_TRUE(fs::exists(out + "/report.md"));
  const Json& e = report["elasticities"].at(0);
  EXPECT_EQ(e["key"], key);
  return e["elasticity"];
}

// Halving a resource the run is bound by roughly doubles its latency, and the report's
// elasticity is that ratio's: ln(L1 / L0) / ln(v1 / v0).
void expect_halving_doubles(const Json& rows, const std::string& key, const std::string& out) {
  ASSERT_EQ(rows.size(), 2u);
  const double slow = rows[0]["result"]["simulated_cycles"], fast = rows[1]["result"]["simulated_cycles"];
  const double ratio = slow / fast;
  EXPECT_GE(ratio, 1.8) << key;
  EXPECT_LE(ratio, 2.1) << key;
  const double v0 = rows[0]["numbers"][key], v1 = rows[1]["numbers"][key];
  EXPECT_DOUBLE_EQ(v1, 2 * v0);
  EXPECT_NEAR(report_elasticity(out, key), std::log(fast / slow) / std::log(v1 / v0), 1e-12);
}

TEST(SweepPhysics, HalvingTheHbmBandwidthDoublesLongDecode) {
  const std::string dir = temp_dir("sweep_hbm_physics");
  const Json doc = sweep(dir, R"(name: hbm-halving
run: {kernel: gqa_decode, seq-len: 131072}
grid:
  set.cube.hbm.bandwidth: [32B/cycle, 64B/cycle]
)",
                         2);
  expect_halving_doubles(doc["rows"], "set.cube.hbm.bandwidth", dir + "/out");
}

TEST(SweepPhysics, HalvingTheGemmRowsDoublesPrefillOnOneSip) {
  const std::string dir = temp_dir("sweep_gemm_physics");
  const Json doc = sweep(dir, R"(name: gemm-halving
run: {kernel: gqa_prefill, seq-len: 16384, devices: 0, heads-kv: 2, heads-q: 16}
grid:
  set.pe.gemm.rows: [8, 16]
)",
                         2);
  expect_halving_doubles(doc["rows"], "set.pe.gemm.rows", dir + "/out");
}

// A price swept moves the energy by its cause's share and the latency not at all; the
// report gives the energy's elasticity beside the latency's.
TEST(SweepPhysics, DoublingTheHbmPriceMovesTheEnergyByItsShare) {
  const std::string dir = temp_dir("sweep_energy_price");
  const Json doc = sweep(dir, R"(name: hbm-price
run: {kernel: gqa_decode, seq-len: 4096}
grid:
  set.energy.hbm.read: [31.2pJ/B, 62.4pJ/B]
)",
                         2);
  const Json& rows = doc["rows"];
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(rows[0]["numbers"]["set.energy.hbm.read"], 31.2);
  EXPECT_EQ(rows[0]["result"]["simulated_cycles"], rows[1]["result"]["simulated_cycles"]);
  const double e0 = rows[0]["result"]["energy"]["total_joules"],
               e1 = rows[1]["result"]["energy"]["total_joules"];
  double read = 0;  // the bytes read from HBM: each now costs 31.2 pJ more
  for (const Json& sip : rows[0]["result"]["activity"])
    read += sip["counts"]["hbm_read_bytes"].get<double>();
  EXPECT_GT(read, 0);
  EXPECT_NEAR(e1 - e0, read * 31.2e-12, 1e-12 * e1);
  for (const char* other : {"tcm", "fabric", "noc", "gemm", "math", "cpu", "static"})
    EXPECT_EQ(rows[1]["result"]["energy"]["by_cause"][other],
              rows[0]["result"]["energy"]["by_cause"][other])
        << other;
  ASSERT_EQ(run("sweep --report " + dir + "/out").code, 0);
  const Json report = read_json(dir + "/out/report.json");
  ASSERT_EQ(report["energy_elasticities"].size(), 1u) << report.dump(1);
  EXPECT_NEAR(report["energy_elasticities"][0]["elasticity"].get<double>(),
              std::log(e1 / e0) / std::log(2.0), 1e-12);
  EXPECT_EQ(report["elasticities"][0]["elasticity"].get<double>(), 0.0);
}

}  // namespace
}  // namespace kb::test
