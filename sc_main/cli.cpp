#include "sc_main/cli.h"

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <iostream>
#include <sstream>
#include <map>
#include <optional>
#include <stdexcept>

#include <boost/program_options.hpp>
#include <systemc>
#include <unistd.h>

#include "platform/hbm_stream.h"
#include "platform/runtime_context.h"
#include "platform/timeline.h"
#include "sc_main/workloads.h"
#include "kernels/gqa/decode_run.h"
#include "kernels/gqa/sp_table.h"
#include "models/common/waveform.h"
#include "platform/output_file.h"
#include "platform/topology.h"
#include "platform/units.h"
#include "sc_main/bench.h"
#include "sc_main/errors.h"
#include "sc_main/partition.h"
#include "sc_main/report.h"
#include "sc_main/world.h"

namespace kb::cli {
namespace po = boost::program_options;

namespace {

const char* kUsage =
    "usage:\n"
    "  kernbench                                   run the headline case (GQA decode, S = 32768, 4 SIPs)\n"
    "  kernbench run [options]                     run a workload and print its report\n"
    "  kernbench bench gqa_llama70b [--quick] [--out sweep.json] [--jobs N] [--resume]\n"
    "  kernbench topology show|validate FILE [--set key.path=value ...]\n"
    "  kernbench --help | --version\n";

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

int cmd_run(const std::vector<std::string>& args) {
  std::string kernel, topology_file, bytes_text, devices_flag, json_file, op_log_file, dtype_text;
  std::string rows_text, k_text, n_text, m_tile_text, k_tile_text, seed_text;
  std::string seq_text, qlen_text, hq_text, hkv_text, hd_text, cubes_text, pes_text, variant_text, tile_text;
  std::string inputs_dir, outputs_dir, layout_text, chunk_text, qtile_text, vcd_file, vcd_filter, timeline_file;
  std::string sp_table_file, jobs_text, simulate_text, part_file, max_sim_text, timeout_text;
  std::vector<std::string> sets;
  bool write = false, data = false, check = false, causal = false, no_causal = false;
  po::options_description opts("kernbench run options");
  opts.add_options()
      ("help,h", "show this help")
      ("kernel", po::value(&kernel)->default_value("gqa_decode"),
       "workload: gqa_decode, gqa_prefill, hbm_stream, tiled_gemm, row_softmax")
      ("topology", po::value(&topology_file)->default_value(KERNBENCH_DEFAULT_TOPOLOGY), "topology YAML")
      ("set", po::value(&sets)->composing(), "override a topology value: key.path=value (repeatable)")
      ("devices", po::value(&devices_flag), "SIPs to run on, e.g. 0-3 or 0,2 (default: all)")
      ("data", po::bool_switch(&data), "data mode: simulate real values (default: timing mode)")
      ("dtype", po::value(&dtype_text)->default_value("bf16"), "storage dtype of tl kernels: bf16 or fp32")
      ("seed", po::value(&seed_text)->default_value("1"), "seed of the random inputs")
      ("json", po::value(&json_file), "write the run's result as JSON to FILE")
      ("op-log", po::value(&op_log_file), "write the op log to FILE (.jsonl or .csv)")
      ("timeline", po::value(&timeline_file), "write a Chrome trace-event timeline (Perfetto) to FILE")
      ("vcd", po::value(&vcd_file), "write a VCD waveform (engine busy and queue depth, link busy) to FILE")
      ("max-sim-time", po::value(&max_sim_text),
       "stop each device's simulation after this many cycles (e.g. 200000 or 200000cycles); partial results")
      ("timeout", po::value(&timeout_text), "stop the run after this many seconds of wall time; partial results")
      ("jobs", po::value(&jobs_text)->default_value("1"),
       "gqa_decode/gqa_prefill: split the run by SIP over N processes (timing mode); same results")
      ("vcd-filter", po::value(&vcd_filter),
       "--vcd: only modules whose path matches one of these comma-separated globs, e.g. 'sip0.cube3.*'")
      ("seq-len", po::value(&seq_text)->default_value("32768"), "gqa_decode: context length S")
      ("q-len", po::value(&qlen_text), "query tokens T_q (decode: 1; prefill: S)")
      ("layout", po::value(&layout_text)->default_value("zigzag"), "gqa_prefill: contiguous or zigzag")
      ("chunk", po::value(&chunk_text)->default_value("256"), "gqa_prefill: KV rows per ring chunk")
      ("q-tile", po::value(&qtile_text)->default_value("64"), "gqa_prefill: query rows per tile")
      ("heads-q", po::value(&hq_text)->default_value("64"), "gqa_decode: query heads H_q")
      ("heads-kv", po::value(&hkv_text)->default_value("8"), "gqa_decode: KV heads H_kv")
      ("head-dim", po::value(&hd_text)->default_value("128"), "gqa_decode: head dimension d")
      ("cubes-per-group", po::value(&cubes_text)->default_value("8"),
       "gqa_decode: cubes per KV head (C), or auto: the fastest C at this S from the SP table")
      ("pes", po::value(&pes_text)->default_value("8"), "PEs per cube (P); gqa_decode: or auto, like C")
      ("sp-table", po::value(&sp_table_file)->default_value(KERNBENCH_SP_TABLE),
       "gqa_decode: the SP table auto reads (written by kernbench bench gqa_llama70b)")
      ("variant", po::value(&variant_text)->default_value("pipelined"), "gqa_decode: naive, pipelined or fused")
      ("tile", po::value(&tile_text)->default_value("0"), "gqa_decode: KV rows per sweep tile (0: auto)")
      ("causal", po::bool_switch(&causal), "causal attention (the default)")
      ("no-causal", po::bool_switch(&no_causal), "attention without the causal mask")
      ("inputs", po::value(&inputs_dir), "gqa_decode: read q.npy [H_q,T_q,d], k.npy and v.npy [H_kv,S,d] from DIR")
      ("outputs", po::value(&outputs_dir), "gqa_decode: write o.npy [H_q,T_q,d] to DIR (data mode)")
      ("check", po::bool_switch(&check), "gqa_decode: exit 1 if O misses the fp64 reference's tolerance (data mode)")
      ("bytes", po::value(&bytes_text)->default_value("256KiB"), "hbm_stream: bytes each PE moves")
      ("write", po::bool_switch(&write), "hbm_stream: write to HBM instead of reading")
      ("rows", po::value(&rows_text)->default_value("256"), "tiled_gemm/row_softmax: rows per PE")
      ("k", po::value(&k_text)->default_value("128"), "tiled_gemm: K (row_softmax: row length)")
      ("n", po::value(&n_text)->default_value("128"), "tiled_gemm: N")
      ("m-tile", po::value(&m_tile_text)->default_value("64"), "rows per tile of the sweep")
      ("k-tile", po::value(&k_tile_text)->default_value("64"), "tiled_gemm: rows of B per streamed tile");
  // What a part of a --jobs run gets from its parent, not for people.
  po::options_description internal;
  internal.add_options()("simulate", po::value(&simulate_text))("part", po::value(&part_file));
  po::options_description all;
  all.add(opts).add(internal);
  po::variables_map vm;
  // No abbreviated flags: a --jobs run passes the command line on to its parts.
  po::store(po::command_line_parser(args)
                .options(all)
                .style(po::command_line_style::default_style & ~po::command_line_style::allow_guessing)
                .run(),
            vm);
  po::notify(vm);
  if (vm.count("help")) {
    std::cout << kUsage << "\n" << opts;
    return 0;
  }
  const auto& examples = workloads::example_kernels();
  const bool is_example = std::find(examples.begin(), examples.end(), kernel) != examples.end();
  const bool attention = kernel == "gqa_decode" || kernel == "gqa_prefill";
  if (kernel != "hbm_stream" && !attention && !is_example)
    throw UsageError("--kernel '" + kernel + "': allowed values: gqa_decode, gqa_prefill, hbm_stream, tiled_gemm, "
                     "row_softmax");
  if (causal && no_causal) throw UsageError("--causal and --no-causal contradict each other");
  if ((check || !outputs_dir.empty()) && !data && inputs_dir.empty())
    throw UsageError("--check and --outputs need --data (data mode) or --inputs");
  if (!attention && (check || !inputs_dir.empty() || !outputs_dir.empty()))
    throw UsageError("--check, --inputs and --outputs apply to --kernel gqa_decode and gqa_prefill");
  const auto dtype = parse_dtype(dtype_text);
  if (!dtype) throw UsageError("--dtype '" + dtype_text + "': allowed values: bf16, fp32");
  if (!op_log_file.empty() && !op_log_file.ends_with(".jsonl") && !op_log_file.ends_with(".csv"))
    throw UsageError("--op-log " + op_log_file + ": the file name must end in .jsonl or .csv");
  if (kernel == "hbm_stream" && (data || !op_log_file.empty() || !timeline_file.empty()))
    throw UsageError("--kernel hbm_stream drives the DMA directly: --data, --op-log and --timeline need a tl kernel");
  if (vm.count("vcd-filter") && vcd_file.empty()) throw UsageError("--vcd-filter needs --vcd FILE");
  workloads::ExampleKnobs knobs;
  knobs.rows_per_pe = count_flag("--rows", rows_text, 1, 1u << 20);
  knobs.k = count_flag("--k", k_text, 1, 1u << 16);
  knobs.n = count_flag("--n", n_text, 1, 1u << 16);
  knobs.m_tile = count_flag("--m-tile", m_tile_text, 1, 1u << 16);
  knobs.k_tile = count_flag("--k-tile", k_tile_text, 1, 1u << 16);
  knobs.seed = count_flag("--seed", seed_text, 0, 1u << 30);
  knobs.dtype = *dtype;
  gqa::DecodeConfig dc;
  dc.s = count_flag("--seq-len", seq_text, 0, 1u << 24);
  dc.t_q = vm.count("q-len") ? count_flag("--q-len", qlen_text, 0, 1u << 24) : 1;
  dc.h_q = count_flag("--heads-q", hq_text, 0, 4096);
  dc.h_kv = count_flag("--heads-kv", hkv_text, 0, 4096);
  dc.d = count_flag("--head-dim", hd_text, 0, 1u << 16);
  const bool auto_cubes = cubes_text == "auto", auto_pes = pes_text == "auto";
  if ((auto_cubes || auto_pes) && kernel != "gqa_decode")
    throw UsageError("--cubes-per-group auto and --pes auto apply to --kernel gqa_decode");
  dc.cubes = auto_cubes ? 0 : count_flag("--cubes-per-group", cubes_text, 1, 4096);
  dc.pes = auto_pes ? 0 : count_flag("--pes", pes_text, 1, 4096);
  dc.tile_rows = count_flag("--tile", tile_text, 0, 1u << 16);
  dc.causal = !no_causal;
  dc.dtype = *dtype;
  const auto variant = gqa::parse_variant(variant_text);
  if (!variant) throw UsageError("--variant '" + variant_text + "': allowed values: naive, pipelined, fused");
  dc.variant = *variant;
  gqa::PrefillConfig pc;
  pc.h_q = dc.h_q;
  pc.h_kv = dc.h_kv;
  pc.d = dc.d;
  pc.s = dc.s;
  pc.t_q = vm.count("q-len") ? dc.t_q : 0;
  pc.pes = dc.pes;
  pc.causal = dc.causal;
  pc.dtype = dc.dtype;
  pc.chunk_rows = count_flag("--chunk", chunk_text, 1, 1u << 16);
  pc.q_tile = count_flag("--q-tile", qtile_text, 1, 1u << 16);
  const auto layout = gqa::parse_layout(layout_text);
  if (!layout) throw UsageError("--layout '" + layout_text + "': allowed values: contiguous, zigzag");
  pc.layout = *layout;

  const Topology topo = Topology::load(topology_file, sets);
  const auto bytes = units::parse_bytes(bytes_text);
  if (!bytes || *bytes == 0 || *bytes > topo.cube.hbm.capacity)
    throw UsageError("--bytes '" + bytes_text + "': expected a size from 1B to the HBM channel capacity (" +
                     units::format_bytes(topo.cube.hbm.capacity) + "), e.g. 256KiB");
  if (auto_cubes || auto_pes) {
    try {
      const gqa::SpTable table = gqa::SpTable::load(sp_table_file);
      if (table.topology != topo.name || table.h_q != dc.h_q || table.h_kv != dc.h_kv || table.d != dc.d ||
          table.t_q != dc.t_q)
        throw std::invalid_argument("SP table " + sp_table_file + " was measured on " + table.topology + " with H_q " +
                                    std::to_string(table.h_q) + ", H_kv " + std::to_string(table.h_kv) + ", d " +
                                    std::to_string(table.d) + ", T_q " + std::to_string(table.t_q) +
                                    "; this run differs: give C and P, or sweep this case into a table");
      const auto [c, p] = table.choose(dc.s, auto_cubes ? std::nullopt : std::optional(dc.cubes),
                                       auto_pes ? std::nullopt : std::optional(dc.pes));
      dc.cubes = c;
      dc.pes = p;
      std::cout << "kernbench: SP table " << sp_table_file << " picks C = " << c << ", P = " << p << " for S = " << dc.s
                << "\n";
    } catch (const std::invalid_argument& e) {
      throw InputError(e.what());
    }
  }
  std::vector<SipId> devices;
  if (vm.count("devices")) devices = parse_devices(devices_flag, topo.system.sips);
  else
    for (std::uint32_t s = 0; s < topo.system.sips; ++s) devices.emplace_back(s);
  check_writable("--json", json_file);
  check_writable("--op-log", op_log_file);
  check_writable("--timeline", timeline_file);
  check_writable("--vcd", vcd_file);
  if (!outputs_dir.empty() && !std::filesystem::is_directory(outputs_dir))
    throw InputError("--outputs " + outputs_dir + ": no such folder; give an existing folder to write o.npy into");
  if (!outputs_dir.empty() && ::access(outputs_dir.c_str(), W_OK) != 0)
    throw InputError("--outputs " + outputs_dir + ": the folder is not writable");
  dc.devices = devices;
  pc.devices = devices;
  const std::uint32_t jobs = count_flag("--jobs", jobs_text, 1, 256);
  RunOptions run_options{data, 0, 0};
  if (vm.count("max-sim-time")) {
    const auto cycles = units::parse_cycles(max_sim_text);
    if (!cycles || *cycles == 0)
      throw UsageError("--max-sim-time '" + max_sim_text + "': expected a number of cycles above 0, e.g. 200000cycles");
    run_options.max_cycles = *cycles;
  }
  if (vm.count("timeout")) {
    char* end = nullptr;
    const double seconds = std::strtod(timeout_text.c_str(), &end);
    if (end == timeout_text.c_str() || *end != '\0' || !(seconds > 0) || seconds > 1e7)
      throw UsageError("--timeout '" + timeout_text + "': expected seconds of wall time above 0, e.g. 60 or 0.5");
    run_options.timeout_seconds = seconds;
  }
  if ((run_options.max_cycles || run_options.timeout_seconds > 0) && kernel == "hbm_stream")
    throw UsageError("--max-sim-time and --timeout apply to tl kernels; hbm_stream is a fixed DMA stream");
  const World& world = World::get();
  const bool mpi = world.size() > 1;  // started by mpirun: the ranks split the run by SIP
  if (jobs > 1 || mpi) {
    const std::string how = mpi ? "mpirun" : "--jobs";
    if (mpi && jobs > 1) throw UsageError("--jobs and mpirun both split the run by SIP: use one of them");
    if (!attention)
      throw UsageError(how + " splits --kernel gqa_decode and gqa_prefill by SIP; " + kernel + " runs in one process");
    if (data || !inputs_dir.empty() || !vcd_file.empty())
      throw UsageError(how + " splits timing-mode runs; --data, --inputs, --outputs, --check and --vcd run in one "
                             "process");
  }
  if (!part_file.empty()) {
    dc.simulate = parse_devices(simulate_text, topo.system.sips);
    pc.simulate = dc.simulate;
  }
  if (mpi) {
    const auto parts = split_devices(devices, static_cast<std::size_t>(world.size()));
    if (static_cast<std::size_t>(world.rank()) >= parts.size()) {  // more ranks than SIPs: nothing to simulate
      world.send(0, "{}");
      return 0;
    }
    dc.simulate = parts[static_cast<std::size_t>(world.rank())];
    pc.simulate = dc.simulate;
  }
  std::optional<gqa::AttentionInputs> inputs;
  if (attention) {
    try {
      if (kernel == "gqa_decode") gqa::validate(dc, topo);
      else gqa::validate(pc, topo);
      const gqa::DecodeConfig shapes = kernel == "gqa_decode" ? dc : pc.as_attention();
      if (!inputs_dir.empty()) inputs = gqa::AttentionInputs::from_npy(inputs_dir, shapes);
      else if (data) inputs = gqa::AttentionInputs::random(shapes, knobs.seed);
    } catch (const std::invalid_argument& e) {
      throw InputError(e.what());
    }
  }

  report::RunInfo info;
  info.topology_file = topology_file;
  info.topology_name = topo.name;
  auto write_traces = [&](const OpLog& log) {
    if (!op_log_file.empty())
      write_file_atomically(op_log_file, op_log_file.ends_with(".csv") ? log.to_csv() : log.to_jsonl());
    if (!timeline_file.empty()) write_file_atomically(timeline_file, chrome_trace(log, topo));
  };
  auto t0 = std::chrono::steady_clock::now();
  // The report of a run split by SIP, from its parts (in device order) and their op logs.
  auto report_parts = [&](const std::vector<nlohmann::json>& parts, const OpLog& log, double seconds) {
    const bool decode = kernel == "gqa_decode";
    const gqa::DecodeResult dr = decode ? merge_decode(parts) : gqa::DecodeResult{};
    const gqa::PrefillResult pr = decode ? gqa::PrefillResult{} : merge_prefill(parts);
    info = merge_info(parts, decode ? dr.cycles : pr.cycles, seconds);
    info.topology_file = topology_file;
    info.topology_name = topo.name;
    std::cout << (decode ? report::format_decode(topo, dc, dr, std::nullopt, info)
                         : report::format_prefill(topo, pc, pr, std::nullopt, info));
    write_traces(log);
    if (!json_file.empty())
      write_file_atomically(json_file, (decode ? report::decode_json(topo, dc, dr, std::nullopt, info)
                                               : report::prefill_json(topo, pc, pr, std::nullopt, info))
                                               .dump(2) +
                                           "\n");
    return 0;
  };
  // This process simulated one part of a split run: a --jobs part writes it for its
  // parent; an MPI rank sends it to rank 0, which gathers every part and reports.
  auto finish_part = [&](const nlohmann::json& part, const OpLog& log) {
    if (!part_file.empty()) {
      write_traces(log);
      write_file_atomically(part_file, part.dump() + "\n");
      return 0;
    }
    const bool want_log = !op_log_file.empty() || !timeline_file.empty();
    const nlohmann::json message = {{"part", part}, {"op_log", want_log ? log.to_jsonl() : ""}};
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
    return report_parts(parts, merged, seconds_since(t0));
  };
  if (jobs > 1) {
    std::vector<std::string> child;  // the command line without what the parent writes itself
    for (std::size_t i = 0; i < args.size(); ++i) {
      const std::string& a = args[i];
      const bool takes_value =
          a == "--jobs" || a == "--json" || a == "--op-log" || a == "--timeline" || a == "--devices";
      if (takes_value) ++i;
      else if (!a.starts_with("--jobs=") && !a.starts_with("--json=") && !a.starts_with("--op-log=") &&
               !a.starts_with("--timeline=") && !a.starts_with("--devices="))
        child.push_back(a);
    }
    child.insert(child.begin(), "run");
    OpLog log;
    const bool want_log = !op_log_file.empty() || !timeline_file.empty();
    const auto parts = run_parts(child, devices, split_devices(devices, jobs), want_log ? &log : nullptr);
    return report_parts(parts, log, seconds_since(t0));
  }
  System system("system", topo);
  info.elaboration_seconds = seconds_since(t0);
  std::optional<Waveform> wave;
  if (!vcd_file.empty()) {
    wave.emplace(vcd_filter, std::string(system.name()) + ".");
    system.trace(*wave);
    if (wave->signal_count() == 0)
      throw UsageError("--vcd-filter '" + vcd_filter + "' matches no module; paths look like sip0.cube3.pe2.gemm, "
                       "sip0.cube3.fabric.pe2.tx, sip0.noc.router3.east");
  }
  auto write_vcd = [&] {
    if (!wave) return;
    std::ostringstream text;
    wave->write_vcd(text);
    write_file_atomically(vcd_file, text.str());
  };
  t0 = std::chrono::steady_clock::now();
  // What every finished run reports about itself: wall time, engine use, memory, work.
  auto measured = [&](std::uint64_t cycles) {
    info.simulation_seconds = seconds_since(t0);
    info.use = utilisation(system, cycles);
    info.peak_rss_kib = report::peak_rss_kib();
    info.transactions = system.transactions();
  };
  if (kernel == "hbm_stream") {
    const StreamResult r = run_hbm_stream(system, *bytes, write, devices);
    measured(r.simulated_cycles);
    std::cout << report::format_stream(topo, r, info);
    write_vcd();
    if (!json_file.empty())
      write_file_atomically(json_file, report::stream_json(topo, r, info).dump(2) + "\n");
    return 0;
  }
  run_options.data = data || inputs.has_value();
  RuntimeContext rt(system, run_options);
  try {
    // After an attention run (decode or prefill, `config` its configuration): the part
    // file of a split run, or the numeric check, report, traces and outputs.
    auto finish_attention = [&](const auto& r, const auto& config, const gqa::DecodeConfig& shape, auto format,
                                auto to_json) {
      measured(r.cycles);
      if (!part_file.empty() || mpi) return finish_part(part_json(r, info), rt.op_log());
      std::optional<gqa::NumericCheck> numerics;
      if (r.o) numerics = gqa::check_attention(shape, *inputs, *r.o);
      std::cout << format(topo, config, r, numerics, info);
      write_traces(rt.op_log());
      write_vcd();
      if (!outputs_dir.empty()) write_npy(outputs_dir + "/o.npy", *r.o);
      if (!json_file.empty()) write_file_atomically(json_file, to_json(topo, config, r, numerics, info).dump(2) + "\n");
      return check && !numerics->pass ? 1 : 0;
    };
    if (kernel == "gqa_prefill")
      return finish_attention(gqa::run_prefill(rt, pc, inputs ? &*inputs : nullptr), pc, pc.as_attention(),
                              report::format_prefill, report::prefill_json);
    if (kernel == "gqa_decode")
      return finish_attention(gqa::run_decode(rt, dc, inputs ? &*inputs : nullptr), dc, dc, report::format_decode,
                              report::decode_json);
    report::KernelSummary summary;
    summary.kernel = kernel;
    summary.data = data;
    summary.pes = static_cast<std::uint32_t>(devices.size()) * topo.pes_per_sip();
    summary.knobs = {{"rows_per_pe", knobs.rows_per_pe}, {"k", knobs.k}, {"n", knobs.n}, {"m_tile", knobs.m_tile},
                     {"k_tile", knobs.k_tile}, {"dtype", dtype_name(knobs.dtype)}, {"seed", knobs.seed}};
    summary.cycles = workloads::run_example(rt, kernel, knobs, devices);
    measured(summary.cycles);
    std::cout << report::format_kernel(topo, summary, rt.op_log(), info);
    write_traces(rt.op_log());
    write_vcd();
    if (!json_file.empty())
      write_file_atomically(json_file, report::kernel_json(topo, summary, rt.op_log(), info).dump(2) + "\n");
    return 0;
  } catch (const RunStopped& e) {
    // What the run did until the limit: the op log and timeline as asked, and a result
    // marked partial; exit code 1.
    std::cout << "kernbench: " << kernel << " on " << topo.name << ": run stopped: " << e.what()
              << "\n  partial results: " << rt.op_log().size() << " op-log records so far\n";
    write_traces(rt.op_log());
    if (!json_file.empty())
      write_file_atomically(json_file, nlohmann::json{{"kernel", kernel},
                                                      {"partial", true},
                                                      {"stopped", e.what()},
                                                      {"cycles_reached", e.cycles()},
                                                      {"op_log", {{"records", rt.op_log().size()}}},
                                                      {"wall", {{"seconds", seconds_since(t0)}}}}
                                                           .dump(2) +
                                           "\n");
    std::cerr << "kernbench: run stopped: " << e.what() << "\n";
    return 1;
  }
}

int cmd_topology(const std::vector<std::string>& args) {
  std::string action, file;
  std::vector<std::string> sets;
  po::options_description opts("kernbench topology options");
  opts.add_options()("help,h", "show this help")(
      "set", po::value(&sets)->composing(), "override a value: key.path=value (repeatable)");
  po::options_description hidden;
  hidden.add_options()("action", po::value(&action))("file", po::value(&file));
  po::options_description all;
  all.add(opts).add(hidden);
  po::positional_options_description pos;
  pos.add("action", 1).add("file", 1);
  po::variables_map vm;
  po::store(po::command_line_parser(args).options(all).positional(pos).run(), vm);
  po::notify(vm);
  if (vm.count("help")) {
    std::cout << kUsage << "\n" << opts;
    return 0;
  }
  if (action != "show" && action != "validate")
    throw UsageError("topology: expected 'show' or 'validate', got '" + action + "'");
  if (file.empty()) throw UsageError("topology " + action + ": missing the topology FILE");
  const Topology topo = Topology::load(file, sets);
  if (action == "show") std::cout << format_topology(topo);
  else std::cout << file << ": valid (" << topo.total_pes() << " PEs)\n";
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  try {
    if (args.empty()) return cmd_run({});
    const std::string cmd = args.front();
    const std::vector<std::string> rest(args.begin() + 1, args.end());
    if (cmd == "--help" || cmd == "-h" || cmd == "help") {
      std::cout << kUsage;
      return 0;
    }
    if (cmd == "--version") {
      std::cout << "kernbench 0.1.0 (SystemC " << sc_core::sc_release()
                << (World::built_with_mpi() ? "; MPI" : "; without MPI") << ")\n";
      return 0;
    }
    if (cmd == "run") return cmd_run(rest);
    if (cmd == "topology") return cmd_topology(rest);
    if (cmd == "bench") return cmd_bench(rest);
    throw UsageError("unknown command '" + cmd + "'; commands: run, bench, topology");
  } catch (const UsageError& e) {
    std::cerr << "kernbench: error: " << e.what() << "\n" << kUsage;
    return 2;
  } catch (const po::error& e) {
    std::cerr << "kernbench: error: " << e.what() << "\n" << kUsage;
    return 2;
  } catch (const TopologyError& e) {
    for (const auto& err : e.errors()) std::cerr << "kernbench: error: " << err << "\n";
    return 1;
  } catch (const tl::KernelError& e) {
    std::cerr << "kernbench: kernel error: " << e.what() << "\n";
    return 1;
  } catch (const RunError& e) {
    std::cerr << "kernbench: run error: " << e.what() << "\n";
    return 1;
  } catch (const sc_core::sc_report& e) {
    std::cerr << "kernbench: simulation error: " << e.what() << "\n";
    return 1;
  } catch (const std::exception& e) {
    std::cerr << "kernbench: error: " << e.what() << "\n";
    return 1;
  }
}

}  // namespace kb::cli
