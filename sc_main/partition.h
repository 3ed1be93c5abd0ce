#pragma once
// run --jobs N: one run of a workload that splits by SIP, spread over N processes. The
// kernels send nothing between SIPs, so each process simulates some SIPs (the placement
// still spans all of the run's devices) and writes its part: its op log and its result
// (workloads/result.h). The parent merges them (Result::merge) into the op log, result
// and report the single-process run gives: the op log is grouped by PE
// (OpLog::group_by_pe), the latency is the latest part's, counts add up, and per-PE sums
// are whole cycles, so nothing depends on the order of the parts.
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/ids.h"
#include "base/op_log.h"
#include "workloads/workload.h"

namespace kb::cli {

// The run's units (each device's CUBE groups, or the devices whole for a workload with
// one group per SIP) cut into at most n contiguous, nearly equal parts; a part with every
// group of a SIP has the SIP whole.
std::vector<std::vector<workloads::SimUnit>> split_units(const std::vector<SipId>& devices,
                                                         std::uint32_t groups_per_sip, std::size_t n);
// "0,1.0,1.1": SIP 0 whole, groups 0 and 1 of SIP 1 (the --simulate of a part).
std::string units_text(const std::vector<workloads::SimUnit>& units);
// Throws std::invalid_argument for anything else or a SIP not in `sips`.
std::vector<workloads::SimUnit> parse_units(const std::string& text, std::uint32_t sips);

// Runs `kernbench ARGS --devices ALL --simulate PART --part F` for every part at once
// and waits; with `log`, the parts also write their op logs, which fill it in device
// order; with an `op_log_path` instead, their op-log files are joined into that file in
// device order (concatenate_op_logs), held by no process. `coupled`: the parts simulate
// SIPs that the links couple, talking through pipes (--exchange; sc_main/exchange.h).
// Returns the parts. Throws naming the failed part and its last output lines.
std::vector<nlohmann::json> run_parts(const std::vector<std::string>& args, const std::vector<SipId>& devices,
                                      const std::vector<std::vector<workloads::SimUnit>>& parts, OpLog* log,
                                      const std::string& op_log_path, bool coupled);

}  // namespace kb::cli
