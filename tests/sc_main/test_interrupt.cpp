// SIGTERM (or SIGINT) to kernbench: outputs stay complete, no temporary file, worker
// process or scratch folder is left behind, and the process dies of the signal.
#include <gtest/gtest.h>

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <thread>

#include <nlohmann/json.hpp>

#include "tests/sc_main/cli_support.h"

namespace kb::test {
namespace {

// Processes whose command line mentions `text`.
int processes_mentioning(const std::string& text) {
  int n = 0;
  for (const auto& entry : std::filesystem::directory_iterator("/proc")) {
    std::ifstream in(entry.path() / "cmdline");
    std::string cmdline((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    n += cmdline.find(text) != std::string::npos ? 1 : 0;
  }
  return n;
}

TEST(Interrupt, SigtermDuringASweepLeavesCompleteFilesAndNothingElse) {
  const std::string dir = temp_dir("interrupt");
  const std::string out = dir + "/sweep.json";
  const pid_t pid = start_until_rows({"bench", "gqa_llama70b", "--quick", "--jobs", "2", "--out", out}, out, 3, false);
  ASSERT_GT(pid, 0) << "the sweep never wrote rows";
  const std::string scratch = "kernbench_sweep_" + std::to_string(pid);
  // A moment with a worker running: just after a row is written, the driver may still be
  // starting that point's successor while the other worker also finishes.
  bool running = false;
  for (int i = 0; i < 400 && !running; ++i) {
    running = processes_mentioning(scratch) > 0;
    if (!running) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  ASSERT_TRUE(running) << "no worker was running";
  kill(pid, SIGTERM);  // the driver only, as a service manager would
  int status = 0;
  waitpid(pid, &status, 0);
  EXPECT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGTERM) << "status " << status;
  std::ifstream in(out);
  EXPECT_TRUE(nlohmann::json::accept(in)) << "sweep.json is torn";
  for (const auto& f : std::filesystem::directory_iterator(dir))
    EXPECT_EQ(f.path().filename().string().find(".tmp."), std::string::npos) << f.path();
  EXPECT_FALSE(std::filesystem::exists(std::filesystem::temp_directory_path() / scratch));
  EXPECT_EQ(processes_mentioning(scratch), 0) << "workers outlived the driver";
}

}  // namespace
}  // namespace kb::test
