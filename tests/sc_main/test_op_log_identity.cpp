// The simulated timing is fixed: a set of runs that covers every kernel, both modes and
// a split run writes the op logs whose hashes tests/sc_main/op_log_hashes.json keeps.
// A change to the simulator's speed or memory must leave them byte for byte; a change
// that means to move timing updates the file (scripts/op_log_hashes.py re-records it) and
// says why in its commit.
#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <iterator>

#include <nlohmann/json.hpp>

#include "tests/sc_main/cli_support.h"

namespace kb::test {
namespace {

// 64-bit FNV-1a of a file's bytes (OpLog::hash over the JSON-lines text it holds).
std::uint64_t file_hash(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::uint64_t h = 1469598103934665603ull;
  for (auto it = std::istreambuf_iterator<char>(in); it != std::istreambuf_iterator<char>(); ++it) {
    h ^= static_cast<unsigned char>(*it);
    h *= 1099511628211ull;
  }
  return h;
}

TEST(OpLogIdentity, TheRecordedRunsWriteTheRecordedOpLogs) {
  std::ifstream in(source_path("tests/sc_main/op_log_hashes.json"));
  const nlohmann::json cases = nlohmann::json::parse(in);
  ASSERT_GE(cases.size(), 8u);
  const std::string dir = temp_dir("op_log_identity");
  for (const auto& c : cases) {
    const std::string name = c.at("name"), log = dir + "/" + name + ".jsonl";
    std::string args = c.at("args");
    for (std::size_t at; (at = args.find("TOPOLOGIES/")) != std::string::npos;)
      args.replace(at, 11, source_path("topologies/"));
    const Result r = run("run " + args + " --op-log " + log);
    ASSERT_EQ(r.code, 0) << name << ": " << args << "\n" << r.out;
    std::ifstream lines(log);
    const auto records = static_cast<std::size_t>(std::count(std::istreambuf_iterator<char>(lines), {}, '\n'));
    EXPECT_EQ(records, c.at("records").get<std::size_t>()) << name << ": kernbench run " << args;
    EXPECT_EQ(file_hash(log), std::stoull(c.at("hash").get<std::string>(), nullptr, 16))
        << name << ": kernbench run " << args << " wrote another op log";
  }
}

}  // namespace
}  // namespace kb::test
