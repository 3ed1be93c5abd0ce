#pragma once
// Running the kernbench program from a test: its exit code and output, temp folders.
#include <sys/wait.h>

#include <array>
#include <cstdio>
#include <filesystem>
#include <string>

#include <gtest/gtest.h>

#include "tests/support.h"

namespace kb::test {

struct Result {
  int code = -1;
  std::string out;  // stdout and stderr
};

inline Result run(const std::string& args) {
  const std::string cmd = std::string(KERNBENCH_BINARY) + " " + args + " 2>&1";
  Result r;
  FILE* p = popen(cmd.c_str(), "r");
  if (p == nullptr) return r;
  std::array<char, 4096> buf{};
  while (fgets(buf.data(), buf.size(), p) != nullptr) r.out += buf.data();
  const int status = pclose(p);
  r.code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return r;
}

inline std::string topo(const std::string& name) { return test::source_path("topologies/" + name + ".yaml"); }

inline std::string temp_dir(const std::string& name) {
  const auto dir = std::filesystem::path(testing::TempDir()) / ("kernbench_cli_" + name);
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir.string();
}

}  // namespace kb::test
