#pragma once
// Worker processes: kernbench runs more work at once by starting copies of itself
// (SystemC allows one simulation per process, so never threads).
#include <sys/types.h>

#include <string>
#include <vector>

namespace kb::cli {

// Starts `kernbench ARGS...` with stdout and stderr to `log`; returns its pid.
pid_t spawn_self(const std::vector<std::string>& args, const std::string& log);
// The last lines of a worker's log, indented, for an error message.
std::string log_tail(const std::string& log, std::size_t lines = 5);
// "kernbench ARGS..." for messages.
std::string command_text(const std::vector<std::string>& args);

}  // namespace kb::cli
