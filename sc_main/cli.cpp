#include "sc_main/cli.h"

#include <cstdio>
#include <iostream>
#include <new>

#include <boost/program_options.hpp>
#include <systemc>

#include "base/topology.h"
#include "platform/runtime_context.h"
#include "sc_main/bench.h"
#include "sc_main/errors.h"
#include "sc_main/exchange.h"
#include "sc_main/run_command.h"
#include "sc_main/sweep.h"
#include "sc_main/world.h"
#include "workloads/models/model_presets.h"
#include "workloads/models/tp_plan.h"

namespace kb::cli {
namespace po = boost::program_options;

namespace {

const char* kUsage =
    "usage:\n"
    "  kernbench                                   run the headline case (GQA decode, S = 32768, 4 SIPs)\n"
    "  kernbench run [options]                     run a workload and print its report\n"
    "  kernbench sweep SPEC.yaml --out DIR [--jobs N] [--resume] [--list]\n"
    "                                              run a sweep spec: a grid of runs over the machine and models\n"
    "  kernbench sweep --report DIR                analyse a finished sweep (elasticities, roofline, plots)\n"
    "  kernbench bench gqa_llama70b [--quick] [--out sweep.json] [--jobs N] [--resume]\n"
    "  kernbench topology show|validate FILE [--set key.path=value ...]\n"
    "  kernbench models                            list the model presets of run --model\n"
    "  kernbench --help | --version\n";

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

int cmd_models(const std::vector<std::string>& args) {
  if (!args.empty()) throw UsageError("models takes no arguments");
  const Topology topo = Topology::load(KERNBENCH_DEFAULT_TOPOLOGY);
  std::cout << "model presets (" << workloads::presets_file() << "), for run --model NAME; SIPs: the fewest SIPs of "
            << topo.name << " that hold the weights, tensor-parallel:\n";
  std::printf("  %-14s %7s %4s %6s %5s %4s %4s %4s %6s %7s %5s %6s %10s %9s\n", "model", "params", "SIPs", "layers", "H_q",
              "H_kv", "G", "d", "hidden", "inter", "norm", "mlp", "block", "vocab");
  for (const workloads::ModelPreset& m : workloads::model_presets()) {
    const std::string g = std::to_string(m.heads_q / m.heads_kv);
    char params[16];
    const double n = static_cast<double>(m.parameters());
    if (n >= 1e9) std::snprintf(params, sizeof params, "%.2fB", n / 1e9);
    else std::snprintf(params, sizeof params, "%.2fM", n / 1e6);
    const std::uint32_t sips = workloads::min_sips(m, topo);
    const std::string sips_text = sips ? std::to_string(sips) : "-";
    std::printf("  %-14s %7s %4s %6u %5u %4u %4s %4u %6u %7u %5s %6s %10s %9u\n", m.name.c_str(), params, sips_text.c_str(),
                m.layers, m.heads_q, m.heads_kv, g.c_str(), m.head_dim, m.hidden, m.intermediate, workloads::norm_name(m.norm),
                workloads::mlp_name(m.mlp), workloads::block_name(m.block), m.vocab);
  }
  std::cout << std::flush;
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  try {
    if (args.empty()) return execute_run(parse_run({}));
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
    if (cmd == "run") {
      const RunRequest request = parse_run(rest);
      if (!request.help.empty()) {
        std::cout << kUsage << "\n" << request.help;
        return 0;
      }
      return execute_run(request);
    }
    if (cmd == "topology") return cmd_topology(rest);
    if (cmd == "sweep") return cmd_sweep(rest);
    if (cmd == "bench") return cmd_bench(rest);
    if (cmd == "models") return cmd_models(rest);
    throw UsageError("unknown command '" + cmd + "'; commands: run, sweep, bench, topology, models");
  } catch (const UsageError& e) {
    std::cerr << "kernbench: error: " << e.what() << "\n" << kUsage;
    return 2;
  } catch (const po::error& e) {
    std::cerr << "kernbench: error: " << e.what() << "\n" << kUsage;
    return 2;
  } catch (const SpecError& e) {
    for (const auto& err : e.errors()) std::cerr << "kernbench: error: " << err << "\n";
    return 1;
  } catch (const TopologyError& e) {
    for (const auto& err : e.errors_as("--set ")) std::cerr << "kernbench: error: " << err << "\n";
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
  } catch (const PeerStopped& e) {
    std::cerr << "kernbench: error: " << e.what() << "\n";
    return kPeerStoppedExit;
  } catch (const std::bad_alloc&) {
    std::cerr << "kernbench: error: out of host memory: the run's host-side tensors (data mode keeps Q, K, V and O, "
                 "and their references, on the host) do not fit this machine; use timing mode, a shorter context or "
                 "fewer heads\n";
    return 1;
  } catch (const std::exception& e) {
    std::cerr << "kernbench: error: " << e.what() << "\n";
    return 1;
  }
}

}  // namespace kb::cli
