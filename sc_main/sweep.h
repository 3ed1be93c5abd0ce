#pragma once
// `kernbench sweep SPEC.yaml --out DIR`: the points of a sweep spec (sc_main/sweep_spec.h),
// each a `kernbench run` in its own process (SystemC allows one simulation per process),
// up to --jobs at a time or spread over MPI ranks. Every finished point is added to the
// rows file and its CSV at once (each rewritten whole and renamed, so an interrupted
// sweep keeps every finished row), and --resume runs only the points a previous sweep
// did not finish. `kernbench sweep --report DIR` analyses a finished sweep
// (scripts/sweep_report.py). `kernbench bench gqa_llama70b` is a spec run by this engine.
#include <cstddef>
#include <map>
#include <string>
#include <vector>

#include <boost/program_options.hpp>
#include <nlohmann/json.hpp>

#include "sc_main/sweep_spec.h"

namespace kb::cli {

struct SweepOutput {
  std::string json;  // the rows; the CSV goes beside it, with the same stem
  std::size_t jobs = 1;
  bool resume = false;
};

// Runs the spec's points (those a resumed file lacks) and writes the files as points
// finish. Returns the rows by point index on rank 0 (other ranks: none). A failed point
// stops the sweep with an error naming its command and its log's tail.
std::map<std::size_t, nlohmann::ordered_json> run_sweep(const SweepSpec& spec, const SweepOutput& out);

int cmd_sweep(const std::vector<std::string>& args);

// What the sweep commands share on their command lines: `args` parsed against `opts`
// plus one positional argument into `positional`; and --jobs' value (1 to 256).
boost::program_options::variables_map parse_sweep_command(const std::vector<std::string>& args,
                                                          const boost::program_options::options_description& opts,
                                                          std::string& positional);
std::size_t jobs_of(const std::string& text);

}  // namespace kb::cli
