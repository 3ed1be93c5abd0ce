#pragma once
// The host runtime (docs/tl.md): places tensors in HBM (untimed host deploy), launches
// kernels SPMD on the PEs of a device, runs the simulation and reads results back.
#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <stdexcept>
#include <string>
#include <tuple>
#include <vector>

#include "kernels/tl/ctx.h"
#include "platform/critical_path.h"
#include "platform/split_run.h"
#include "models/sip/system.h"
#include "base/device_tensor.h"
#include "base/npy.h"
#include "base/op_log.h"

namespace kb {

struct RunOptions {
  bool data = false;                 // data mode: real bytes and real results
  std::uint64_t max_cycles = 0;      // stop a device's simulation after this many cycles (0: no limit)
  double timeout_seconds = 0;        // stop the run after this much wall time (0: no limit)
  // What the run keeps of its op log. Records go to the log's listeners as they close
  // in every case; only Records keeps them, so memory grows with the run's ops.
  enum class OpLogKept : std::uint8_t {
    Records,  // every record, with its critical spans (tests and the timeline read them)
    Spans,    // only the critical path's spans by record id (an op-log file written as the run goes)
    Nothing,  // no record and no critical-path history
  };
  OpLogKept op_log = OpLogKept::Records;
  // A process of a run split over processes (docs/parallel.md): how it talks to the
  // others. Coupled devices (couple_devices) then run on the SIPs the System built here,
  // in step with the other processes. Null: the whole run is here.
  PartExchange* exchange = nullptr;
};

// A run that could not complete: a deadlock, or a placement that does not fit.
class RunError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// A run stopped at a limit (RunOptions::max_cycles or timeout_seconds) before its
// kernels finished. The op log holds what was done until then.
class RunStopped : public RunError {
 public:
  RunStopped(const std::string& what, std::uint64_t cycles) : RunError(what), cycles_(cycles) {}
  std::uint64_t cycles() const { return cycles_; }  // simulated on the device that was stopped

 private:
  std::uint64_t cycles_;
};

// Part of every HBM channel that the caller reserves for some tensors (a virtual
// platform's software places them): from `base` in each channel, the tensors placed in
// the region follow one another, each shard starting on a kShardAlign boundary.
struct HbmRegion {
  explicit HbmRegion(std::uint64_t at = 0) : base(at) {}
  std::uint64_t base;
  std::map<PeCoord, std::uint64_t> end;  // per channel used: the end of its last shard
};

class RuntimeContext {
 public:
  using Kernel = std::function<void(tl::Ctx&)>;

  RuntimeContext(System& system, RunOptions options = {});
  ~RuntimeContext();

  // Places a tensor: in `region` when given, else after everything placed so far.
  DeviceTensor empty(const std::string& name, const Shape& shape, DType dtype, const DPPolicy& policy,
                     SipId device = SipId(0), HbmRegion* region = nullptr);
  // Fresh HBM reads as zero and placements never reuse memory, so zeros is empty.
  DeviceTensor zeros(const std::string& name, const Shape& shape, DType dtype, const DPPolicy& policy,
                     SipId device = SipId(0)) {
    return empty(name, shape, dtype, policy, device);
  }
  DeviceTensor from_host(const std::string& name, const HostTensor& host, DType dtype,
                         const DPPolicy& policy, SipId device = SipId(0), HbmRegion* region = nullptr);
  DeviceTensor from_npy(const std::string& path, const std::string& name, DType dtype,
                        const DPPolicy& policy, SipId device = SipId(0));
  // Gathers the shards (the first copy of each) into one host tensor, as fp32.
  HostTensor read(const DeviceTensor& t) const;
  void to_npy(const DeviceTensor& t, const std::string& path) const;

  // Runs `kernel` on every PE of `device` (SPMD) in the next run(); nothing for a device
  // another process of a split run simulates (one the System did not build).
  void launch(SipId device, const std::string& name, Kernel kernel);
  template <class F, class... Args>
  void launch(SipId device, const std::string& name, F kernel, Args... args) {
    launch(device, name, Kernel([kernel, args...](tl::Ctx& tl) { kernel(tl, args...); }));
  }
  // CUBE groups of every SIP that share nothing (no message and no link between them):
  // group_of_cube[c] is cube c's group. The next run() simulates them apart, as it does SIPs.
  void separate_groups(std::vector<std::uint32_t> group_of_cube) { group_of_cube_ = std::move(group_of_cube); }
  // The devices of the next run exchange messages over the links (docs/topology.md):
  // run() simulates them together, as one unit.
  void couple_devices() { coupled_ = true; }
  // Simulates until every launched kernel has finished: device by device (and group by
  // group within a device, given separate_groups), each from an empty event queue (its
  // op-log times count from its own start), so what a unit does never depends on which
  // other units this process simulates; the run's latency is the slowest unit's. Units
  // share nothing, so this is the same machine, and a run split over processes by SIP or
  // group gives the same result (simultaneous events keep their order only within a unit).
  // Coupled devices (couple_devices) are one unit, each SIP in its own dispatch domain,
  // so a SIP's events keep their order whatever its peers do (and whichever process
  // simulates them: RunOptions::exchange); each SIP's own critical path is marked in the
  // op log. Throws tl::KernelError for a kernel's error and
  // RunError for a deadlock.
  void run();
  // For a platform that runs the simulation itself (vp::Accelerator): starts every
  // launched kernel now, inside the running simulation, and returns the CPUs started
  // (each one's finished_event() and error() tell how it ends). The op log counts from now.
  std::vector<PeCpu*> start();

  OpLog& op_log() { return log_; }
  const OpLog& op_log() const { return log_; }
  // The last run's critical spans by record id as the run numbered them (OpLogKept::Spans;
  // with Records they are in the records, renumbered by PE).
  const std::map<std::uint64_t, CriticalSpans>& critical_spans() const { return spans_; }
  System& system() { return system_; }
  bool data_mode() const { return options_.data; }
  std::uint64_t last_run_cycles() const { return last_run_cycles_; }
  // The last run's critical path: the slowest device's (its ops are marked critical in
  // the op log, and so are every other device's own).
  CriticalPath critical_path() const { return path_cycles(slowest_, system_.topology()); }
  // The kernel contexts of the last launch (TCM use, etc.).
  const tl::Ctx& context(const PeCoord& pe) const;

 private:
  void place(DeviceTensor::Layout& layout, HbmRegion* region);
  // Simulates the loaded unit (a device, or a group of it) until it runs out of events, or
  // throws RunStopped at a limit.
  // `split`: the unit's share of a run split over processes.
  void simulate_unit(const std::string& name, const std::vector<std::pair<PeCpu*, PeCpu::Program>>& programs,
                     std::size_t first_record, SplitRun* split);

  System& system_;
  RunOptions options_;
  OpLog log_;
  std::map<std::uint64_t, CriticalSpans> spans_;
  std::map<PeCoord, std::uint64_t> next_free_;  // per HBM channel: bump allocator
  std::map<PeCoord, std::unique_ptr<tl::Ctx>> contexts_;
  std::map<SipId, std::vector<std::pair<PeCpu*, PeCpu::Program>>> pending_;  // launched, not yet run
  std::vector<std::uint32_t> group_of_cube_;  // empty: a SIP simulates as one unit
  bool coupled_ = false;                      // the next run's devices are one unit
  sc_core::sc_time origin_ = sc_core::SC_ZERO_TIME;  // the start of the unit being simulated
  std::uint64_t last_run_cycles_ = 0;
  std::optional<PathEnd> slowest_;
  std::chrono::steady_clock::time_point wall_start_;
};

}  // namespace kb
