#pragma once
// run --jobs N: one run of gqa_decode or gqa_prefill split by SIP over N processes. The
// kernels send nothing between SIPs, so each process simulates some SIPs (the placement
// still spans all of the run's devices) and writes its part: its op log and its partial
// result. The parent merges them into the op log, result and report the single-process
// run gives: the op log is grouped by PE (OpLog::group_by_pe), the latency is the
// latest part's, counts add up, and per-PE sums are whole cycles, so nothing depends on
// the order of the parts.
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "kernels/gqa/decode_run.h"
#include "kernels/gqa/prefill_run.h"
#include "platform/op_log.h"
#include "platform/utilisation.h"
#include "sc_main/report.h"

namespace kb::cli {

// A part's file, written by the process that simulated it.
nlohmann::json part_json(const gqa::DecodeResult& r, const report::RunInfo& info);
nlohmann::json part_json(const gqa::PrefillResult& r, const report::RunInfo& info);

// The devices cut into at most n contiguous, nearly equal parts.
std::vector<std::vector<SipId>> split_devices(const std::vector<SipId>& devices, std::size_t n);

// The parts' merge (parts in device order).
gqa::DecodeResult merge_decode(const std::vector<nlohmann::json>& parts);
gqa::PrefillResult merge_prefill(const std::vector<nlohmann::json>& parts);
// Utilisation rows, wall figures (the slowest part's elaboration, the largest RSS, all
// transactions); `seconds` is the parent's wall time for the whole split run.
report::RunInfo merge_info(const std::vector<nlohmann::json>& parts, std::uint64_t cycles, double seconds);

// Runs `kernbench ARGS --devices ALL --simulate PART --part F` for every part at once
// and waits; with `log`, the parts also write their op logs, which fill it in device
// order. Returns the parts. Throws naming the failed part and its last output lines.
std::vector<nlohmann::json> run_parts(const std::vector<std::string>& args, const std::vector<SipId>& devices,
                                      const std::vector<std::vector<SipId>>& parts, OpLog* log);

}  // namespace kb::cli
