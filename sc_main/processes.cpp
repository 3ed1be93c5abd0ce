#include "sc_main/processes.h"

#include "base/interrupt.h"

#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <sys/wait.h>
#include <spawn.h>
#include <unistd.h>

#include <cstring>
#include <fstream>
#include <stdexcept>

extern char** environ;

namespace kb::cli {

pid_t spawn_self(const std::vector<std::string>& args, const std::string& log,
                 const std::vector<std::pair<int, int>>& fds) {
  std::string self = "/proc/self/exe";
  std::vector<std::string> copy = args;
  std::vector<char*> argv{self.data()};
  for (auto& a : copy) argv.push_back(a.data());
  argv.push_back(nullptr);
  posix_spawn_file_actions_t files;
  posix_spawn_file_actions_init(&files);
  posix_spawn_file_actions_addopen(&files, STDOUT_FILENO, log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawn_file_actions_adddup2(&files, STDOUT_FILENO, STDERR_FILENO);
  for (const auto& [from, to] : fds) posix_spawn_file_actions_adddup2(&files, from, to);
  // A worker is a process of its own, not a rank: it does not get the MPI launcher's
  // variables (with them it would try to join the MPI job).
  std::vector<std::string> env;
  for (char** e = environ; *e != nullptr; ++e) {
    const std::string var = *e;
    if (!var.starts_with("OMPI_") && !var.starts_with("PMIX_") && !var.starts_with("PMI_")) env.push_back(var);
  }
  std::vector<char*> envp;
  for (auto& v : env) envp.push_back(v.data());
  envp.push_back(nullptr);
  // SIGINT and SIGTERM wait until the worker is remembered, so that the handler stops
  // every worker there is; the worker starts with the mask and handlers of a new process.
  sigset_t stop_signals, previous;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGINT);
  sigaddset(&stop_signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &stop_signals, &previous);
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  posix_spawnattr_setsigmask(&attr, &previous);
  posix_spawnattr_setsigdefault(&attr, &stop_signals);
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
  pid_t pid = 0;
  const int rc = posix_spawn(&pid, self.c_str(), &files, &attr, argv.data(), envp.data());
  posix_spawnattr_destroy(&attr);
  posix_spawn_file_actions_destroy(&files);
  if (rc == 0) interrupt::remember_worker(pid);
  pthread_sigmask(SIG_SETMASK, &previous, nullptr);
  if (rc != 0) throw std::runtime_error("cannot start a worker process: " + std::string(std::strerror(rc)));
  return pid;
}

pid_t reap(int& status, bool hang) {
  const pid_t pid = ::waitpid(-1, &status, hang ? 0 : WNOHANG);
  if (pid > 0) interrupt::forget_worker(pid);
  return pid;
}

std::string log_tail(const std::string& log, std::size_t lines) {
  std::ifstream in(log);
  std::vector<std::string> all;
  for (std::string line; std::getline(in, line);) all.push_back(line);
  std::string out;
  for (std::size_t i = all.size() > lines ? all.size() - lines : 0; i < all.size(); ++i) out += "  " + all[i] + "\n";
  return out;
}

std::string command_text(const std::vector<std::string>& args) {
  std::string s = "kernbench";
  for (const auto& a : args) {
    s += ' ';
    s += a;
  }
  return s;
}

}  // namespace kb::cli
