#include "base/interrupt.h"

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <atomic>
#include <cstring>

namespace kb::interrupt {
namespace {

constexpr std::size_t kSlots = 256, kPathMax = 1024;
struct PathSlot {
  std::atomic<bool> used{false};
  char path[kPathMax];
};
std::array<PathSlot, kSlots> paths;
std::array<std::atomic<pid_t>, kSlots> workers;

void on_signal(int sig) {
  for (auto& w : workers)
    if (const pid_t pid = w.load(); pid > 0) ::kill(pid, SIGTERM);
  for (auto& w : workers)  // they clean up after themselves first
    if (const pid_t pid = w.load(); pid > 0) ::waitpid(pid, nullptr, 0);
  for (auto& p : paths)  // files first, then the folders they were in
    if (p.used.load()) ::unlink(p.path);
  for (auto& p : paths)
    if (p.used.load()) ::rmdir(p.path);
  ::signal(sig, SIG_DFL);
  ::raise(sig);
}

}  // namespace

void install() {
  struct sigaction sa {};
  sa.sa_handler = on_signal;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGINT, &sa, nullptr);
  sigaction(SIGTERM, &sa, nullptr);
}

int remember_path(const std::string& path) {
  if (path.size() >= kPathMax) return -1;
  for (std::size_t i = 0; i < kSlots; ++i) {
    bool expected = false;
    if (!paths[i].used.load()) {
      std::memcpy(paths[i].path, path.c_str(), path.size() + 1);
      if (paths[i].used.compare_exchange_strong(expected, true)) return static_cast<int>(i);
    }
  }
  return -1;
}

void forget_path(int slot) {
  if (slot >= 0) paths[static_cast<std::size_t>(slot)].used.store(false);
}

void remember_worker(pid_t pid) {
  for (auto& w : workers) {
    pid_t expected = 0;
    if (w.compare_exchange_strong(expected, pid)) return;
  }
}

void forget_worker(pid_t pid) {
  for (auto& w : workers) {
    pid_t expected = pid;
    if (w.compare_exchange_strong(expected, 0)) return;
  }
}

}  // namespace kb::interrupt
