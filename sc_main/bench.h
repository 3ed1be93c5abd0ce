#pragma once
// `kernbench bench gqa_llama70b`: the milestone sweep, a short name for the spec
// sweeps/gqa_llama70b.yaml (--quick: its small version) run by the sweep engine
// (sc_main/sweep.h). At the end the decode rows give the SP table that
// `run --cubes-per-group auto --pes auto` uses.
#include <string>
#include <vector>

namespace kb::cli {

int cmd_bench(const std::vector<std::string>& args);

}  // namespace kb::cli
