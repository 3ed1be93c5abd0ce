#pragma once
// Worker processes: kernbench runs more work at once by starting copies of itself
// (SystemC allows one simulation per process, so never threads).
#include <sys/types.h>

#include <string>
#include <utility>
#include <vector>

namespace kb::cli {

// Starts `kernbench ARGS...` with stdout and stderr to `log`, and each (from, to) of
// `fds` as the worker's descriptor `to`; returns its pid. An interrupt of this process
// stops the worker too, until reap() has collected it.
pid_t spawn_self(const std::vector<std::string>& args, const std::string& log,
                 const std::vector<std::pair<int, int>>& fds = {});
// Waits for a worker to end (`hang`: until one does; else 0 if none has): its pid.
pid_t reap(int& status, bool hang);
// The last lines of a worker's log, indented, for an error message.
std::string log_tail(const std::string& log, std::size_t lines = 5);
// "kernbench ARGS..." for messages.
std::string command_text(const std::vector<std::string>& args);

}  // namespace kb::cli
