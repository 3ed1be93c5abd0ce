#pragma once
// `kernbench run`: the command line parsed into a request (every flag checked that can be
// without the topology), then executed: the workload configured from the registry, run
// in this process, split over processes (--jobs) or ranks (MPI), and reported.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "platform/runtime_context.h"
#include "workloads/workload.h"

namespace kb::cli {

struct RunRequest {
  std::string help;  // --help: the text to print, and nothing to run
  const workloads::Workload* workload = nullptr;
  workloads::Values values;  // the workload's knobs
  std::string topology_file;
  std::vector<std::string> sets;
  std::optional<std::string> devices;  // --devices as given
  bool data = false;
  std::string json, op_log, timeline, vcd, vcd_filter;
  std::string power_trace;            // --power-trace FILE.csv
  std::uint64_t power_window = 1024;  // --power-window: cycles a window (a long run's windows grow)
  RunOptions limits;  // max_cycles and timeout_seconds
  std::uint32_t jobs = 1;
  std::string simulate, part, exchange;   // what a part of a --jobs run gets from its parent
  std::vector<std::string> part_command;  // the command line a split run's parts get
};

// A configuration field as the program spells it: seq_len -> --seq-len.
std::string flag_of(const std::string& field);

// Parses `run`'s arguments. Throws UsageError (or boost's parse errors) for a command
// line that cannot run.
RunRequest parse_run(const std::vector<std::string>& args);

// Every flag `run` takes (less the ones a --jobs parent passes its parts), and whether it
// takes a value (a switch does not).
struct RunFlag {
  std::string name;  // without the dashes
  bool takes_value = true;
};
std::vector<RunFlag> run_flags();

// Checks a parsed request against its topology without simulating: the topology loads,
// the devices exist and the workload configures. Throws what execute_run would.
void check_run(const RunRequest& request);

// Runs a request; returns the exit code.
int execute_run(const RunRequest& request);

}  // namespace kb::cli
