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

// Runs a shell command line, stdout and stderr together.
inline Result run_shell(const std::string& command) {
  const std::string cmd = command + " 2>&1";
  Result r;
  FILE* p = popen(cmd.c_str(), "r");
  if (p == nullptr) return r;
  std::array<char, 4096> buf{};
  while (fgets(buf.data(), buf.size(), p) != nullptr) r.out += buf.data();
  const int status = pclose(p);
  r.code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return r;
}

// Runs `kernbench ARGS`.
inline Result run(const std::string& args) { return run_shell(std::string(KERNBENCH_BINARY) + " " + args); }

// mpirun for tests on one machine: ranks may outnumber cores, and CI may run as root.
inline std::string mpirun() {
  return "OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 mpirun --oversubscribe";
}

inline std::string topo(const std::string& name) { return test::source_path("topologies/" + name + ".yaml"); }

inline std::string temp_dir(const std::string& name) {
  const auto dir = std::filesystem::path(testing::TempDir()) / ("kernbench_cli_" + name);
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir.string();
}

}  // namespace kb::test
