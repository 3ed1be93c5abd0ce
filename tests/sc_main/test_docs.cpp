// The documents describe what the code does now: BENCHMARKS.md's headline figures are
// what the program prints, the repository stands on its own (no design documents it
// does not hold), and `run --help` says which workloads read each flag.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <regex>

#include "tests/sc_main/cli_support.h"

namespace kb {
namespace {

using test::run;

std::string read_text(const std::string& path) {
  std::ifstream in(path);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

std::string without_commas(std::string s) {
  std::erase(s, ',');
  return s;
}

// The headline table's rows (S -> simulated cycles), their critical paths and the 128K
// breakdown line.
TEST(Docs, BenchmarksHeadlineFiguresAreWhatTheProgramPrints) {
  const std::string doc = read_text(test::source_path("BENCHMARKS.md"));
  for (const std::string s : {"4,096", "32,768", "131,072"}) {
    std::smatch m;
    ASSERT_TRUE(std::regex_search(doc, m, std::regex("\\| " + s + " \\| ([0-9,]+) cycles \\|"))) << s;
    const auto r = run("run --seq-len " + without_commas(s));
    ASSERT_EQ(r.code, 0) << r.out;
    EXPECT_NE(r.out.find("simulated       " + without_commas(m[1].str()) + " cycles"), std::string::npos)
        << "BENCHMARKS.md says " << m[1] << " cycles at S = " << s << "; the program prints:\n" << r.out;
    // Its row of the critical-path table: the cycles per cause the report prints.
    std::smatch c;
    ASSERT_TRUE(std::regex_search(doc, c, std::regex("\\| decode, S = " + s + " \\| [0-9,]+ \\| ([0-9,]+) \\| ([0-9,]+) "
                                                     "\\| ([0-9,]+) \\| ([0-9,]+) \\| ([0-9,]+) \\| ([0-9,]+) \\|")))
        << s;
    const char* causes[] = {"hbm", "noc", "fabric", "gemm", "math", "cpu"};
    for (std::size_t i = 0; i < 6; ++i) {
      std::smatch p;
      const std::string cycles = std::regex_search(r.out, p, std::regex(std::string("\\n +") + causes[i] + " +([0-9]+) "))
                                     ? p[1].str()
                                     : "0";
      EXPECT_EQ(without_commas(c[i + 1].str()), cycles) << causes[i] << " at S = " << s << ":\n" << r.out;
    }
    if (s != "131,072") continue;
    std::smatch b;
    ASSERT_TRUE(std::regex_search(doc, b, std::regex("S = 128K \\(report `breakdown`, cycles\\): KV sweep (\\[[0-9]+, [0-9]+\\))")));
    EXPECT_NE(r.out.find("KV sweep " + b[1].str()), std::string::npos) << b[1] << " vs\n" << r.out;
  }
}

// Every file git tracks stands on its own: no reference to design documents outside it.
TEST(Docs, NoReferenceToDocumentsOutsideTheRepository) {
  // The words are spelled apart so that this file does not match itself.
  const std::string design = std::string("DESI") + "GN", seed = std::string("se") + "ed";
  const std::string section = std::string("\xC2") + "\xA7";
  const std::string pattern = design + " " + section + "|" + design + "\\.md|" + seed + " " + section + "|shared/" + seed + "|" + seed + " ADR";
  const auto r = test::run_shell("cd " + test::source_path("") + " && git ls-files -z | xargs -0 grep -I -n -E '" +
                                 pattern + "' || true");
  EXPECT_EQ(r.out, "");
}

// The help text lists the workloads that read each knob, not one workload's name.
TEST(Docs, RunHelpSaysWhichWorkloadsReadEachFlag) {
  const auto r = run("run --help");
  ASSERT_EQ(r.code, 0) << r.out;
  std::smatch m;
  ASSERT_TRUE(std::regex_search(r.out, m, std::regex("--seq-len[^\n]*\n?[^\n]*")));
  EXPECT_NE(m.str().find("[gqa_decode and gqa_prefill]"), std::string::npos) << m.str();
  EXPECT_TRUE(std::regex_search(r.out, std::regex("--bytes[^\n]*\n?[^\n]*\\[hbm_stream and collective\\]")));
  EXPECT_EQ(r.out.find("gqa_decode:"), std::string::npos);
  for (const char* w : {"gqa_decode", "gqa_prefill", "hbm_stream", "tiled_gemm", "row_softmax", "collective"})
    EXPECT_TRUE(std::regex_search(r.out, std::regex(std::string("\n  ") + w + " +[A-Za-z]"))) << w;
}

}  // namespace
}  // namespace kb
