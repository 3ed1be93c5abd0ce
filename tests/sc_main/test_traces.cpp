// What a run can write besides its report: the VCD waveform and the Perfetto timeline,
// each checked against the op log of the same run; and nothing when not asked.
#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include <nlohmann/json.hpp>

#include "base/op_log.h"
#include "tests/csv_support.h"
#include "tests/sc_main/cli_support.h"

// In kb::test, beside the program-running helpers of cli_support.h.
namespace kb::test {
namespace {

using Intervals = std::vector<std::pair<std::uint64_t, std::uint64_t>>;

// A small VCD reader: every signal's full dotted path and its busy (non-zero) intervals,
// in VCD time units. It fails the test on anything malformed.
struct Vcd {
  std::string timescale;
  std::map<std::string, std::string> path_of;  // identifier code -> scope.path.name
  std::map<std::string, Intervals> busy;       // path -> intervals where the value != 0
};

Vcd read_vcd(const std::string& file) {
  std::ifstream in(file);
  EXPECT_TRUE(in.good()) << file;
  Vcd v;
  std::vector<std::string> scope;
  std::string tok;
  bool definitions = true;
  std::uint64_t now = 0;
  std::map<std::string, std::uint64_t> value, since;
  while (in >> tok) {
    if (definitions) {
      if (tok == "$timescale") {
        std::string unit;
        in >> v.timescale >> unit >> tok;
        v.timescale += " " + unit;
      } else if (tok == "$scope") {
        std::string kind, name;
        in >> kind >> name >> tok;
        scope.push_back(name);
      } else if (tok == "$upscope") {
        in >> tok;
        EXPECT_FALSE(scope.empty()) << "$upscope without a scope";
        if (!scope.empty()) scope.pop_back();
      } else if (tok == "$var") {
        std::string type, width, code, name;
        in >> type >> width >> code >> name >> tok;
        EXPECT_EQ(tok, "$end");
        std::string path;
        for (const auto& s : scope) path += s + ".";
        v.path_of[code] = path + name;
      } else if (tok == "$enddefinitions") {
        in >> tok;
        EXPECT_TRUE(scope.empty()) << "unbalanced scopes";
        definitions = false;
      }
      continue;
    }
    if (tok == "$dumpvars" || tok == "$end") continue;
    std::string code, val;
    if (tok[0] == '#') {
      now = std::stoull(tok.substr(1));
      continue;
    }
    if (tok[0] == 'b') {
      val = tok.substr(1);
      in >> code;
    } else {
      val = tok.substr(0, 1);
      code = tok.substr(1);
    }
    EXPECT_TRUE(v.path_of.count(code)) << "value change of an undeclared signal " << code;
    const std::uint64_t x = std::stoull(val, nullptr, 2);
    const std::string& path = v.path_of[code];
    if (value[path] == 0 && x != 0) since[path] = now;
    if (value[path] != 0 && x == 0) v.busy[path].emplace_back(since[path], now);
    value[path] = x;
  }
  return v;
}

std::vector<OpRecord> read_op_log(const std::string& file) {
  std::ifstream in(file);
  std::vector<OpRecord> out;
  for (std::string line; std::getline(in, line);) {
    const auto j = nlohmann::json::parse(line);
    OpRecord r;
    r.id = j["id"];
    r.kernel = Name::intern(j["kernel"].get<std::string>());
    r.engine = Name::intern(j["engine"].get<std::string>());
    r.kind = Name::intern(j["kind"].get<std::string>());
    r.issue = j["issue"];
    r.start = j["start"];
    r.end = j["end"];
    r.tensor = j["tensor"];
    r.shape = j["shape"];
    r.tag = j["tag"];
    r.bytes = j["bytes"];
    r.critical = j["critical"].get<std::vector<std::pair<std::uint64_t, std::uint64_t>>>();
    out.push_back(r);
    out.back().tensor = j["pe"];  // the PE's name, which the checks below select on
  }
  return out;
}

// The op log's busy intervals of one engine of one PE (by kind, if given), merged where
// they touch, in picoseconds of a 1 GHz clock.
Intervals op_busy(const std::vector<OpRecord>& log, const std::string& pe, const std::string& engine,
                  const std::string& kind = "") {
  Intervals spans;
  for (const auto& r : log)
    if (r.tensor == pe && r.engine == engine && (kind.empty() || r.kind == kind) && r.end > r.start)
      spans.emplace_back(r.start * 1000, r.end * 1000);
  std::sort(spans.begin(), spans.end());
  Intervals merged;
  for (const auto& s : spans) {
    if (!merged.empty() && s.first <= merged.back().second) merged.back().second = std::max(merged.back().second, s.second);
    else merged.push_back(s);
  }
  return merged;
}

TEST(Traces, VcdBusyEqualsTheOpLogAndTheFilterLimitsIt) {
  const std::string dir = temp_dir("vcd");
  const Result r = run("run --kernel row_softmax --topology " + topo("small_1sip_2x2x2") + " --rows 96 --m-tile 32 --vcd " +
                       dir + "/w.vcd --vcd-filter 'sip0.cube1.pe1.*' --op-log " + dir + "/ops.jsonl");
  ASSERT_EQ(r.code, 0) << r.out;
  const Vcd v = read_vcd(dir + "/w.vcd");
  EXPECT_EQ(v.timescale, "1 ps");
  ASSERT_FALSE(v.path_of.empty());
  for (const auto& [code, path] : v.path_of) EXPECT_EQ(path.rfind("sip0.cube1.pe1.", 0), 0u) << path;
  const auto log = read_op_log(dir + "/ops.jsonl");
  const std::string pe = "sip0.cube1.pe1";
  const Intervals math = op_busy(log, pe, "math"), loads = op_busy(log, pe, "dma", "load"),
                  stores = op_busy(log, pe, "dma", "store");
  ASSERT_FALSE(math.empty());
  ASSERT_FALSE(loads.empty());
  EXPECT_EQ(v.busy.at(pe + ".math.busy"), math);
  EXPECT_EQ(v.busy.at(pe + ".dma.read_busy"), loads);
  EXPECT_EQ(v.busy.at(pe + ".dma.write_busy"), stores);
  if (std::system("command -v vcd2fst >/dev/null 2>&1") == 0) {
    const std::string convert = "vcd2fst " + dir + "/w.vcd " + dir + "/w.fst > /dev/null 2>&1";
    EXPECT_EQ(std::system(convert.c_str()), 0) << "GTKWave's vcd2fst refused the VCD";
  } else {
    std::cout << "[ note ] vcd2fst (GTKWave) is not installed: checked with the built-in reader only\n";
  }
}

TEST(Traces, VcdLinksShowTheirTransfers) {
  const std::string dir = temp_dir("vcd_links");
  const Result r = run("run --topology " + topo("small_1sip_2x2x2") + " --seq-len 2048 --heads-q 8 --heads-kv 1 --cubes-per-group 4 " +
                       "--pes 2 --vcd " + dir + "/w.vcd --vcd-filter 'sip0.noc.*,sip0.cube0.fabric.*'");
  ASSERT_EQ(r.code, 0) << r.out;
  const Vcd v = read_vcd(dir + "/w.vcd");
  bool noc = false, fabric = false;
  for (const auto& [path, spans] : v.busy) {
    noc |= path.rfind("sip0.noc.", 0) == 0 && !spans.empty();
    fabric |= path.rfind("sip0.cube0.fabric.", 0) == 0 && !spans.empty();
  }
  EXPECT_TRUE(noc) << "the level-1 reduce crosses mesh links";
  EXPECT_TRUE(fabric) << "the level-2 reduce crosses cube 0's PE ports";
}

TEST(Traces, TimelineSlicesAreTheOpLogAndFlowsJoinSendsToReceives) {
  const std::string dir = temp_dir("timeline");
  const Result r = run("run --topology " + topo("small_1sip_2x2x2") + " --seq-len 4096 --heads-q 16 --heads-kv 2 " +
                       "--cubes-per-group 2 --pes 2 --timeline " + dir + "/t.json --op-log " + dir + "/ops.jsonl");
  ASSERT_EQ(r.code, 0) << r.out;
  std::ifstream in(dir + "/t.json");
  const auto trace = nlohmann::json::parse(in);
  const auto log = read_op_log(dir + "/ops.jsonl");
  std::map<std::uint64_t, nlohmann::json> slices;
  std::map<std::pair<int, int>, std::string> track_name;
  std::map<std::uint64_t, std::vector<nlohmann::json>> flows;
  std::set<std::string> phases;
  std::map<int, std::map<double, nlohmann::json>> critical;  // each critical-path track's slices by start
  for (const auto& e : trace["traceEvents"]) {
    if (e["ph"] == "X" && e["cat"] == "critical") {
      EXPECT_TRUE(critical[e["tid"].get<int>()].emplace(e["ts"].get<double>(), e).second)
          << "two critical slices of a track start together";
    } else if (e["ph"] == "X") {
      EXPECT_TRUE(slices.emplace(e["args"]["id"].get<std::uint64_t>(), e).second) << "two slices of one record";
      if (e["cat"] == "phase") phases.insert(e["name"].get<std::string>());
    } else if (e["ph"] == "M" && e["name"] == "thread_name") {
      track_name[{e["pid"], e["tid"]}] = e["args"]["name"];
    } else if (e["ph"] == "s" || e["ph"] == "f") {
      flows[e["id"]].push_back(e);
    }
  }
  ASSERT_EQ(slices.size(), log.size());
  std::size_t sends = 0;
  for (const auto& rec : log) {
    const auto& e = slices.at(rec.id);
    EXPECT_EQ(e["name"], rec.kind);
    EXPECT_EQ(e["cat"], rec.engine);
    EXPECT_EQ(e["ts"].get<double>(), static_cast<double>(rec.start) * 1e-3);  // 1 GHz: a cycle is 1 ns
    EXPECT_EQ(e["dur"].get<double>(), static_cast<double>(rec.end - rec.start) * 1e-3);
    EXPECT_EQ(e["args"]["bytes"], rec.bytes);
    EXPECT_EQ(e["args"]["shape"], rec.shape);
    const std::string& track = track_name.at({e["pid"], e["tid"]});
    EXPECT_TRUE(track.ends_with(".pe" + rec.tensor.substr(rec.tensor.rfind(".pe") + 3) + "." + rec.engine.str())) << track;
    sends += rec.kind == "send";
  }
  // Two groups of 2 cubes, simulated apart: a critical-path track per group first, then
  // the PEs' tracks. Each shows its group's critical spans: one after the other without
  // gap or overlap up to the group's end, each inside its op's own [issue, end], all on
  // the group's cubes; the slower group's ends with the run.
  EXPECT_EQ(track_name.at({0, 0}), "critical path, group 0");
  EXPECT_EQ(track_name.at({0, 1}), "critical path, group 1");
  EXPECT_EQ(track_name.at({0, 2}), "cube(0,0).pe0.phase");
  std::size_t spans = 0;
  for (const auto& rec : log)
    for (const auto& [begin, end] : rec.critical) {
      ++spans;
      bool found = false;
      for (const auto& [tid, slices_of_track] : critical) {
        const auto it = slices_of_track.find(static_cast<double>(begin) * 1e-3);
        if (it == slices_of_track.end() || it->second["args"]["id"] != rec.id) continue;
        found = true;
        EXPECT_EQ(it->second["dur"].get<double>(), static_cast<double>(end - begin) * 1e-3);
      }
      EXPECT_TRUE(found) << "record " << rec.id << "'s critical span at " << begin;
      EXPECT_GE(begin, rec.issue) << rec.kind;
      EXPECT_LE(begin, rec.end) << rec.kind;
    }
  ASSERT_EQ(critical.size(), 2u);
  std::size_t drawn = 0;
  double last_end = 0;
  std::map<std::string, int> track_of_cube;
  for (const auto& [tid, slices_of_track] : critical) {
    drawn += slices_of_track.size();
    EXPECT_GT(slices_of_track.size(), 3u);
    double until = slices_of_track.begin()->first;
    for (const auto& [ts, e] : slices_of_track) {
      EXPECT_NEAR(ts, until, 1e-9);
      until = ts + e["dur"].get<double>();
      const std::string on = e["args"]["on"];
      EXPECT_EQ(track_of_cube.emplace(on.substr(0, on.find(".pe")), tid).first->second, tid) << on << " on two tracks";
    }
    last_end = std::max(last_end, until);
  }
  EXPECT_EQ(drawn, spans);
  EXPECT_NE(r.out.find(std::to_string(static_cast<std::uint64_t>(last_end * 1e3 + 0.5)) + " cycles"), std::string::npos)
      << "the last span ends with the run\n" << r.out;
  EXPECT_EQ(phases, (std::set<std::string>{"sweep", "reduce level 2", "reduce level 1", "store O"}));
  // Every message is one flow from the sender's ipcq track to the receiver's.
  ASSERT_GT(sends, 0u);
  EXPECT_EQ(flows.size(), sends);
  for (const auto& [id, ends] : flows) {
    ASSERT_EQ(ends.size(), 2u);
    EXPECT_EQ(ends[0]["ph"], "s");
    EXPECT_EQ(ends[1]["ph"], "f");
    EXPECT_TRUE(track_name.at({ends[0]["pid"], ends[0]["tid"]}).ends_with(".ipcq"));
    EXPECT_TRUE(track_name.at({ends[1]["pid"], ends[1]["tid"]}).ends_with(".ipcq"));
    EXPECT_LE(ends[0]["ts"].get<double>(), ends[1]["ts"].get<double>());
  }
}

// The CSV op log of a whole run parses as strict CSV, a row of 16 fields per record,
// with the same records as the JSON-lines log.
TEST(Traces, CsvOpLogParsesWithTheHeadersFieldsOnEveryRow) {
  const std::string dir = temp_dir("csv");
  const auto r = run("run --kernel row_softmax --topology " + topo("small_1sip_2x2x2") + " --op-log " + dir +
                     "/ops.csv --json " + dir + "/r.json");
  ASSERT_EQ(r.code, 0) << r.out;
  std::ifstream in(dir + "/ops.csv");
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const auto rows = test::parse_csv(text);
  std::ifstream json(dir + "/r.json");
  const auto result = nlohmann::json::parse(json);
  ASSERT_EQ(rows.size(), result["op_log"]["records"].get<std::size_t>() + 1);
  std::size_t shaped = 0;
  for (const auto& row : rows) {
    ASSERT_EQ(row.size(), 16u);
    shaped += row[14].find(", ") != std::string::npos;
  }
  EXPECT_GT(shaped, 0u);  // shapes like "[64, 64]" hold a comma and stay one field
}

TEST(Traces, NothingIsWrittenWithoutTraceFlags) {
  const std::string dir = temp_dir("quiet");
  const std::string cmd = "cd " + dir + " && " + KERNBENCH_BINARY + " run --kernel row_softmax --topology " +
                          topo("small_1sip_2x2x2") + " --rows 64 --m-tile 32 > /dev/null";
  ASSERT_EQ(std::system(cmd.c_str()), 0);
  EXPECT_TRUE(std::filesystem::is_empty(dir)) << "a run without --vcd/--timeline/--op-log/--json wrote files";
}

TEST(Traces, TraceFlagMistakesAreUsageErrors) {
  Result r = run("run --kernel row_softmax --topology " + topo("small_1sip_2x2x2") + " --vcd-filter 'sip0.*'");
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_NE(r.out.find("--vcd-filter needs --vcd FILE"), std::string::npos) << r.out;
  const std::string dir = temp_dir("vcd_none");
  r = run("run --kernel row_softmax --topology " + topo("small_1sip_2x2x2") + " --vcd " + dir + "/w.vcd --vcd-filter 'sip9.*'");
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_NE(r.out.find("matches no module"), std::string::npos) << r.out;
  EXPECT_FALSE(std::filesystem::exists(dir + "/w.vcd"));
}

}  // namespace
}  // namespace kb::test
