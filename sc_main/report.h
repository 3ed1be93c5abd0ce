#pragma once
// The end-of-run summary of a simulation, as text and as the --json result.
#include <string>

#include <nlohmann/json.hpp>

#include "platform/hbm_stream.h"

namespace kb::report {

struct RunInfo {
  std::string topology_file;
  std::string topology_name;
  double elaboration_seconds = 0;
  double simulation_seconds = 0;
  long peak_rss_kib = 0;
};

std::string format_stream(const Topology& topo, const StreamResult& r, const RunInfo& info);
nlohmann::json stream_json(const Topology& topo, const StreamResult& r, const RunInfo& info);

long peak_rss_kib();

}  // namespace kb::report
