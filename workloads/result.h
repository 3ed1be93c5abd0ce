#pragma once
// The one result schema of every workload: what `run` prints, what `--json` writes, what
// a part of a split run (`--jobs`, MPI) hands its parent, and what a bench row holds.
// A workload's own figures are named values with a rule for merging the parts of a run
// split by SIP; the common fields (latency, numerics, utilisation, wall time) merge the
// same way for every workload.
#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "base/critical_path.h"
#include "base/ids.h"
#include "base/topology.h"
#include "platform/energy.h"
#include "platform/utilisation.h"

namespace kb::workloads {

// How the parts' values of a figure combine.
enum class Merge : std::uint8_t {
  Same,     // every part computes the same value (a property of the whole run)
  Sum,      // counts and totals
  Max,      // the largest part's
  Widen,    // a span {begin, end}: the smallest begin, the largest end
  Derived,  // recomputed from the other figures after the merge (Workload::derive)
};

struct Figure {
  std::string name;  // dotted names nest in JSON: "ring.bytes" -> {"ring": {"bytes": ...}}
  nlohmann::json value;
  Merge merge = Merge::Same;
};

// A data-mode output against the fp64 reference, with the FlashAttention-style tolerance:
// at most twice the error of the naive computation in the storage dtype, plus 1e-5.
struct Numerics {
  double error = 0, naive_error = 0, tolerance = 0;
  bool pass = false;
  bool enforced = false;  // a failed check fails the run
};

struct Wall {
  double elaboration_seconds = 0, simulation_seconds = 0;
  long peak_rss_kib = 0;
  std::uint64_t transactions = 0;  // modelled: engine commands + HBM accesses
};

// The ceilings of a roofline: the GEMM engines' peak and the HBM bandwidth of every PE
// of the SIPs a run used.
struct Machine {
  double peak_flops_per_second = 0, hbm_bytes_per_second = 0;
};

struct Result {
  std::string workload;
  std::string topology_file, topology_name;
  std::string mode;            // "timing" or "data"; empty for workloads without a mode
  nlohmann::json knobs;        // the resolved configuration
  std::vector<SipId> devices;  // the SIPs the run used
  Machine machine;             // of those SIPs
  std::uint64_t simulated_cycles = 0;
  double simulated_seconds = 0;
  std::vector<Figure> figures;
  std::optional<Numerics> numerics;
  std::optional<Utilisation> use;
  // Where the latency went (docs/critical_path.md): cycles per cause on the slowest
  // device's critical path; they sum to simulated_cycles.
  CriticalPath critical_path;
  // What the run's SIPs did, counted by the models (whole numbers: the parts of a split
  // run add up exactly), and the energy priced from it (docs/energy.md): the simulated
  // run's, or a model step's whole step scaled from its layers.
  std::vector<SipActivity> activity;
  std::optional<Energy> energy;
  Wall wall;
  // A run stopped at a limit: what it reached, and no figures.
  bool partial = false;
  std::string stopped;
  std::uint64_t cycles_reached = 0;

  // A result of `cycles` simulated cycles of `workload` on `devices`, at the topology's clock.
  static Result of(std::string workload, std::vector<SipId> devices, std::uint64_t cycles, const Topology& topo);

  void add(std::string name, nlohmann::json value, Merge merge);
  bool has(const std::string& name) const;
  const nlohmann::json& figure(const std::string& name) const;  // throws std::out_of_range
  double number(const std::string& name) const { return figure(name).get<double>(); }
  std::uint64_t count(const std::string& name) const { return figure(name).get<std::uint64_t>(); }

  // `windows`: the activity's windows too (a part of a split run hands them on; the
  // parent's power trace and a model step's energy read them).
  nlohmann::json to_json(bool windows = false) const;
  // Reads to_json's output (other keys are ignored; per-cube utilisation may be left out).
  static Result from_json(const nlohmann::json& j);
  // The parts of a run split by SIP, in device order: the latency and critical path are
  // the slowest part's (the first of them on a tie), figures merge by their rule (Derived ones are left for Workload::derive),
  // utilisation rows concatenate, wall time takes the largest elaboration and memory.
  static Result merge(const std::vector<Result>& parts);
};

// "0,1,3": SIP numbers as --devices takes them.
std::string devices_text(const std::vector<SipId>& devices);

}  // namespace kb::workloads
