#include "platform/runtime_context.h"
#include "models/common/clock.h"
#include "models/common/path_extension.h"

#include <utility>
#include <algorithm>

#include "base/units.h"

namespace kb {

RuntimeContext::RuntimeContext(System& system, RunOptions options)
    : system_(system), options_(options) {
  log_.keep(options.op_log == RunOptions::OpLogKept::Records);
}

RuntimeContext::~RuntimeContext() = default;

void RuntimeContext::place(DeviceTensor::Layout& l, HbmRegion* region) {
  const Topology& topo = system_.topology();
  if (l.device.value >= topo.system.sips)
    throw RunError("tensor '" + l.name + "': device " + std::to_string(l.device.value) +
                   " does not exist (the topology has " + std::to_string(topo.system.sips) + " SIPs)");
  if (l.policy.pes == 0 || l.policy.pes > topo.cube.pes)
    throw RunError("tensor '" + l.name + "': " + std::to_string(l.policy.pes) +
                   " PEs per cube requested; a cube has " + std::to_string(topo.cube.pes));
  for (const auto d : l.shape)
    if (d < 0) throw RunError("tensor '" + l.name + "': negative dimension in " + shape_text(l.shape));
  try {
    l.cubes = group_cubes(topo, l.policy.cube_start, l.policy.cubes);
  } catch (const std::invalid_argument& e) {
    throw RunError("tensor '" + l.name + "': " + e.what());
  }
  std::uint64_t cols = 1;
  for (std::size_t i = 1; i < l.shape.size(); ++i) cols *= static_cast<std::uint64_t>(l.shape[i]);
  const std::uint64_t rows = l.shape.empty() ? 1 : static_cast<std::uint64_t>(l.shape[0]);
  const std::uint64_t row_bytes = cols * dtype_bytes(l.dtype);
  const std::uint32_t shards = l.policy.shards();
  for (std::uint32_t ci = 0; ci < l.cubes.size(); ++ci)
    for (std::uint32_t p = 0; p < l.policy.pes; ++p) {
      ShardPlacement s;
      s.cube = l.cubes[ci];
      s.pe = PeId(p);
      s.rows = shard_rows(rows, shards, l.policy.shard_of(ci, p));
      const std::uint64_t need = (s.rows.count * row_bytes + kShardAlign - 1) / kShardAlign * kShardAlign;
      const PeCoord ch{l.device, s.cube, s.pe};
      std::uint64_t& next = region ? region->end.try_emplace(ch, region->base).first->second : next_free_[ch];
      if (next > topo.cube.hbm.capacity || need > topo.cube.hbm.capacity - next)
        throw RunError("HBM capacity exceeded: tensor '" + l.name + "' " + shape_text(l.shape) + " " +
                       dtype_name(l.dtype) + " placed " + l.policy.describe() + " needs " +
                       std::to_string(need) + " B in the channel of " + ch.str() + ", which has " +
                       std::to_string(topo.cube.hbm.capacity - std::min(next, topo.cube.hbm.capacity)) + " B free of " +
                       units::format_bytes(topo.cube.hbm.capacity));
      s.offset = next;
      next += need;
      l.placements.push_back(s);
    }
}

DeviceTensor RuntimeContext::empty(const std::string& name, const Shape& shape, DType dtype,
                                   const DPPolicy& policy, SipId device, HbmRegion* region) {
  auto l = std::make_shared<DeviceTensor::Layout>();
  l->name = name;
  l->shape = shape;
  l->dtype = dtype;
  l->policy = policy;
  l->device = device;
  place(*l, region);
  return DeviceTensor(std::move(l));
}

DeviceTensor RuntimeContext::from_host(const std::string& name, const HostTensor& host, DType dtype,
                                       const DPPolicy& policy, SipId device, HbmRegion* region) {
  if (host.data.size() != host.elements())
    throw RunError("host tensor '" + name + "' has " + std::to_string(host.data.size()) +
                   " values for shape " + shape_text(host.shape));
  DeviceTensor t = empty(name, host.shape, dtype, policy, device, region);
  const std::uint64_t cols = t.cols(), row_bytes = t.row_bytes();
  std::vector<std::uint8_t> bytes;
  for (const ShardPlacement& s : t.placements()) {
    if (s.rows.count == 0) continue;
    bytes.resize(s.rows.count * row_bytes);
    encode(dtype, host.data.data() + s.rows.begin * cols, bytes.data(), s.rows.count * cols);
    system_.hbm(PeCoord{device, s.cube, s.pe}).store().write(s.offset, bytes.data(), bytes.size());
  }
  return t;
}

DeviceTensor RuntimeContext::from_npy(const std::string& path, const std::string& name, DType dtype,
                                      const DPPolicy& policy, SipId device) {
  return from_host(name, read_npy(path), dtype, policy, device);
}

HostTensor RuntimeContext::read(const DeviceTensor& t) const {
  HostTensor h;
  h.shape = t.shape();
  h.data.assign(t.rows() * t.cols(), 0.0f);
  const std::uint64_t cols = t.cols(), row_bytes = t.row_bytes();
  std::vector<bool> done(t.policy().shards(), false);
  std::vector<std::uint8_t> bytes;
  for (std::uint32_t i = 0; i < t.placements().size(); ++i) {
    const ShardPlacement& s = t.placements()[i];
    const std::uint32_t shard = t.policy().shard_of(i / t.policy().pes, i % t.policy().pes);
    if (done[shard] || s.rows.count == 0) continue;
    done[shard] = true;
    bytes.resize(s.rows.count * row_bytes);
    system_.hbm(PeCoord{t.device(), s.cube, s.pe}).store().read(s.offset, bytes.data(), bytes.size());
    decode(t.dtype(), bytes.data(), h.data.data() + s.rows.begin * cols, s.rows.count * cols);
  }
  return h;
}

void RuntimeContext::to_npy(const DeviceTensor& t, const std::string& path) const { write_npy(path, read(t)); }

void RuntimeContext::launch(SipId device, const std::string& name, Kernel kernel) {
  const Topology& topo = system_.topology();
  if (device.value >= topo.system.sips)
    throw RunError("launch of '" + name + "': device " + std::to_string(device.value) +
                   " does not exist (the topology has " + std::to_string(topo.system.sips) + " SIPs)");
  if (!system_.has(device)) return;
  Sip& sip = system_.sip(device);
  for (std::uint32_t c = 0; c < sip.cube_count(); ++c)
    for (std::uint32_t p = 0; p < topo.cube.pes; ++p) {
      Pe& pe = sip.cube(CubeId(c)).pe(PeId(p));
      const auto prev = contexts_.find(pe.coord());
      if (prev != contexts_.end() && !pe.cpu.finished())
        throw RunError("launch of '" + name + "': device " + std::to_string(device.value) +
                       " already has a kernel launched in this run");
      auto ctx = std::make_unique<tl::Ctx>(pe, topo, sip.address_map(), log_, name, options_.data, origin_);
      tl::Ctx* raw = ctx.get();
      contexts_[pe.coord()] = std::move(ctx);  // replaces a finished earlier launch
      pe.cpu.on_complete([raw](const Command& cmd) { raw->completed(cmd); });
      pending_[device].emplace_back(&pe.cpu, [raw, kernel](PeCpu&) {
        kernel(*raw);
        raw->finish();
      });
    }
}

void RuntimeContext::run() {
  wall_start_ = std::chrono::steady_clock::now();
  const std::size_t first_record = log_.size();
  last_run_cycles_ = 0;
  slowest_.reset();
  path_steps().clear();
  spans_.clear();
  keep_path_steps(options_.op_log != RunOptions::OpLogKept::Nothing);
  auto pending = std::move(pending_);
  pending_.clear();
  const std::vector<std::uint32_t> group_of_cube = std::exchange(group_of_cube_, {});  // this run's only
  const bool coupled = std::exchange(coupled_, false);
  // Initialise the simulation (every process runs once) before the first unit starts,
  // so the first unit starts like every later one: its PEs woken by their programs.
  if (sc_core::sc_get_status() != sc_core::SC_PAUSED) sc_core::sc_start(sc_core::SC_ZERO_TIME);
  struct Unit {
    std::string name;  // for messages
    std::vector<std::pair<PeCpu*, PeCpu::Program>> programs;
  };
  std::vector<Unit> units;
  // A process of a split run takes part in the coupled unit even with nothing of its own to run.
  const bool split = coupled && options_.exchange != nullptr;
  if (coupled && (!pending.empty() || split)) {
    units.push_back({"devices", {}});
    for (auto& [device, programs] : pending) {
      units.back().name += (units.back().programs.empty() ? " " : ",") + std::to_string(device.value);
      for (auto& launched : programs) units.back().programs.push_back(std::move(launched));
    }
    pending.clear();
  }
  for (auto& [device, programs] : pending) {
    std::map<std::uint32_t, std::vector<std::pair<PeCpu*, PeCpu::Program>>> groups;
    for (auto& launched : programs) {
      const std::uint32_t cube = launched.first->coord().cube.value;
      groups[cube < group_of_cube.size() ? group_of_cube[cube] : 0].push_back(std::move(launched));
    }
    for (auto& [group, members] : groups)
      units.push_back({"device " + std::to_string(device.value) +
                           (group_of_cube.empty() ? "" : " group " + std::to_string(group)),
                       std::move(members)});
  }
  for (auto& [name, programs] : units) {
    origin_ = sc_core::sc_time_stamp();
    system_.set_time_origin(origin_);
    std::optional<SplitRun> share;
    if (split) share.emplace(system_, *options_.exchange);
    for (auto& [cpu, program] : programs) cpu->load(std::move(program));
    simulate_unit(name, programs, first_record, share ? &*share : nullptr);
    // The unit's latency: its last program's end (a link port may still be taking a
    // delivered message's response back then; nothing waits for that).
    std::uint64_t end = ticks(origin_);
    for (const auto& [cpu, program] : programs) end = std::max(end, cpu->path().at);
    last_run_cycles_ = std::max(
        last_run_cycles_,
        static_cast<std::uint64_t>((sc_core::sc_time::from_value(end) - origin_) / cycle_time(system_.topology()) + 0.5));
    std::string stuck;
    std::size_t count = 0;
    for (const auto& [cpu, program] : programs) {
      if (auto err = cpu->error()) std::rethrow_exception(err);
      if (!cpu->finished() && ++count <= 16)
        stuck += "\n  kernel '" + contexts_.at(cpu->coord())->kernel() + "' on " + cpu->coord().str() + " waits for " +
                 (contexts_.at(cpu->coord())->waiting_for().empty() ? "an engine"
                                                                     : contexts_.at(cpu->coord())->waiting_for());
    }
    if (count > 0)
      throw RunError("deadlock: the simulation of " + name +
                     " ran out of events at cycle " +
                     std::to_string(static_cast<std::uint64_t>((sc_core::sc_time_stamp() - origin_) /
                                                                   cycle_time(system_.topology()) +
                                                               0.5)) +
                     " while " + std::to_string(count) + " PE(s) still wait:" + stuck + (count > 16 ? "\n  ..." : ""));
    // Each SIP's own critical path (a unit holds one SIP, or coupled SIPs).
    std::map<SipId, std::vector<PeCpu*>> cpus;
    for (const auto& [cpu, program] : programs) cpus[cpu->coord().sip].push_back(cpu);
    std::vector<AwayWalk> away;  // walks that go on in other processes of a split run
    for (const auto& [sip, its] : cpus) {
      const PathEnd path = device_path(its);
      if (options_.op_log != RunOptions::OpLogKept::Nothing)
        kb::critical_spans(spans_, path.account, origin_, cycle_time(system_.topology()), &away);
      keep_slowest(slowest_, path);
    }
    if (share) share->finish_spans(spans_, std::move(away), origin_, cycle_time(system_.topology()));
  }
  if (log_.keeps()) {
    for (const auto& [id, spans] : std::exchange(spans_, {}))
      if (id >= first_record && id < log_.size()) log_.at(id).critical = spans;
  }
  log_.group_by_pe(first_record);
}

std::vector<PeCpu*> RuntimeContext::start() {
  path_steps().clear();  // a platform that runs job after job keeps no history of the old ones
  keep_path_steps(options_.op_log != RunOptions::OpLogKept::Nothing);
  origin_ = sc_core::sc_time_stamp();
  system_.set_time_origin(origin_);
  std::vector<PeCpu*> started;
  for (auto& [device, programs] : pending_)
    for (auto& [cpu, program] : programs) {
      cpu->load(std::move(program));
      started.push_back(cpu);
    }
  pending_.clear();
  return started;
}

void RuntimeContext::simulate_unit(const std::string& name,
                                   const std::vector<std::pair<PeCpu*, PeCpu::Program>>& programs,
                                   std::size_t first_record, SplitRun* split) {
  const sc_core::sc_time cycle = cycle_time(system_.topology());
  if (options_.max_cycles == 0 && options_.timeout_seconds <= 0 && split == nullptr) {
    sc_core::sc_start();
    return;
  }
  // In slices, to look at the limits in between; pausing does not reorder events.
  const sc_core::sc_time slice = cycle * 100000.0;
  const sc_core::sc_time limit = options_.max_cycles ? origin_ + cycle * static_cast<double>(options_.max_cycles)
                                                     : sc_core::sc_max_time();
  auto stop = [&](const std::string& why) {
    log_.close_open();
    log_.group_by_pe(first_record);
    const auto at = static_cast<std::uint64_t>((sc_core::sc_time_stamp() - origin_) / cycle + 0.5);
    std::size_t running = 0;
    for (const auto& [cpu, program] : programs) running += cpu->finished() ? 0 : 1;
    throw RunStopped("stopped by " + why + " at cycle " + std::to_string(at) + " of " + name + " (" + std::to_string(running) + " of its " +
                         std::to_string(programs.size()) + " PEs still running)",
                     at);
  };
  auto timed_out = [&] {
    return options_.timeout_seconds > 0 &&
           std::chrono::duration<double>(std::chrono::steady_clock::now() - wall_start_).count() >=
               options_.timeout_seconds;
  };
  const std::string timeout_why = "the limit of " + units::format_seconds(options_.timeout_seconds) + " s of wall time";
  const std::string limit_why = "the limit of " + std::to_string(options_.max_cycles) + " simulated cycles";
  if (split != nullptr) {  // windows in step with the other processes, who stop in the same one
    const SplitRun::End end = split->simulate(options_.max_cycles ? limit.value() : ~std::uint64_t{0}, timed_out);
    if (end == SplitRun::End::Timeout) stop(timeout_why);
    if (end == SplitRun::End::Limit) stop(limit_why);
    return;
  }
  while (sc_core::sc_pending_activity()) {
    if (timed_out()) stop(timeout_why);
    // Up to the next event at least (so every call makes progress), never past the limit;
    // on starvation sc_start returns at the last event, so the time stays exact.
    const sc_core::sc_time next = sc_core::sc_time_to_pending_activity();
    if (sc_core::sc_time_stamp() + next > limit) stop(limit_why);
    sc_core::sc_start(std::min(std::max(slice, next), limit - sc_core::sc_time_stamp()), sc_core::SC_EXIT_ON_STARVATION);
  }
}

const tl::Ctx& RuntimeContext::context(const PeCoord& pe) const { return *contexts_.at(pe); }

}  // namespace kb
