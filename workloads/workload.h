#pragma once
// The workload interface. A workload is what `kernbench run --kernel NAME` runs: it
// declares the configuration fields it reads (its knobs), turns their values into a job
// configured for a topology, runs the job into a Result (workloads/result.h) and writes
// the report's lines from a Result alone, so a merged result reports like a whole one.
// Workloads are listed in workloads/list.h.
#include <algorithm>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <memory>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

#include "base/dtype.h"
#include "base/topology.h"
#include "platform/runtime_context.h"
#include "workloads/result.h"

namespace kb::workloads {

// A configuration problem, in the library's terms. The text writes configuration fields
// as {field}: what() reads "seq_len 0: ...", and the program shows its own name for the
// field ("--seq-len 0: ..."). Text that comes from the user (a value, a path) goes in
// through literal(), so its braces stay braces. A usage error is a value that does not parse or knobs that
// contradict each other; otherwise the value parses but does not fit (the machine, the
// shapes, the files).
class ConfigError : public std::invalid_argument {
 public:
  ConfigError(const std::string& text, bool usage = false);
  const std::string& text() const { return text_; }
  bool usage() const { return usage_; }
  // The text with each {field} replaced by name(field).
  std::string render(const std::function<std::string(const std::string&)>& name) const;
  // `text` as it must stand in an error's text: its braces doubled.
  static std::string literal(const std::string& text);

 private:
  std::string text_;
  bool usage_;
};

// One configuration field a workload reads.
struct Knob {
  std::string field;     // e.g. "seq_len"
  std::string fallback;  // the value when it is not given ("" for none; a switch is off)
  std::string help;
  bool is_switch = false;
};

// Knobs read together; several workloads may read one set (the attention shape).
struct KnobSet {
  std::string name;
  std::vector<Knob> knobs;
};

// The values of a run's knobs: given ones, and the fallbacks of the rest.
class Values {
 public:
  void set(const std::string& field, std::string text, bool given);
  bool given(const std::string& field) const { return given_.count(field) > 0; }
  const std::string& text(const std::string& field) const;
  bool on(const std::string& field) const { return text(field) == "true"; }
  // A whole number in [lo, hi]; a usage ConfigError otherwise.
  std::uint64_t count(const std::string& field, std::uint64_t lo, std::uint64_t hi) const;
  std::uint32_t count32(const std::string& field, std::uint32_t lo, std::uint32_t hi) const {
    return static_cast<std::uint32_t>(count(field, lo, hi));
  }

 private:
  std::map<std::string, std::string> texts_;
  std::set<std::string> given_;
};

// What one process of a split run simulates (run --jobs, MPI): a whole SIP, or one CUBE
// group of it (`group`: its index among the SIP's groups, as the placement numbers them;
// groups share nothing, so each simulates alone as it would beside the others).
struct SimUnit {
  SipId sip;
  std::optional<std::uint32_t> group;  // empty: the whole SIP
  bool operator==(const SimUnit& o) const { return sip == o.sip && group == o.group; }
  bool operator!=(const SimUnit& o) const { return !(*this == o); }
};

// What the program decides for every workload of a run.
struct Setup {
  const Topology* topo = nullptr;
  std::vector<SipId> devices;     // the SIPs the run uses
  std::vector<SimUnit> simulate;  // what this process simulates (a split run's part); empty: all
  bool data = false;              // data mode
};

// A workload configured for a run.
class Job {
 public:
  virtual ~Job() = default;
  // Lines the program prints before it simulates (choices made for the user).
  virtual std::vector<std::string> notes() const { return {}; }
  // Whether the job simulates values (data mode), given the program's --data.
  virtual bool data_mode(bool asked) const { return asked; }
  // Whether the job reads the whole op log after its run, so the runtime must keep every
  // record (otherwise a run keeps none unless traces are asked for).
  virtual bool reads_op_log() const { return false; }
  // Each cube's CUBE group within a SIP, for a job whose groups share nothing (no message,
  // no link): a split run may simulate them apart, and the timeline draws a critical path
  // per group. Empty: a SIP is one group.
  virtual std::vector<std::uint32_t> cube_groups() const { return {}; }
  // Whether its SIPs exchange messages over the links: a split run simulates them in
  // step (platform/split_run.h).
  virtual bool couples_sips() const { return false; }
  std::uint32_t groups_per_sip() const {
    const std::vector<std::uint32_t> groups = cube_groups();
    return groups.empty() ? 1 : *std::max_element(groups.begin(), groups.end()) + 1;
  }
  // Runs on a fresh runtime of the setup's system; fills the workload's figures (and
  // numerics), not the common fields the program measures (utilisation, wall time).
  virtual Result run(RuntimeContext& rt) = 0;
};

class Workload {
 public:
  virtual ~Workload() = default;
  virtual std::string name() const = 0;
  virtual std::string summary() const = 0;
  virtual std::vector<const KnobSet*> knobs() const = 0;
  // tl kernels have an op log, a timeline, data mode and run limits; others drive the
  // models directly.
  virtual bool tl() const { return true; }
  // The run can be split by SIP over processes (--jobs, MPI).
  virtual bool splits_by_sip() const { return false; }
  // Throws ConfigError naming the fields.
  virtual std::unique_ptr<Job> configure(const Values& values, const Setup& setup) const = 0;
  // Fills the Derived figures from the others (after a run and after a merge).
  virtual void derive(Result& r, const Topology& topo) const {
    (void)r;
    (void)topo;
  }
  // The report's lines from the first through the workload's own; the program adds the
  // numerics, utilisation and wall-time lines.
  virtual std::string report(const Result& r, const Topology& topo) const = 0;
};

// dtype and seed: how tl workloads store values and seed their random inputs.
const KnobSet& storage_knobs();
// bytes: the size a workload moves (hbm_stream: each PE; collective: each rank's buffer).
const KnobSet& size_knobs();
// check: a run whose result misses its fp64 reference exits 1 (data mode).
const KnobSet& check_knobs();
// model: a model preset (presets/models.yaml) whose shape the workload takes.
const KnobSet& model_knobs();
// outputs: a folder the run's data-mode outputs are written into as .npy.
const KnobSet& outputs_knobs();
// q_len: the query tokens of a prefill, or of a chunk of it after a cached prefix.
const KnobSet& q_len_knobs();
DType dtype_of(const Values& v);
std::uint32_t seed_of(const Values& v);

// The one instance of a workload class, for its folder's registration function.
template <class W>
const Workload& instance() {
  static const W w;
  return w;
}

// Every workload, in the order of workloads/list.h.
const std::vector<const Workload*>& registry();
const Workload* find(const std::string& name);  // nullptr if none has that name

}  // namespace kb::workloads
