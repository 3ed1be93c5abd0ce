#pragma once
// The end-of-run summary of a simulation, as text and as the --json result.
#include <map>
#include <optional>
#include <vector>
#include <string>

#include <nlohmann/json.hpp>

#include "platform/hbm_stream.h"
#include "kernels/gqa/decode_run.h"
#include "kernels/gqa/prefill_run.h"
#include "platform/op_log.h"
#include "platform/utilisation.h"

namespace kb::report {

struct RunInfo {
  std::optional<Utilisation> use;  // tl kernels
  std::string topology_file;
  std::string topology_name;
  double elaboration_seconds = 0;
  double simulation_seconds = 0;
  long peak_rss_kib = 0;
  std::uint64_t transactions = 0;  // modelled: engine commands + HBM accesses
};

std::string format_stream(const Topology& topo, const StreamResult& r, const RunInfo& info);

// A tl kernel's run, summarised from its op log.
struct KernelSummary {
  std::string kernel;
  bool data = false;
  std::uint32_t pes = 0;
  std::uint64_t cycles = 0;
  nlohmann::json knobs;
};
// Numeric check of a data-mode attention run against the fp64 reference.
using gqa::NumericCheck;

std::string format_decode(const Topology& topo, const gqa::DecodeConfig& c, const gqa::DecodeResult& r,
                          const std::optional<NumericCheck>& check, const RunInfo& info);
nlohmann::json decode_json(const Topology& topo, const gqa::DecodeConfig& c, const gqa::DecodeResult& r,
                           const std::optional<NumericCheck>& check, const RunInfo& info);

std::string format_prefill(const Topology& topo, const gqa::PrefillConfig& c, const gqa::PrefillResult& r,
                           const std::optional<NumericCheck>& check, const RunInfo& info);
nlohmann::json prefill_json(const Topology& topo, const gqa::PrefillConfig& c, const gqa::PrefillResult& r,
                            const std::optional<NumericCheck>& check, const RunInfo& info);

std::string format_kernel(const Topology& topo, const KernelSummary& k, const OpLog& log, const RunInfo& info);
nlohmann::json kernel_json(const Topology& topo, const KernelSummary& k, const OpLog& log, const RunInfo& info);
nlohmann::json stream_json(const Topology& topo, const StreamResult& r, const RunInfo& info);

long peak_rss_kib();

}  // namespace kb::report
