#include "sc_main/bench.h"

#include <unistd.h>

#include <filesystem>
#include <iostream>
#include <map>

#include <boost/program_options.hpp>
#include <nlohmann/json.hpp>

#include "workloads/gqa_decode/sp_table.h"
#include "base/topology.h"
#include "base/output_file.h"
#include "sc_main/errors.h"
#include "sc_main/sweep.h"
#include "sc_main/world.h"
#include "workloads/result.h"


namespace kb::cli {
namespace po = boost::program_options;
using Json = nlohmann::ordered_json;

namespace {

constexpr const char* kBench = "gqa_llama70b";

// The SP table from the sweep's decode rows (all of them: the table keeps every (C, P)).
gqa::SpTable sp_table(const std::map<std::size_t, Json>& rows) {
  gqa::SpTable t;
  for (const auto& [i, row] : rows) {
    if (row["part"] != "decode") continue;
    const workloads::Result r = workloads::Result::from_json(row["result"]);
    const nlohmann::json& k = r.knobs;
    t.topology = r.topology_name;
    t.h_q = k.at("heads_q");
    t.h_kv = k.at("heads_kv");
    t.d = k.at("head_dim");
    t.t_q = k.at("q_len");
    t.entries.push_back({k.at("seq_len"), k.at("cubes_per_group"), k.at("pes"), r.simulated_cycles});
  }
  return t;
}

}  // namespace

int cmd_bench(const std::vector<std::string>& args) {
  std::string name, out_file, table_file, jobs_text, topology_file;
  bool quick = false, resume = false;
  po::options_description opts("kernbench bench options");
  opts.add_options()
      ("help,h", "show this help")
      ("quick", po::bool_switch(&quick), "the small sweep (CI): S of 1K and 4K, prefill on one SIP")
      ("out", po::value(&out_file)->default_value("sweep.json"), "the sweep's rows (JSON; the same as CSV beside it)")
      ("table", po::value(&table_file), "where to write the SP table (default: sp_table.json beside --out)")
      ("jobs", po::value(&jobs_text)->default_value("1"), "points run at the same time, each in its own process")
      ("resume", po::bool_switch(&resume), "keep the rows of --out and run only the points it lacks")
      ("topology", po::value(&topology_file)->default_value(KERNBENCH_DEFAULT_TOPOLOGY), "topology YAML");
  const po::variables_map vm = parse_sweep_command(args, opts, name);
  if (vm.count("help")) {
    std::cout << "usage: kernbench bench gqa_llama70b [--quick] [--out sweep.json] [--jobs N] [--resume]\n"
              << "  runs sweeps/" << kBench << ".yaml (--quick: sweeps/" << kBench << "_quick.yaml) as kernbench sweep "
              << "does, then writes the SP table\n" << opts;
    return 0;
  }
  if (name != kBench) throw UsageError("bench: unknown sweep '" + name + "'; sweeps: " + kBench);
  const std::size_t jobs = jobs_of(jobs_text);
  if (!out_file.ends_with(".json")) throw UsageError("--out " + out_file + ": the file name must end in .json");
  const std::filesystem::path out_path(out_file);
  const std::string csv_file = out_file.substr(0, out_file.size() - 5) + ".csv";
  if (table_file.empty()) table_file = (out_path.parent_path() / "sp_table.json").string();
  const std::filesystem::path dir = out_path.has_parent_path() ? out_path.parent_path() : ".";
  if (!std::filesystem::is_directory(dir) || ::access(dir.c_str(), W_OK) != 0)
    throw InputError("--out " + out_file + ": folder '" + dir.string() + "' does not exist or is not writable");

  Topology::load(topology_file);  // a bad topology is reported once, before any point runs
  const std::string spec_file = std::string(KERNBENCH_SOURCE_DIR) + "/sweeps/" + kBench + (quick ? "_quick" : "") + ".yaml";
  std::vector<std::string> more;
  if (!vm["topology"].defaulted()) more = {"--topology", topology_file};
  const SweepSpec spec = SweepSpec::load(spec_file, more);
  const auto rows = run_sweep(spec, {out_file, jobs, resume});
  if (World::get().rank() != 0) return 0;
  const gqa::SpTable table = sp_table(rows);
  write_file_atomically(table_file, table.to_json().dump(1) + "\n");
  std::cout << "kernbench bench " << kBench << ": " << rows.size() << " of " << spec.points.size() << " points in "
            << out_file << " and " << csv_file << "; SP table " << table_file << "\n";
  return 0;
}

}  // namespace kb::cli
