#include "sc_main/run_command.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <iostream>
#include <map>
#include <optional>
#include <set>
#include <sstream>
#include <stdexcept>

#include <boost/program_options.hpp>
#include <systemc>

#include "base/op_log_file.h"
#include "base/output_file.h"
#include "base/topology.h"
#include "base/units.h"
#include "models/common/waveform.h"
#include "platform/timeline.h"
#include "platform/utilisation.h"
#include "sc_main/errors.h"
#include "sc_main/exchange.h"
#include "sc_main/partition.h"
#include "sc_main/world.h"
#include "workloads/report.h"

namespace kb::cli {
namespace po = boost::program_options;

namespace {

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

std::vector<SipId> parse_devices(const std::string& text, std::uint32_t sips) {
  std::vector<SipId> out;
  std::stringstream ss(text);
  for (std::string item; std::getline(ss, item, ',');) {
    const auto dash = item.find('-');
    const auto lo = units::parse_count(item.substr(0, dash));
    const auto hi = dash == std::string::npos ? lo : units::parse_count(item.substr(dash + 1));
    if (!lo || !hi || *lo > *hi)
      throw UsageError("--devices '" + text + "': expected SIP numbers like 0-3 or 0,2");
    if (*hi >= sips)
      throw InputError("--devices '" + text + "': the topology has " + std::to_string(sips) +
                       " SIP(s), numbered 0-" + std::to_string(sips - 1));
    for (std::uint64_t s = *lo; s <= *hi; ++s) out.emplace_back(static_cast<std::uint32_t>(s));
  }
  if (out.empty()) throw UsageError("--devices '" + text + "': names no SIP");
  return out;
}

// Refuses an output path whose folder cannot be written, before any simulation time is spent.
void check_writable(const std::string& flag, const std::string& path) {
  if (path.empty()) return;
  const std::filesystem::path p(path);
  const std::filesystem::path dir = p.has_parent_path() ? p.parent_path() : ".";
  if (!std::filesystem::is_directory(dir) || ::access(dir.c_str(), W_OK) != 0)
    throw InputError(flag + " " + path + ": folder '" + dir.string() + "' does not exist or is not writable");
}

// Parses a whole-number flag value within [lo, hi].
std::uint32_t count_flag(const std::string& flag, const std::string& text, std::uint32_t lo, std::uint32_t hi) {
  const auto v = units::parse_count(text);
  if (!v || *v < lo || *v > hi)
    throw UsageError(flag + " '" + text + "': expected a whole number from " + std::to_string(lo) + " to " +
                     std::to_string(hi));
  return static_cast<std::uint32_t>(*v);
}

// "a, b and c".
std::string joined(const std::vector<std::string>& items) {
  std::string out;
  for (std::size_t i = 0; i < items.size(); ++i)
    out += (i == 0 ? "" : i + 1 == items.size() ? " and " : ", ") + items[i];
  return out;
}

// Every knob of every workload, once: the flags `run` takes besides its own.
struct KnobIndex {
  struct Entry {
    workloads::Knob knob;
    const workloads::KnobSet* set = nullptr;  // the first set that holds it
    std::vector<std::string> readers;         // the workloads that read it
  };
  std::vector<std::string> order;
  std::map<std::string, Entry> by_field;

  KnobIndex() {
    for (const workloads::Workload* w : workloads::registry())
      for (const workloads::KnobSet* set : w->knobs())
        for (const workloads::Knob& k : set->knobs) {
          auto [it, fresh] = by_field.try_emplace(k.field, Entry{k, set, {}});
          if (fresh) order.push_back(k.field);
          if (std::find(it->second.readers.begin(), it->second.readers.end(), w->name()) == it->second.readers.end())
            it->second.readers.push_back(w->name());
        }
  }
  // Workloads that read any knob of `set`.
  std::vector<std::string> readers_of(const workloads::KnobSet& set) const {
    std::vector<std::string> out;
    for (const workloads::Workload* w : workloads::registry())
      for (const workloads::KnobSet* s : w->knobs())
        if (s == &set) out.push_back(w->name());
    return out;
  }
};

bool reads(const workloads::Workload& w, const std::string& field) {
  for (const workloads::KnobSet* set : w.knobs())
    for (const workloads::Knob& k : set->knobs)
      if (k.field == field) return true;
  return false;
}

// A workload's configuration error in the program's words.
[[noreturn]] void rethrow_as_flags(const workloads::ConfigError& e) {
  const std::string text = e.render(flag_of);
  if (e.usage()) throw UsageError(text);
  throw InputError(text);
}

// The program's own flags a split run's parent keeps for itself.
const std::set<std::string> kParentOnly = {"jobs",     "json",     "op-log", "timeline", "power-trace",
                                           "devices",  "simulate", "part",   "exchange"};

// The command line of a split run's parts: every flag given, less the parent's own.
std::vector<std::string> part_command(const po::variables_map& vm) {
  std::vector<std::string> out = {"run"};
  for (const auto& [name, value] : vm) {
    if (value.defaulted() || kParentOnly.count(name)) continue;
    if (const auto* on = boost::any_cast<bool>(&value.value())) {
      if (*on) out.push_back("--" + name);
    } else if (const auto* many = boost::any_cast<std::vector<std::string>>(&value.value())) {
      for (const std::string& v : *many) out.insert(out.end(), {"--" + name, v});
    } else {
      out.insert(out.end(), {"--" + name, value.as<std::string>()});
    }
  }
  return out;
}

// The checks of a run split by SIP or CUBE group (`how`: --jobs or mpirun) that need no topology.
void check_splits(const RunRequest& q, const std::string& how) {
  if (!q.workload->splits_by_sip()) {
    std::vector<std::string> split;
    for (const workloads::Workload* w : workloads::registry())
      if (w->splits_by_sip()) split.push_back(w->name());
    throw UsageError(how + " splits --kernel " + joined(split) + " by SIP and CUBE group; " + q.workload->name() +
                     " runs in one process");
  }
  if (q.data || q.values.given("inputs") || !q.vcd.empty())
    throw UsageError(how + " splits timing-mode runs; --data, --inputs, --outputs, --check and --vcd run in one "
                           "process");
}

}  // namespace

std::string flag_of(const std::string& field) {
  std::string f = "--" + field;
  std::replace(f.begin(), f.end(), '_', '-');
  return f;
}

namespace {

// The flags of `run` bound to where parse_run reads them: the program's own, the
// workloads' knobs (each once) and what a part of a --jobs run gets from its parent.
struct RunFlagSet {
  std::vector<std::string> names;  // the workloads
  std::string kernel, devices_flag, jobs_text, max_sim_text, timeout_text, power_window_text;
  KnobIndex index;
  po::options_description opts{"kernbench run options", 110, 55};
  po::options_description knob_opts{"workload knobs (the workloads that read each are in brackets)", 110, 55};
  po::options_description internal;

  explicit RunFlagSet(RunRequest& q) {
    for (const workloads::Workload* w : workloads::registry()) names.push_back(w->name());
    opts.add_options()
        ("help,h", "show this help")
        ("kernel", po::value(&kernel)->default_value("gqa_decode"), ("workload: " + joined(names)).c_str())
        ("topology", po::value(&q.topology_file)->default_value(KERNBENCH_DEFAULT_TOPOLOGY), "topology YAML")
        ("set", po::value(&q.sets)->composing(), "override a topology value: key.path=value (repeatable)")
        ("devices", po::value(&devices_flag), "SIPs to run on, e.g. 0-3 or 0,2 (default: all)")
        ("data", po::bool_switch(&q.data), "data mode: simulate real values (default: timing mode)")
        ("json", po::value(&q.json), "write the run's result as JSON to FILE")
        ("op-log", po::value(&q.op_log), "write the op log to FILE (.jsonl or .csv)")
        ("timeline", po::value(&q.timeline), "write a Chrome trace-event timeline (Perfetto) to FILE")
        ("power-trace", po::value(&q.power_trace),
         "write the run's power per SIP and cause over time to FILE (CSV, docs/energy.md)")
        ("power-window", po::value(&power_window_text)->default_value("1024"),
         "the power trace's window in cycles (a run longer than 16384 windows gets windows twice as long, and so on)")
        ("vcd", po::value(&q.vcd), "write a VCD waveform (engine busy and queue depth, link busy) to FILE")
        ("vcd-filter", po::value(&q.vcd_filter),
         "--vcd: only modules whose path matches one of these comma-separated globs, e.g. 'sip0.cube3.*'")
        ("max-sim-time", po::value(&max_sim_text),
         "stop each device's simulation after this many cycles (e.g. 200000 or 200000cycles); partial results")
        ("timeout", po::value(&timeout_text), "stop the run after this many seconds of wall time; partial results")
        ("jobs", po::value(&jobs_text)->default_value("1"),
         "split the run by SIP, then by CUBE group, over N processes (timing mode, workloads that split by SIP); "
         "same results");
    for (const std::string& field : index.order) {
      const auto& e = index.by_field.at(field);
      const std::string help = e.knob.help + " [" + joined(e.readers) + "]";
      const std::string flag = flag_of(field).substr(2);
      if (e.knob.is_switch) knob_opts.add_options()(flag.c_str(), po::bool_switch(), help.c_str());
      else if (e.knob.fallback.empty()) knob_opts.add_options()(flag.c_str(), po::value<std::string>(), help.c_str());
      else
        knob_opts.add_options()(flag.c_str(), po::value<std::string>()->default_value(e.knob.fallback), help.c_str());
    }
    internal.add_options()("simulate", po::value(&q.simulate))("part", po::value(&q.part))(
        "exchange", po::value(&q.exchange));
  }
};

}  // namespace

std::vector<RunFlag> run_flags() {
  RunRequest q;
  const RunFlagSet set(q);
  std::vector<RunFlag> out;
  for (const po::options_description* d : {&set.opts, &set.knob_opts})
    for (const auto& o : d->options()) out.push_back({o->long_name(), o->semantic()->max_tokens() > 0});
  return out;
}

RunRequest parse_run(const std::vector<std::string>& args) {
  RunRequest q;
  RunFlagSet fs(q);
  const std::string &kernel = fs.kernel, &devices_flag = fs.devices_flag, &jobs_text = fs.jobs_text,
                    &max_sim_text = fs.max_sim_text, &timeout_text = fs.timeout_text,
                    &power_window_text = fs.power_window_text;
  const std::vector<std::string>& names = fs.names;
  const KnobIndex& index = fs.index;
  const po::options_description &opts = fs.opts, &knob_opts = fs.knob_opts;
  po::options_description all;
  all.add(opts).add(knob_opts).add(fs.internal);
  po::variables_map vm;
  // No abbreviated flags: a --jobs run passes the command line on to its parts.
  po::store(po::command_line_parser(args)
                .options(all)
                .style(po::command_line_style::default_style & ~po::command_line_style::allow_guessing)
                .run(),
            vm);
  po::notify(vm);
  if (vm.count("help")) {
    std::ostringstream help;
    help << opts << "\n" << knob_opts << "\nworkloads:\n";
    for (const workloads::Workload* w : workloads::registry())
      help << "  " << w->name() << std::string(14 - std::min<std::size_t>(13, w->name().size()), ' ') << w->summary()
           << "\n";
    q.help = help.str();
    return q;
  }
  q.workload = workloads::find(kernel);
  if (q.workload == nullptr) throw UsageError("--kernel '" + kernel + "': allowed values: " + joined(names));
  const workloads::Workload* workload = q.workload;
  // The knobs' values; a knob given that this workload does not read is a mistake.
  workloads::Values& values = q.values;
  for (const std::string& field : index.order) {
    const auto& e = index.by_field.at(field);
    const std::string flag = flag_of(field).substr(2);
    const bool given = vm.count(flag) && !vm[flag].defaulted() && (!e.knob.is_switch || vm[flag].as<bool>());
    if (!reads(*workload, field)) {
      if (!given) continue;
      std::vector<std::string> flags;
      for (const workloads::Knob& k : e.set->knobs) flags.push_back(flag_of(k.field));
      const auto readers = index.readers_of(*e.set);
      throw UsageError(joined(flags) + (flags.size() == 1 ? " applies" : " apply") + " to --kernel " +
                       joined(readers));
    }
    if (e.knob.is_switch) values.set(field, vm[flag].as<bool>() ? "true" : "", given);
    else values.set(field, vm.count(flag) ? vm[flag].as<std::string>() : "", given);
  }
  if (!q.op_log.empty() && !q.op_log.ends_with(".jsonl") && !q.op_log.ends_with(".csv"))
    throw UsageError("--op-log " + q.op_log + ": the file name must end in .jsonl or .csv");
  if (!workload->tl() && (q.data || !q.op_log.empty() || !q.timeline.empty()))
    throw UsageError("--kernel " + kernel + " drives the DMA directly: --data, --op-log and --timeline need a tl kernel");
  if (vm.count("vcd-filter") && q.vcd.empty()) throw UsageError("--vcd-filter needs --vcd FILE");
  if (vm.count("devices")) q.devices = devices_flag;
  q.jobs = count_flag("--jobs", jobs_text, 1, 256);
  if (vm.count("max-sim-time")) {
    const auto cycles = units::parse_cycles(max_sim_text);
    if (!cycles || *cycles == 0)
      throw UsageError("--max-sim-time '" + max_sim_text + "': expected a number of cycles above 0, e.g. 200000cycles");
    q.limits.max_cycles = *cycles;
  }
  if (const auto cycles = units::parse_cycles(power_window_text);
      cycles && *cycles >= 1 && *cycles <= (1ull << 30))
    q.power_window = *cycles;
  else
    throw UsageError("--power-window '" + power_window_text +
                     "': expected a number of cycles from 1 to " + std::to_string(1ull << 30) +
                     ", e.g. 1024");
  if (vm.count("timeout")) {
    char* end = nullptr;
    const double seconds = std::strtod(timeout_text.c_str(), &end);
    if (end == timeout_text.c_str() || *end != '\0' || !(seconds > 0) || seconds > 1e7)
      throw UsageError("--timeout '" + timeout_text + "': expected seconds of wall time above 0, e.g. 60 or 0.5");
    q.limits.timeout_seconds = seconds;
  }
  if ((q.limits.max_cycles || q.limits.timeout_seconds > 0) && !workload->tl())
    throw UsageError("--max-sim-time and --timeout apply to tl kernels; " + kernel + " is a fixed DMA stream");
  if (q.jobs > 1) check_splits(q, "--jobs");
  q.part_command = part_command(vm);
  return q;
}


namespace {

// The SIPs a request runs on: --devices, or all of the topology's.
std::vector<SipId> devices_of(const RunRequest& q, const Topology& topo) {
  std::vector<SipId> devices;
  if (q.devices) devices = parse_devices(*q.devices, topo.system.sips);
  else
    for (std::uint32_t s = 0; s < topo.system.sips; ++s) devices.emplace_back(s);
  return devices;
}

// The request's workload configured for a setup, its errors in the program's words.
std::unique_ptr<workloads::Job> configure_job(const RunRequest& q, const workloads::Setup& setup) {
  try {
    return q.workload->configure(q.values, setup);
  } catch (const workloads::ConfigError& e) {
    rethrow_as_flags(e);
  } catch (const std::invalid_argument& e) {
    throw InputError(e.what());
  }
}

// The SIPs this process builds: all of them, or a part's own; the first part of a run of
// coupled SIPs also builds those outside the run's devices (messages may pass through).
std::vector<SipId> built_here(const workloads::Setup& setup, const workloads::Job& job, const PartExchange* exchange) {
  std::vector<SipId> built;
  for (const workloads::SimUnit& u : setup.simulate)
    if (std::find(built.begin(), built.end(), u.sip) == built.end()) built.push_back(u.sip);
  if (exchange != nullptr && exchange->rank() == 0 && job.couples_sips())
    for (std::uint32_t s = 0; s < setup.topo->system.sips; ++s)
      if (std::find(setup.devices.begin(), setup.devices.end(), SipId(s)) == setup.devices.end()) built.emplace_back(s);
  return built;
}

}  // namespace

void check_run(const RunRequest& q) {
  const Topology topo = Topology::load(q.topology_file, q.sets);
  const workloads::Setup setup{&topo, devices_of(q, topo), {}, q.data};
  configure_job(q, setup);
}

int execute_run(const RunRequest& q) {
  const workloads::Workload* workload = q.workload;
  const std::string kernel = workload->name();
  const Topology topo = Topology::load(q.topology_file, q.sets);
  const std::vector<SipId> devices = devices_of(q, topo);
  check_writable("--json", q.json);
  check_writable("--op-log", q.op_log);
  check_writable("--timeline", q.timeline);
  check_writable("--power-trace", q.power_trace);
  check_writable("--vcd", q.vcd);
  const World& world = World::get();
  const bool mpi = world.size() > 1;  // started by mpirun: the ranks split the run by SIP and group
  if (mpi) {
    if (q.jobs > 1) throw UsageError("--jobs and mpirun both split the run: use one of them");
    check_splits(q, "mpirun");
  }
  workloads::Setup setup{&topo, devices, {}, q.data};
  if (!q.part.empty()) {
    try {
      setup.simulate = parse_units(q.simulate, topo.system.sips);
    } catch (const std::invalid_argument& e) {
      throw UsageError(e.what());
    }
  }
  std::unique_ptr<workloads::Job> job = configure_job(q, setup);
  for (const workloads::SimUnit& u : setup.simulate)
    if (u.group && *u.group >= job->groups_per_sip())
      throw UsageError("--simulate '" + q.simulate + "': SIP " + std::to_string(u.sip.value) + " has " +
                       std::to_string(job->groups_per_sip()) + " CUBE group(s) in this run, numbered from 0");
  // How this process talks to the others of a split run while coupled SIPs run.
  std::optional<PipeExchange> pipes;
  std::optional<MpiExchange> ranks;
  if (!q.exchange.empty()) {
    const std::optional<PipePlan> plan = parse_pipe_plan(q.exchange);
    if (!plan) throw UsageError("--exchange '" + q.exchange + "': expected RANK,PARTS,FIRST");
    pipes.emplace(*plan);
  }
  if (mpi) {  // the rank's part, cut by the job's CUBE groups
    const auto parts = split_units(devices, job->groups_per_sip(), static_cast<std::size_t>(world.size()));
    const bool member = static_cast<std::size_t>(world.rank()) < parts.size();
    World::get().join_parts(member);
    if (!member) {  // more ranks than parts: nothing to simulate
      world.send(0, "{}");
      return 0;
    }
    setup.simulate = parts[static_cast<std::size_t>(world.rank())];
    job = configure_job(q, setup);
    ranks.emplace();
  }
  if (world.rank() == 0)  // the ranks of an MPI run print one report
    for (const std::string& note : job->notes()) std::cout << "kernbench: " << note << "\n";

  // The op log is kept whole where the timeline, the job or MPI's gather reads it; an
  // --op-log file alone is written as the run goes (OpLogFile) and nothing is kept.
  const bool want_log = !q.op_log.empty() || !q.timeline.empty();
  const bool keep_log = !q.timeline.empty() || job->reads_op_log() || (mpi && want_log);
  const bool stream_log = !q.op_log.empty() && !keep_log;
  std::optional<OpLogFile> log_file;
  const std::map<std::uint64_t, CriticalSpans>* spans = nullptr;  // the run's, for log_file
  auto write_traces = [&](const OpLog& log, const std::vector<PowerTrack>& power) {
    if (log_file) log_file->finish(spans ? *spans : std::map<std::uint64_t, CriticalSpans>{});
    else if (!q.op_log.empty() && !stream_log)
      write_file_atomically(q.op_log, q.op_log.ends_with(".csv") ? log.to_csv() : log.to_jsonl());
    if (!q.timeline.empty())
      write_file_atomically(q.timeline, chrome_trace(log, topo, job->cube_groups(), power));
  };
  auto t0 = std::chrono::steady_clock::now();
  // The report, traces and JSON of a finished run; the exit code.
  auto finish = [&](workloads::Result r, const OpLog& log) {
    r.topology_file = q.topology_file;
    r.topology_name = topo.name;
    r.energy = account(r.activity, topo, r.devices.size(), r.simulated_seconds);
    workload->derive(r, topo);
    std::cout << workload->report(r, topo) << report::tail(r);
    const std::vector<PowerTrack> power = power_tracks(r.activity, topo, r.simulated_cycles);
    write_traces(log, power);
    if (!q.power_trace.empty())
      write_file_atomically(q.power_trace, power_csv(power, r.simulated_cycles));
    if (!q.json.empty()) write_file_atomically(q.json, r.to_json().dump(2) + "\n");
    return r.numerics && r.numerics->enforced && !r.numerics->pass ? 1 : 0;
  };
  // The parts of a split run (in device and group order), merged.
  auto finish_parts = [&](const std::vector<nlohmann::json>& parts, const OpLog& log, double seconds) {
    std::vector<workloads::Result> results;
    for (const nlohmann::json& p : parts) results.push_back(workloads::Result::from_json(p));
    workloads::Result merged = workloads::Result::merge(results);
    merged.wall.simulation_seconds = seconds;
    return finish(std::move(merged), log);
  };
  // This process simulated one part of a split run: a --jobs part writes it for its
  // parent; an MPI rank sends it to rank 0, which gathers every part and reports.
  auto finish_part = [&](const workloads::Result& r, const OpLog& log) {
    if (!q.part.empty()) {
      write_traces(log, {});
      write_file_atomically(q.part, r.to_json(true).dump() + "\n");
      return 0;
    }
    const nlohmann::json message = {{"part", r.to_json(true)}, {"op_log", want_log ? log.to_jsonl() : ""}};
    if (world.rank() != 0) {
      world.send(0, message.dump());
      return 0;
    }
    std::map<int, nlohmann::json> by_rank{{0, message}};
    while (by_rank.size() < static_cast<std::size_t>(world.size())) {
      auto [from, text] = world.receive();
      by_rank[from] = nlohmann::json::parse(text);
    }
    std::vector<nlohmann::json> parts;
    OpLog merged;
    for (const auto& [rank, m] : by_rank) {
      if (!m.contains("part")) continue;  // a rank with no SIP to simulate
      parts.push_back(m["part"]);
      merged.append_jsonl(m["op_log"].get<std::string>());
    }
    merged.group_by_pe(0);  // ranks holding groups of one SIP interleave by PE
    return finish_parts(parts, merged, seconds_since(t0));
  };
  if (q.jobs > 1) {
    OpLog log;
    const auto parts = run_parts(q.part_command, devices, split_units(devices, job->groups_per_sip(), q.jobs),
                                 want_log && keep_log ? &log : nullptr, stream_log ? q.op_log : "", job->couples_sips());
    return finish_parts(parts, log, seconds_since(t0));
  }
  // The process ends with this run: its machine is never taken apart (hundreds of
  // thousands of SystemC objects unregistering one by one), the exit frees it at once.
  PartExchange* exchange = pipes ? static_cast<PartExchange*>(&*pipes) : ranks ? &*ranks : nullptr;
  System& system = *new System("system", topo, false, built_here(setup, *job, exchange));
  system.set_activity_window(q.power_window);
  const double elaboration_seconds = seconds_since(t0);
  std::optional<Waveform> wave;
  if (!q.vcd.empty()) {
    wave.emplace(q.vcd_filter, std::string(system.name()) + ".");
    system.record_to(*wave);
    if (wave->signal_count() == 0)
      throw UsageError("--vcd-filter '" + q.vcd_filter + "' matches no module; paths look like sip0.cube3.pe2.gemm, "
                       "sip0.cube3.fabric.pe2.tx, sip0.noc.router3.east");
  }
  t0 = std::chrono::steady_clock::now();
  RunOptions run_options = q.limits;
  run_options.data = job->data_mode(q.data);
  run_options.exchange = exchange;
  run_options.op_log = keep_log ? RunOptions::OpLogKept::Records
                     : stream_log ? RunOptions::OpLogKept::Spans
                                  : RunOptions::OpLogKept::Nothing;
  RuntimeContext rt(system, run_options);
  std::optional<OpLog::Listening> streaming;
  if (stream_log) {
    log_file.emplace(q.op_log);
    streaming.emplace(rt.op_log().listen([&](const OpRecord& r) { log_file->add(r); }));
    spans = &rt.critical_spans();
  }
  try {
    workloads::Result r = job->run(rt);
    r.wall = {elaboration_seconds, seconds_since(t0), report::peak_rss_kib(), system.transactions()};
    r.use = utilisation(system, r.simulated_cycles);
    r.activity = activity_of(system, r.devices);
    if (workload->tl()) r.critical_path = rt.critical_path();
    if (!q.part.empty() || mpi) return finish_part(r, rt.op_log());
    if (wave) {
      std::ostringstream text;
      wave->write_vcd(text);
      write_file_atomically(q.vcd, text.str());
    }
    return finish(std::move(r), rt.op_log());
  } catch (const RunStopped& e) {
    // What the run did until the limit: the op log and timeline as asked, and a result
    // marked partial; exit code 1.
    std::cout << "kernbench: " << kernel << " on " << topo.name << ": run stopped: " << e.what()
              << "\n  partial results: " << rt.op_log().size() << " op-log records so far\n";
    write_traces(rt.op_log(), {});
    workloads::Result r;
    r.workload = kernel;
    r.topology_file = q.topology_file;
    r.topology_name = topo.name;
    r.devices = devices;
    r.partial = true;
    r.stopped = e.what();
    r.cycles_reached = e.cycles();
    r.add("op_log.records", rt.op_log().size(), workloads::Merge::Sum);
    r.wall = {elaboration_seconds, seconds_since(t0), report::peak_rss_kib(), system.transactions()};
    if (!q.json.empty()) write_file_atomically(q.json, r.to_json().dump(2) + "\n");
    std::cerr << "kernbench: run stopped: " << e.what() << "\n";
    return 1;
  }
}

}  // namespace kb::cli
