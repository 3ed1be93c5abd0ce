#pragma once
// Running the kernbench program from a test: its exit code and output, temp folders.
#include <sys/wait.h>

#include <unistd.h>

#include <array>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

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

// mpirun with this kernbench, or why not: the MPI tests are skipped, saying so.
inline std::string mpi_unavailable() {
  if (run("--version").out.find("; MPI") == std::string::npos) return "kernbench was built without MPI";
  if (std::system("command -v mpirun > /dev/null 2>&1") != 0) return "mpirun is not installed";
  const Result probe = run_shell(mpirun() + " -n 2 " + KERNBENCH_BINARY + " --version");
  if (probe.code != 0) return "mpirun cannot start 2 ranks here: " + probe.out;
  return "";
}

inline std::string topo(const std::string& name) { return test::source_path("topologies/" + name + ".yaml"); }

inline std::string temp_dir(const std::string& name) {
  const auto dir = std::filesystem::path(testing::TempDir()) / ("kernbench_cli_" + name);
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir.string();
}

// A CSV file's header line and how many lines follow it.
inline std::pair<std::string, std::size_t> csv_header_and_rows(const std::string& file) {
  std::ifstream csv(file);
  std::string header, line;
  std::getline(csv, header);
  std::size_t rows = 0;
  while (std::getline(csv, line)) ++rows;
  return {header, rows};
}

// Starts `kernbench ARGS...` in the background (`own_group`: in a process group of its
// own) and returns its pid once the rows file ROWS holds at least `rows` rows (or -1
// after 30 s).
inline pid_t start_until_rows(const std::vector<std::string>& args, const std::string& rows_file, std::size_t rows,
                              bool own_group) {
  const pid_t pid = fork();
  if (pid == 0) {
    if (own_group) setpgid(0, 0);
    std::vector<char*> argv{const_cast<char*>(KERNBENCH_BINARY)};
    for (const std::string& a : args) argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    execv(KERNBENCH_BINARY, argv.data());
    _exit(127);
  }
  for (int i = 0; i < 600; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    std::ifstream in(rows_file);
    if (in && nlohmann::json::parse(in)["rows"].size() >= rows) return pid;
  }
  return -1;
}

}  // namespace kb::test
