// The kernbench program end to end: exit codes, reports, errors, output files.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>

#include <nlohmann/json.hpp>

#include "tests/sc_main/cli_support.h"

namespace kb {
namespace {

using test::Result;
using test::run;
using test::temp_dir;
using test::topo;

}  // namespace

TEST(Cli, RunPrintsTheStreamReportWhoseTimeMatchesThePrediction) {
  const std::string dir = temp_dir("run");
  const Result r = run("run --kernel hbm_stream --topology " + topo("small_1sip_2x2x2") + " --bytes 64KiB --json " + dir + "/r.json");
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("simulated       1144 cycles"), std::string::npos) << r.out;  // 120 + 65536/64
  EXPECT_NE(r.out.find("model vs sim    +0.00%"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("Copyright"), std::string::npos) << "SystemC banner leaked into the report";
  std::ifstream in(dir + "/r.json");
  const auto j = nlohmann::json::parse(in);
  EXPECT_EQ(j["simulated_cycles"], 1144);
  EXPECT_EQ(j["predicted_cycles"], 1144);
  EXPECT_EQ(j["total_bytes"], 8 * 65536);
  EXPECT_EQ(j["knobs"]["pes"], 8);
}

TEST(Cli, DevicesSelectSips) {
  const Result r = run("run --kernel hbm_stream --topology " + topo("tiny_2sip_4x1x1") + " --bytes 8KiB --devices 1");
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("(4 PEs)"), std::string::npos) << r.out;
  const Result bad = run("run --topology " + topo("tiny_2sip_4x1x1") + " --devices 0-3");
  EXPECT_EQ(bad.code, 1);
  EXPECT_NE(bad.out.find("--devices '0-3': the topology has 2 SIP(s), numbered 0-1"), std::string::npos)
      << bad.out;
}

TEST(Cli, TopologyShowAndValidate) {
  Result r = run("topology show " + topo("llama70b_4sip"));
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("PEs               128 per SIP, 512 total"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("HBM bandwidth     8.192 TB/s per SIP"), std::string::npos) << r.out;
  r = run("topology validate " + topo("small_1sip_2x2x2"));
  EXPECT_EQ(r.code, 0) << r.out;
  r = run("topology show " + topo("small_1sip_2x2x2") + " --set cube.pes=4 --set sip.job_queue=3");
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("16 total"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("per hop 4 cycles, job queue 3 descriptors"), std::string::npos) << r.out;
}

TEST(Cli, BadTopologyIsExitOneWithEveryError) {
  const std::string dir = temp_dir("bad_topology");
  const std::string file = dir + "/bad.yaml";
  std::ofstream(file) << "name: x\nsystem: {sips: 0, extra: 1}\n";
  Result r = run("topology validate " + file);
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.out.find(file + ":2:16: system.sips: value '0' is not allowed"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find(file + ":2:19: system.extra: unknown key 'extra'; valid keys here: sips"),
            std::string::npos) << r.out;
  // A run with a bad topology writes no output file.
  r = run("run --topology " + file + " --json " + dir + "/out.json");
  EXPECT_EQ(r.code, 1);
  EXPECT_FALSE(std::filesystem::exists(dir + "/out.json"));
  EXPECT_EQ(std::distance(std::filesystem::directory_iterator(dir), {}), 1) << "stray files left";
}

TEST(Cli, UsageErrorsAreExitTwo) {
  for (const char* args : {"frobnicate", "run --no-such-flag", "run --kernel nope", "run --bytes lots",
                           "topology", "topology explain x.yaml", "run --devices x"}) {
    const Result r = run(args);
    EXPECT_EQ(r.code, 2) << args << "\n" << r.out;
    EXPECT_NE(r.out.find("kernbench: error: "), std::string::npos) << args;
    EXPECT_NE(r.out.find("usage:"), std::string::npos) << args;
  }
}

TEST(Cli, UnwritableOutputIsRefusedBeforeRunning) {
  const Result r = run("run --topology " + topo("small_1sip_2x2x2") + " --json /nonexistent/dir/r.json");
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.out.find("--json /nonexistent/dir/r.json: folder '/nonexistent/dir' does not exist"),
            std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("simulated"), std::string::npos) << "ran before refusing";
}

TEST(Cli, HelpAndVersion) {
  EXPECT_EQ(run("--help").code, 0);
  const Result v = run("--version");
  EXPECT_EQ(v.code, 0);
  EXPECT_NE(v.out.find("SystemC 2.3"), std::string::npos) << v.out;
  const Result h = run("run --help");
  EXPECT_EQ(h.code, 0);
  EXPECT_NE(h.out.find("--topology"), std::string::npos) << h.out;
}

}  // namespace kb

namespace kb {

// Determinism (two processes, same inputs) and timing mode == data mode, bit for bit.
TEST(Cli, TlKernelRunIsDeterministicAndIdenticalInBothModes) {
  const std::string dir = temp_dir("tl");
  const std::string base = "run --kernel tiled_gemm --topology " + topo("small_1sip_2x2x2") + " --rows 96 --m-tile 32";
  const Result t = run(base + " --op-log " + dir + "/t.jsonl --json " + dir + "/t.json");
  ASSERT_EQ(t.code, 0) << t.out;
  EXPECT_NE(t.out.find("timing mode, 8 PEs"), std::string::npos) << t.out;
  const Result d = run(base + " --data --op-log " + dir + "/d.jsonl --json " + dir + "/d.json");
  ASSERT_EQ(d.code, 0) << d.out;
  std::ifstream tj(dir + "/t.json"), dj(dir + "/d.json");
  const auto jt = nlohmann::json::parse(tj), jd = nlohmann::json::parse(dj);
  EXPECT_EQ(jt["simulated_cycles"], jd["simulated_cycles"]);
  EXPECT_EQ(jt["op_log"]["hash"], jd["op_log"]["hash"]);
  EXPECT_EQ(jt["mode"], "timing");
  EXPECT_EQ(jd["mode"], "data");
  const Result t2 = run(base + " --op-log " + dir + "/t2.jsonl");
  ASSERT_EQ(t2.code, 0) << t2.out;
  auto slurp = [](const std::string& f) {
    std::ifstream in(f);
    return std::string((std::istreambuf_iterator<char>(in)), {});
  };
  const std::string a = slurp(dir + "/t.jsonl");
  EXPECT_EQ(a, slurp(dir + "/t2.jsonl"));
  EXPECT_EQ(a, slurp(dir + "/d.jsonl"));
  EXPECT_EQ(std::count(a.begin(), a.end(), '\n'), jt["op_log"]["records"].get<long>());
}

TEST(Cli, KernelErrorIsExitOneWithTheMessage) {
  const std::string dir = temp_dir("tl_error");
  // A row tile of 8192 x 128 bf16 (2 MiB) cannot fit a 1 MiB TCM.
  const Result r = run("run --kernel row_softmax --topology " + topo("small_1sip_2x2x2") +
                       " --m-tile 8192 --json " + dir + "/r.json");
  EXPECT_EQ(r.code, 1) << r.out;
  EXPECT_NE(r.out.find("kernbench: kernel error: kernel 'row_softmax' on sip0."), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("op 'alloc': TCM overflow"), std::string::npos) << r.out;
  EXPECT_FALSE(std::filesystem::exists(dir + "/r.json"));
}

TEST(Cli, TlFlagsAreChecked) {
  for (const char* args : {"run --kernel tiled_gemm --dtype fp16", "run --kernel tiled_gemm --op-log x.txt",
                           "run --kernel tiled_gemm --rows 0", "run --check", "run --kernel hbm_stream --data",
                           "run --causal --no-causal", "run --variant fastest",
                           "run --kernel gqa_prefill --ring both"}) {
    const Result r = run(args);
    EXPECT_EQ(r.code, 2) << args << "\n" << r.out;
  }
}

// A workload reads only its own knobs: hbm_stream's --bytes is checked against the HBM
// channel for hbm_stream alone, and a knob given to a workload that does not read it is
// refused, naming the workloads that do.
TEST(Cli, KnobsBelongToTheWorkloadsThatReadThem) {
  const std::string small = " --topology " + topo("small_1sip_2x2x2") + " --set cube.hbm.capacity=128KiB";
  Result r = run("run --kernel row_softmax --rows 64" + small);
  EXPECT_EQ(r.code, 0) << r.out;
  r = run("run --kernel hbm_stream --bytes 256KiB" + small);
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_NE(r.out.find("--bytes '256KiB': expected a size from 1B to the HBM channel capacity (128KiB)"),
            std::string::npos) << r.out;
  r = run("run --kernel row_softmax --bytes 1KiB");
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_NE(r.out.find("--bytes applies to --kernel hbm_stream and collective"), std::string::npos) << r.out;
  r = run("run --kernel row_softmax --n 64");
  EXPECT_NE(r.out.find("--n and --k-tile apply to --kernel tiled_gemm"), std::string::npos) << r.out;
  r = run("run --kernel hbm_stream --seq-len 64");
  EXPECT_NE(r.out.find("--seq-len applies to --kernel gqa_decode and gqa_prefill"), std::string::npos) << r.out;
}

// `make run` builds the program alone, not the test suites (make -n only prints).
TEST(Cli, MakeRunBuildsOnlyTheProgram) {
  const std::string build = testing::TempDir() + "kernbench_make_n";
  const Result r = test::run_shell("make -n -C " + test::source_path("") + " run BUILD=" + build);
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("scripts/build.sh " + build + " 2 kernbench"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("scripts/build.sh " + build + " 2\n"), std::string::npos) << r.out;
}

// The build's own lines go to BUILD/build.log: a build prints one line; V=1 prints what
// make prints; a failure prints the failing command and the compiler's error. On a
// project of one file, so that it takes seconds.
TEST(Cli, TheBuildIsQuietButForAFailure) {
  const std::string dir = temp_dir("quiet_build");
  {
    std::ofstream(dir + "/CMakeLists.txt") << "cmake_minimum_required(VERSION 3.25)\nproject(q CXX)\nadd_executable(q q.cpp)\n";
    std::ofstream(dir + "/q.cpp") << "int main() { return 0; }\n";
  }
  ASSERT_EQ(test::run_shell("cmake -S " + dir + " -B " + dir + "/b > /dev/null").code, 0);
  const std::string script = test::source_path("scripts/build.sh") + " " + dir + "/b 2";
  const Result quiet = test::run_shell(script);
  ASSERT_EQ(quiet.code, 0) << quiet.out;
  EXPECT_EQ(std::count(quiet.out.begin(), quiet.out.end(), '\n'), 1) << quiet.out;
  EXPECT_NE(quiet.out.find("build: all"), std::string::npos) << quiet.out;
  for (const char* chatter : {"Entering directory", "Leaving directory", "Building CXX"})
    EXPECT_EQ(quiet.out.find(chatter), std::string::npos) << quiet.out;
  std::ofstream(dir + "/q.cpp") << "int main() { return undeclared_name; }\n";
  const Result loud = test::run_shell("V=1 " + script);
  EXPECT_NE(loud.code, 0);
  EXPECT_NE(loud.out.find("Building CXX"), std::string::npos) << loud.out;
  const Result failed = test::run_shell(script);
  EXPECT_EQ(failed.code, 1);
  EXPECT_NE(failed.out.find("FAILED"), std::string::npos) << failed.out;
  EXPECT_NE(failed.out.find("q.cpp.o -c"), std::string::npos) << "the command\n" << failed.out;
  EXPECT_NE(failed.out.find("undeclared_name"), std::string::npos) << "its output\n" << failed.out;
  EXPECT_EQ(failed.out.find("Entering directory"), std::string::npos) << failed.out;
}

}  // namespace kb

#include "workloads/gqa_decode/decode_run.h"
#include "base/npy.h"

namespace kb {

TEST(Cli, DecodeThroughNpyInputsAndOutputsMatchesTheReference) {
  const std::string dir = temp_dir("npy");
  gqa::DecodeConfig c;
  c.h_q = 16;
  c.h_kv = 2;
  c.s = 300;
  c.t_q = 3;
  const auto in = gqa::AttentionInputs::random(c, 5);
  write_npy(dir + "/q.npy", in.q);
  write_npy(dir + "/k.npy", in.k);
  write_npy(dir + "/v.npy", in.v);
  const std::string args = "run --kernel gqa_decode --topology " + topo("llama70b_4sip") +
                           " --set system.sips=1 --heads-q 16 --heads-kv 2 --seq-len 300 --q-len 3 --data --check"
                           " --inputs " + dir + " --outputs " + dir;
  const Result r = run(args);
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find(": PASS"), std::string::npos) << r.out;
  const HostTensor o = read_npy(dir + "/o.npy");
  EXPECT_EQ(o.shape, (Shape{16, 3, 128}));
  const auto exact = reference::attention(c.reference(), in.q.data, in.k.data, in.v.data);
  EXPECT_LT(reference::max_abs_error(o.data, exact), 2e-2);
  // A k.npy of the wrong shape is refused, naming the file and both shapes.
  write_npy(dir + "/k.npy", in.q);
  const Result bad = run(args);
  EXPECT_EQ(bad.code, 1);
  EXPECT_NE(bad.out.find("k.npy: shape [16, 3, 128] does not match the run's [2, 300, 128]"), std::string::npos)
      << bad.out;
}

TEST(Cli, DecodeReportHasTheBreakdownAndRoofline) {
  const Result r = run("run --topology " + topo("llama70b_4sip") + " --seq-len 8192");
  ASSERT_EQ(r.code, 0) << r.out;
  for (const char* part : {"gqa_decode (pipelined)", "breakdown       KV sweep [", "Level-2 reduce [", "Level-1 reduce [",
                           "roofline        1024 cycles", "model           ", "K/V read 32MiB"})
    EXPECT_NE(r.out.find(part), std::string::npos) << part << "\n" << r.out;
}

}  // namespace kb

namespace kb {

TEST(Cli, PrefillThroughNpyMatchesTheReference) {
  const std::string dir = temp_dir("prefill_npy");
  gqa::DecodeConfig shapes;  // q [16, 64, 128], k/v [2, 256, 128]
  shapes.h_q = 16;
  shapes.h_kv = 2;
  shapes.s = 256;
  shapes.t_q = 64;
  const auto in = gqa::AttentionInputs::random(shapes, 9);
  write_npy(dir + "/q.npy", in.q);
  write_npy(dir + "/k.npy", in.k);
  write_npy(dir + "/v.npy", in.v);
  const Result r = run("run --kernel gqa_prefill --topology " + topo("llama70b_4sip") +
                       " --set system.sips=1 --heads-q 16 --heads-kv 2 --seq-len 256 --q-len 64 --layout zigzag"
                       " --data --check --inputs " + dir + " --outputs " + dir);
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find(": PASS"), std::string::npos) << r.out;
  const HostTensor o = read_npy(dir + "/o.npy");
  const auto exact = reference::attention(shapes.reference(), in.q.data, in.k.data, in.v.data);
  EXPECT_LT(reference::max_abs_error(o.data, exact), 2e-2);
}

}  // namespace kb
