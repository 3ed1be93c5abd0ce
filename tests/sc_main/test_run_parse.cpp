// `kernbench run`'s command line parsed as a function: defaults, knobs given and not,
// knobs a workload does not read, limits, the checks of split runs, and the command
// line a split run's parts get.
#include <gtest/gtest.h>

#include "sc_main/errors.h"
#include "sc_main/run_command.h"

namespace kb::cli {
namespace {

std::string usage_error(const std::vector<std::string>& args) {
  try {
    parse_run(args);
  } catch (const UsageError& e) {
    return e.what();
  }
  return "accepted";
}

TEST(RunParse, DefaultsAreTheHeadlineDecode) {
  const RunRequest q = parse_run({});
  ASSERT_NE(q.workload, nullptr);
  EXPECT_EQ(q.workload->name(), "gqa_decode");
  EXPECT_EQ(q.values.text("seq_len"), "32768");
  EXPECT_FALSE(q.values.given("seq_len"));
  EXPECT_EQ(q.values.text("cubes_per_group"), "auto");  // the default placement
  EXPECT_EQ(q.jobs, 1u);
  EXPECT_FALSE(q.devices);
  EXPECT_TRUE(q.topology_file.ends_with("topologies/llama70b_4sip.yaml"));
  EXPECT_EQ(q.part_command, (std::vector<std::string>{"run"}));
}

TEST(RunParse, GivenKnobsAndSwitches) {
  const RunRequest q = parse_run({"--kernel", "gqa_prefill", "--seq-len", "4096", "--no-causal", "--devices", "0"});
  EXPECT_EQ(q.workload->name(), "gqa_prefill");
  EXPECT_TRUE(q.values.given("seq_len"));
  EXPECT_EQ(q.values.count("seq_len", 1, 1u << 24), 4096u);
  EXPECT_TRUE(q.values.on("no_causal"));
  EXPECT_FALSE(q.values.on("causal"));
  EXPECT_EQ(q.values.text("layout"), "striped");
  EXPECT_EQ(q.devices, "0");
}

TEST(RunParse, AKnobTheWorkloadDoesNotReadIsRefused) {
  EXPECT_EQ(usage_error({"--kernel", "row_softmax", "--bytes", "1KiB"}), "--bytes applies to --kernel hbm_stream and collective");
  EXPECT_EQ(usage_error({"--kernel", "tiled_gemm", "--inputs", "dir"}),
            "--inputs applies to --kernel gqa_decode, gqa_decode_batch and gqa_prefill");
  EXPECT_EQ(usage_error({"--kernel", "gqa_prefill", "--tile", "64"}), "--sp-table and --tile apply to --kernel gqa_decode");
  EXPECT_EQ(usage_error({"--kernel", "row_softmax", "--variant", "fused"}),
            "--variant applies to --kernel gqa_decode and gqa_prefill");
  EXPECT_EQ(usage_error({"--kernel", "nope"}),
            "--kernel 'nope': allowed values: gqa_decode, gqa_decode_batch, gqa_prefill, hbm_stream, tiled_gemm, "
            "row_softmax, collective, decoder_layer and model_step");
}

TEST(RunParse, LimitsAndTheirErrors) {
  const RunRequest q = parse_run({"--max-sim-time", "3000cycles", "--timeout", "2.5"});
  EXPECT_EQ(q.limits.max_cycles, 3000u);
  EXPECT_EQ(q.limits.timeout_seconds, 2.5);
  EXPECT_EQ(usage_error({"--timeout", "2000000x"}), "--timeout '2000000x': expected seconds of wall time above 0, e.g. 60 or 0.5");
  EXPECT_EQ(usage_error({"--kernel", "hbm_stream", "--max-sim-time", "10"}),
            "--max-sim-time and --timeout apply to tl kernels; hbm_stream is a fixed DMA stream");
}

TEST(RunParse, SplitRunsAreCheckedAndTheirPartsGetTheRestOfTheCommandLine) {
  EXPECT_EQ(usage_error({"--kernel", "tiled_gemm", "--jobs", "2"}),
            "--jobs splits --kernel gqa_decode, gqa_decode_batch, gqa_prefill and collective by SIP and CUBE group; tiled_gemm runs in "
            "one process");
  EXPECT_EQ(usage_error({"--jobs", "2", "--data"}),
            "--jobs splits timing-mode runs; --data, --inputs, --outputs, --check and --vcd run in one process");
  const RunRequest q = parse_run({"--seq-len", "4096", "--jobs", "2", "--json", "r.json", "--set", "a.b=1", "--set",
                                  "c.d=2", "--no-causal", "--devices", "0-1", "--op-log", "x.jsonl"});
  EXPECT_EQ(q.jobs, 2u);
  // The parent writes --json, --op-log and the timeline and gives each part its devices.
  EXPECT_EQ(q.part_command, (std::vector<std::string>{"run", "--no-causal", "--seq-len", "4096", "--set", "a.b=1",
                                                      "--set", "c.d=2"}));
}

TEST(RunParse, FieldsAreShownAsFlags) {
  EXPECT_EQ(flag_of("cubes_per_group"), "--cubes-per-group");
  const workloads::ConfigError e("{heads_q} 60 is not a multiple of {heads_kv} 8");
  EXPECT_STREQ(e.what(), "heads_q 60 is not a multiple of heads_kv 8");
  EXPECT_EQ(e.render(flag_of), "--heads-q 60 is not a multiple of --heads-kv 8");
  // What the user wrote keeps its braces; only the fields become flags.
  const workloads::ConfigError path("{outputs} " + workloads::ConfigError::literal("/tmp/{a_b}") + ": no such folder");
  EXPECT_STREQ(path.what(), "outputs /tmp/{a_b}: no such folder");
  EXPECT_EQ(path.render(flag_of), "--outputs /tmp/{a_b}: no such folder");
}

}  // namespace
}  // namespace kb::cli
