#pragma once
// `kernbench bench gqa_llama70b`: the milestone sweep. Each point is a `kernbench run`
// in its own process (SystemC allows one simulation per process), up to --jobs at a
// time; every finished point is added to sweep.json and sweep.csv at once (each file
// rewritten whole and renamed, so an interrupted sweep keeps every finished row), and
// --resume skips the points a previous sweep finished. At the end the decode points
// give the SP table that `run --cubes-per-group auto --pes auto` uses.
#include <string>
#include <vector>

namespace kb::cli {

int cmd_bench(const std::vector<std::string>& args);

}  // namespace kb::cli
