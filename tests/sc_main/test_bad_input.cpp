// The bad-input matrix of the kernbench program: every case exits 1 (2 for usage
// errors) with a message saying what was wrong, where, and what is allowed; none
// crashes, hangs or leaves an output file; none tries a huge allocation (each runs
// under a 1 GiB address-space limit, which a refused input never needs; under
// AddressSanitizer, which reserves terabytes of shadow, ASan's own allocation limit
// does that job).
#include <algorithm>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "base/npy.h"
#include "tests/sc_main/cli_support.h"

namespace kb::test {
namespace {

struct Case {
  std::string what;
  std::string args;      // "@" stands for the case's scratch folder
  int code;
  std::string message;   // must appear in the output
};

std::string replace_all(std::string s, const std::string& from, const std::string& to) {
  for (std::size_t i = s.find(from); i != std::string::npos; i = s.find(from, i + to.size())) s.replace(i, from.size(), to);
  return s;
}

void write_text(const std::string& path, const std::string& text) { std::ofstream(path, std::ios::binary) << text; }

// Writes the fixtures the cases read into `dir`.
void write_fixtures(const std::string& dir) {
  std::ifstream in(topo("small_1sip_2x2x2"));
  const std::string small((std::istreambuf_iterator<char>(in)), {});
  write_text(dir + "/empty.yaml", "");
  write_text(dir + "/truncated.yaml", small.substr(0, small.find("\npe:")));  // cut before its last sections
  write_text(dir + "/binary.yaml", std::string("name: x\0\x01\x02", 11));
  write_text(dir + "/malformed.yaml", "name: [unclosed\nsystem: {sips: 1\n");
  write_text(dir + "/list.yaml", "- a\n- b\n");
  write_text(dir + "/deep.yaml", "a: " + std::string(100000, '[') + std::string(100000, ']') + "\n");
  write_text(dir + "/unknown_key.yaml", small + "\nextra: 1\n");
  std::string energy_key = small;
  energy_key.insert(energy_key.find("  link: 40pJ/B"), "  dram: 1pJ/B\n");
  write_text(dir + "/energy_key.yaml", energy_key);
  // Q, K, V of a small decode (H_q 4, H_kv 1, S 64, d 16) and broken variants.
  auto tensor = [](Shape shape) {
    HostTensor t;
    t.shape = std::move(shape);
    t.data.assign(t.elements(), 0.5f);
    return t;
  };
  for (const std::string sub : {"good", "shape", "rank", "dtype", "fortran", "truncated", "missing", "huge"}) {
    std::filesystem::create_directories(dir + "/" + sub);
    write_npy(dir + "/" + sub + "/q.npy", tensor({4, 1, 16}));
    write_npy(dir + "/" + sub + "/k.npy", tensor({1, 64, 16}));
    write_npy(dir + "/" + sub + "/v.npy", tensor({1, 64, 16}));
  }
  write_npy(dir + "/shape/v.npy", tensor({1, 64, 8}));
  write_npy(dir + "/rank/v.npy", tensor({64 * 16}));
  write_raw_npy(dir + "/dtype/v.npy", "{'descr': '<f2', 'fortran_order': False, 'shape': (1, 64, 16), }", 64 * 16 * 2);
  write_raw_npy(dir + "/fortran/v.npy", "{'descr': '<f4', 'fortran_order': True, 'shape': (1, 64, 16), }", 64 * 16 * 4);
  write_raw_npy(dir + "/truncated/v.npy", "{'descr': '<f4', 'fortran_order': False, 'shape': (1, 64, 16), }",
                100);
  // A shape whose size wraps a 64-bit product: must be refused, not allocated.
  write_raw_npy(dir + "/huge/v.npy",
                "{'descr': '<f4', 'fortran_order': False, 'shape': (999999999999, 999999999999), }", 16);
  std::filesystem::remove(dir + "/missing/k.npy");
  // A batch of lengths 3 and 5 whose k.npy holds 9 rows, not 8.
  std::filesystem::create_directories(dir + "/batch");
  write_int64_npy(dir + "/batch/lens.npy", {3, 5});
  write_npy(dir + "/batch/q.npy", tensor({2, 4, 1, 16}));
  write_npy(dir + "/batch/k.npy", tensor({1, 9, 16}));
  write_npy(dir + "/batch/v.npy", tensor({1, 8, 16}));
}

std::vector<std::filesystem::path> files_under(const std::string& dir) {
  std::vector<std::filesystem::path> files;
  for (const auto& e : std::filesystem::recursive_directory_iterator(dir)) files.push_back(e.path());
  std::sort(files.begin(), files.end());
  return files;
}

std::vector<Case> cases() {
  const std::string small = "--topology " + topo("small_1sip_2x2x2");
  const std::string decode = "run " + small + " --kernel gqa_decode --heads-q 4 --heads-kv 1 --head-dim 16 "
                             "--seq-len 64 --cubes-per-group 4 --pes 2 --data ";
  const std::string batch = "run --kernel gqa_decode_batch ";
  std::vector<Case> out = {
      // Topology files.
      {"empty YAML", "run --topology @/empty.yaml", 1, "@/empty.yaml: a topology must be a YAML map"},
      {"truncated YAML", "run --topology @/truncated.yaml", 1, "@/truncated.yaml:3:1: pe: required key 'pe' is missing"},
      {"binary file", "run --topology @/binary.yaml", 1, "@/binary.yaml: not a text file (contains NUL bytes)"},
      {"malformed YAML", "run --topology @/malformed.yaml", 1, "@/malformed.yaml:2:7: malformed YAML"},
      {"YAML list", "run --topology @/list.yaml", 1, "a topology must be a YAML map of keys"},
      {"deeply nested YAML", "run --topology @/deep.yaml", 1, "@/deep.yaml:1:"},
      {"unknown key", "run --topology @/unknown_key.yaml", 1, "extra: unknown key 'extra'; valid keys here: name,"},
      {"missing file", "run --topology @/nope.yaml", 1, "@/nope.yaml: cannot open topology file"},
      {"unknown energy key", "run --topology @/energy_key.yaml", 1,
       "@/energy_key.yaml:40:3: energy.dram: unknown key 'dram'; valid keys here: hbm, tcm, fabric, noc, link, gemm"},
      {"bench on a bad topology", "bench gqa_llama70b --quick --topology @/malformed.yaml --out @/sweep.json", 1,
       "@/malformed.yaml:2:7: malformed YAML"},
      {"zero size", "run " + small + " --set cube.pes=0", 1,
       "cube.pes: value '0' is not allowed; allowed: a whole number from 1 to 64"},
      {"negative energy price", "run " + small + " --set energy.hbm.read=-1pJ/B", 1,
       "--set energy.hbm.read=-1pJ/B: energy.hbm.read: value '-1pJ/B' is not allowed; allowed: a non-negative number "
       "in J/B"},
      {"energy price without its unit", "run " + small + " --set energy.gemm=0.5", 1,
       "energy.gemm: value '0.5' is not allowed; allowed: a non-negative number in J/MAC"},
      {"a power window of 0", "run --kernel hbm_stream --power-window 0", 2,
       "--power-window '0': expected a number of cycles from 1 to 1073741824, e.g. 1024"},
      {"negative size", "run " + small + " --set cube.hbm.capacity=-1GiB", 1,
       "cube.hbm.capacity: value '-1GiB' is not allowed; allowed: a size in bytes"},
      {"10^9 x 10^9 mesh", "run --set sip.mesh.x=1000000000 --set sip.mesh.y=1000000000", 1,
       "sip.mesh.x: value '1000000000' is not allowed; allowed: a whole number from 1 to 16"},
      {"bad --set", "run --set sip.mesh", 1, "--set sip.mesh: expected key.path=value"},
      {"--set of no key", "run --set sip.cubes_x=4", 1, "no key 'cubes_x' under 'sip'; valid keys there: mesh, noc"},
      // Workload shapes.
      {"mesh too small for C", "run --set sip.mesh.x=2 --set sip.mesh.y=2 --cubes-per-group 8", 1,
       "--cubes-per-group 8 is a 4x2 group, which does not tile the 2x2 cube mesh"},
      {"H_q not a multiple of H_kv", "run --heads-q 60", 1, "--heads-q 60 is not a multiple of --heads-kv 8"},
      {"prefill H_q not a multiple of H_kv", "run --kernel gqa_prefill --heads-q 63", 1,
       "--heads-q 63 is not a multiple of --heads-kv 8"},
      {"d = 0", "run --kernel gqa_prefill --head-dim 0", 1, "--head-dim 0 is not supported; allowed: 1 to 512"},
      {"T_q > S, causal", "run --kernel gqa_prefill --seq-len 512 --q-len 1024", 1,
       "--q-len 1024 is not allowed; allowed: 1 to the context length 512"},
      {"more KV heads than cubes", "run --heads-q 128 --heads-kv 128", 1,
       "128 KV heads need 8 SIP(s) at one cube per head; the run has 4"},
      {"prefill placement too small", "run --kernel gqa_prefill --heads-kv 8 --devices 0 --cubes-per-group 4", 1,
       "8 KV heads in groups of 4 cubes need 2 SIP(s); the run has 1"},
      {"odd prefill ring", "run --kernel gqa_prefill --cubes-per-group 3", 1,
       "--cubes-per-group 3: the ring needs a Hamiltonian cycle of the group, so an even number of cubes (or one)"},
      {"prefill buffers over TCM", "run --kernel gqa_prefill --chunk 4096", 1,
       "of TCM per PE; a PE has 1MiB: give a smaller --chunk or --q-tile"},
      {"S = 0", "run --seq-len 0", 1, "--seq-len 0: the context needs at least one position"},
      {"misspelt model preset", "run --model lama3-8b", 2,
       "--model 'lama3-8b' is not a preset; presets: llama2-7b, llama3-8b, llama3-70b,"},
      {"prefill S = 0", "run --kernel gqa_prefill --seq-len 0", 1, "--seq-len 0: the context needs"},
      {"absurd S", "run --seq-len 99999999999999", 2, "--seq-len '99999999999999': expected a whole number from 0"},
      {"unsupported head dim", "run --head-dim 1000", 1, "--head-dim 1000 is not supported; allowed: 1 to 512"},
      {"unsupported dtype", "run --dtype fp8", 2, "--dtype 'fp8': allowed values: bf16, fp32"},
      {"too many PEs", "run --pes 9", 1, "--pes 9 is not allowed; a cube of this topology has 8 PEs"},
      {"SIP out of range", "run --devices 7", 1, "--devices '7': the topology has 4 SIP(s), numbered 0-3"},
      // Batches.
      {"a request of length 0", batch + "--batch 1024,0", 2, "--batch item 2 0: a request needs a context of at least 1"},
      {"an empty batch", batch + "--batch ''", 2, "--batch is empty: give lengths,"},
      {"a malformed batch", batch + "--batch 1024,x", 2, "--batch item 2 'x': a length is a whole number of at least 1"},
      {"random MIN > MAX", batch + "--batch random:4:100-10", 2, "MIN 100 is over MAX 10"},
      {"unknown batch reduce", batch + "--reduce tree", 2, "--reduce 'tree': allowed values: auto, two-level"},
      {"a batch over HBM", batch + "--batch 140000000", 1,
       "the batch's K and V pages need at least 1093752KiB in the fullest HBM channel (136719 pages of 16 rows, K and V); a "
       "channel holds 1GiB"},
      {"a batch whose lengths overflow", batch + "--batch 9000000000000000000,9000000000000000000,9000000000000000000",
       1, "the batch's K and V pages need more than 2^64 bytes in the fullest HBM channel"},
      {"too many random requests", batch + "--batch random:100000:1-2", 2,
       "N 100000 is over the 65536 requests a batch may hold"},
      {"pages over TCM", batch + "--batch 1024 --page-rows 65536", 1,
       "of TCM per PE (G x T_q = 8 query rows at once, tiles of 65536 KV rows, whole pages of --page-rows 65536); a "
       "PE has 1MiB: give a smaller --page-rows or --q-len"},
      {"T_q over a request's length", batch + "--batch 1,100 --q-len 2", 1,
       "--q-len 2 is over the shortest request's length 1"},
      {"lens.npy against k.npy", "run " + small + " --kernel gqa_decode_batch --heads-q 4 --heads-kv 1 --head-dim 16 "
       "--cubes-per-group 4 --pes 2 --inputs @/batch", 1, "@/batch/k.npy: shape [1, 9, 16] does not match [1, 8, 16]"},
      // .npy inputs.
      {"missing .npy", decode + "--inputs @/missing", 1, "@/missing/k.npy: cannot open .npy file"},
      {"wrongly shaped .npy", decode + "--inputs @/shape", 1,
       "@/shape/v.npy: shape [1, 64, 8] does not match the run's [1, 64, 16]"},
      {"wrong rank .npy", decode + "--inputs @/rank", 1, "@/rank/v.npy: shape [1024] does not match"},
      {"wrong dtype .npy", decode + "--inputs @/dtype", 1,
       "@/dtype/v.npy: dtype '<f2' is not supported; allowed: float32 ('<f4')"},
      {"fortran .npy", decode + "--inputs @/fortran", 1, "@/fortran/v.npy: Fortran-ordered arrays are not supported"},
      {"truncated .npy", decode + "--inputs @/truncated", 1,
       "@/truncated/v.npy: data is 100 bytes, the shape [1, 64, 16] needs 4096"},
      {"overflowing .npy shape", decode + "--inputs @/huge", 1,
       "@/huge/v.npy: data is 16 bytes, the shape [999999999999, 999999999999] needs more than 2^64"},
      // Output paths.
      {"--json in a missing folder", "run --json @/no/r.json", 1, "--json @/no/r.json: folder '@/no' does not exist"},
      {"--json is a folder", "run " + small + " --kernel hbm_stream --json @", 1, "cannot write output file"},
      {"--outputs missing", decode + "--inputs @/good --outputs @/no", 1, "--outputs @/no: no such folder"},
      {"--op-log suffix", "run --op-log @/log.txt", 2, "--op-log @/log.txt: the file name must end in .jsonl or .csv"},
      // Conflicting flags.
      {"--causal and --no-causal", "run --causal --no-causal", 2, "--causal and --no-causal contradict each other"},
      {"--check without data", "run --check", 2, "--check and --outputs need --data (data mode) or --inputs"},
      {"--jobs with --data", "run --data --jobs 2", 2, "--jobs splits timing-mode runs"},
      {"--vcd-filter without --vcd", "run --vcd-filter 'sip0.*'", 2, "--vcd-filter needs --vcd FILE"},
      {"--inputs for a non-attention kernel", "run --kernel tiled_gemm --inputs @/good", 2,
       "--inputs applies to --kernel gqa_decode, gqa_decode_batch and gqa_prefill"},
      {"hbm_stream with --data", "run --kernel hbm_stream --data", 2, "--kernel hbm_stream drives the DMA directly"},
  };
#ifndef __SANITIZE_ADDRESS__  // (the sanitizer's allocator stops the process instead of throwing)
  // Data mode holds K and V on the host: 2^24 rows x 8 heads x 128 x fp32, twice (128 GiB).
  out.push_back({"data mode over the host's memory", "run --data --seq-len 16777216", 1, "out of host memory"});
#endif
  return out;
}

TEST(BadInput, EveryCaseIsAClearErrorWithNoOutputLeft) {
  const std::string dir = temp_dir("bad_input");
  write_fixtures(dir);
  const auto before = files_under(dir);
  for (const Case& c : cases()) {
    const std::string args = replace_all(c.args, "@", dir);
    // Outputs that a successful run would write; a refused run must leave none.
    const bool is_run = args.starts_with("run ");
    const std::string outputs = is_run && args.find("--json") == std::string::npos ? " --json " + dir + "/out.json" : "";
#ifdef __SANITIZE_ADDRESS__
    const std::string limit;
#else
    const std::string limit = "ulimit -v 1048576; ";
#endif
    const Result r = run_shell(limit + "timeout 60 " + std::string(KERNBENCH_BINARY) + " " + args + outputs);
    EXPECT_EQ(r.code, c.code) << c.what << ": " << args << "\n" << r.out;
    EXPECT_NE(r.out.find("kernbench: error: "), std::string::npos) << c.what << "\n" << r.out;
    EXPECT_NE(r.out.find(replace_all(c.message, "@", dir)), std::string::npos) << c.what << "\n" << r.out;
    EXPECT_EQ(files_under(dir), before) << c.what << ": left files behind";
  }
}

}  // namespace
}  // namespace kb::test
