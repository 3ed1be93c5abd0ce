#include "sc_main/bench.h"

#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <memory>
#include <set>
#include <sstream>
#include <thread>

#include <boost/program_options.hpp>
#include <nlohmann/json.hpp>

#include "workloads/gqa_decode/sp_table.h"
#include "base/topology.h"
#include "base/output_file.h"
#include "sc_main/errors.h"
#include "base/interrupt.h"
#include "sc_main/processes.h"
#include "sc_main/world.h"
#include "workloads/result.h"


namespace kb::cli {
namespace po = boost::program_options;
using Json = nlohmann::ordered_json;

namespace {

constexpr const char* kBench = "gqa_llama70b";

// One sweep point: a `kernbench run` command line.
struct Point {
  // decode (the SP sweep over C x P; C = P = 8 is the headline), prefill (whole prompts),
  // chunked (T_q new tokens after a prefix of S - T_q, on each ring) or batch (one
  // batched-decode step of the requests `batch` draws)
  std::string panel;
  std::uint64_t s = 0;
  std::uint32_t cubes = 8, pes = 8;
  std::string layout;              // prefill, chunked
  std::vector<std::string> extra;  // more flags (--quick's one-SIP runs)
  std::uint32_t q_len = 0;         // chunked
  std::string ring;                // chunked
  std::string batch;               // batch: a --batch value

  std::string key() const {
    std::string k = panel == "batch" ? panel + " " + batch
                                     : panel + " S=" + std::to_string(s) + " C=" + std::to_string(cubes) +
                                           " P=" + std::to_string(pes);
    if (!layout.empty()) k += " " + layout;
    if (q_len) k += " T_q=" + std::to_string(q_len) + " ring=" + ring;
    for (const std::string& e : extra) {
      k += ' ';
      k += e;
    }
    return k;
  }
  std::vector<std::string> args(const std::string& topology) const {
    std::vector<std::string> a = {"run", "--topology", topology, "--pes", std::to_string(pes)};
    if (panel == "batch") {
      a.insert(a.end(), {"--kernel", "gqa_decode_batch", "--batch", batch});
      a.insert(a.end(), extra.begin(), extra.end());
      return a;
    }
    a.insert(a.end(), {"--seq-len", std::to_string(s)});
    if (panel == "decode") {
      a.insert(a.end(), {"--kernel", "gqa_decode", "--cubes-per-group", std::to_string(cubes)});
    } else {
      a.insert(a.end(), {"--kernel", "gqa_prefill", "--layout", layout});
    }
    if (q_len) a.insert(a.end(), {"--q-len", std::to_string(q_len), "--ring", ring});
    a.insert(a.end(), extra.begin(), extra.end());
    return a;
  }
};

// The Llama-3-70B panels on all 4 SIPs: decode over C x P in {1, 2, 4, 8}^2 and S from
// 1K to 128K; prefill (the default placement, C 8 x P 8) zigzag and contiguous from 1K to 32K;
// chunked prefill of T_q in {512, 2048} new tokens after S in {8K, 32K}, each ring; batched
// decode of 1 to 256 requests. --quick keeps the shape of the sweep at small S (prefill and
// batches on one SIP) so it runs in CI.
std::vector<Point> points(bool quick) {
  const std::vector<std::uint64_t> decode_s =
      quick ? std::vector<std::uint64_t>{1024, 4096}
            : std::vector<std::uint64_t>{1024, 2048, 4096, 8192, 16384, 32768, 65536, 131072};
  const std::vector<std::uint64_t> prefill_s =
      quick ? std::vector<std::uint64_t>{1024} : std::vector<std::uint64_t>{1024, 2048, 4096, 8192, 16384, 32768};
  // --quick runs prefill, chunked prefill and batches on one SIP with 2 KV heads
  const std::vector<std::string> one_sip =
      quick ? std::vector<std::string>{"--devices", "0", "--heads-kv", "2", "--heads-q", "16"} : std::vector<std::string>{};
  std::vector<Point> out;
  for (const std::uint64_t s : decode_s)
    for (const std::uint32_t c : {1u, 2u, 4u, 8u})
      for (const std::uint32_t p : {1u, 2u, 4u, 8u}) out.push_back({"decode", s, c, p, "", {}, 0, "", ""});
  for (const std::uint64_t s : prefill_s)
    for (const char* layout : {"zigzag", "contiguous"})
      out.push_back({"prefill", s, 8, 8, layout, one_sip, 0, "", ""});
  const std::vector<std::uint64_t> chunked_s = quick ? std::vector<std::uint64_t>{4096} : std::vector<std::uint64_t>{8192, 32768};
  const std::vector<std::uint32_t> chunked_t = quick ? std::vector<std::uint32_t>{256} : std::vector<std::uint32_t>{512, 2048};
  for (const std::uint64_t s : chunked_s)
    for (const std::uint32_t t : chunked_t)
      for (const char* ring : {"kv", "q"})
        out.push_back({"chunked", s, 8, 8, "striped", one_sip, t, ring, ""});
  // Batched decode: lengths from a fixed seed, long contexts (1K-32K) and short (128-4K)
  const std::vector<std::uint32_t> batch_n =
      quick ? std::vector<std::uint32_t>{1, 4} : std::vector<std::uint32_t>{1, 2, 4, 8, 16, 32, 64, 128, 256};
  const std::vector<std::string> batch_lens =
      quick ? std::vector<std::string>{"128-2048:7"} : std::vector<std::string>{"1024-32768:7", "128-4096:11"};
  for (const std::string& lens : batch_lens)
    for (const std::uint32_t b : batch_n)
      out.push_back({"batch", 0, 8, 8, "", one_sip, 0, "", "random:" + std::to_string(b) + ":" + lens});
  return out;
}

std::string git_revision() {
  const std::string cmd = std::string("git -C '") + KERNBENCH_SOURCE_DIR + "' describe --always --dirty 2>/dev/null";
  FILE* p = popen(cmd.c_str(), "r");
  if (p == nullptr) return "unknown";
  char buf[128] = {};
  std::string out = fgets(buf, sizeof buf, p) ? buf : "";
  pclose(p);
  while (!out.empty() && (out.back() == '\n' || out.back() == ' ')) out.pop_back();
  return out.empty() ? "unknown" : out;
}

// Scalar leaves of a row as dotted column names; arrays of scalars joined with ';'.
void flatten(const Json& j, const std::string& prefix, std::vector<std::pair<std::string, std::string>>& out) {
  if (j.is_object()) {
    for (const auto& [k, v] : j.items()) flatten(v, prefix.empty() ? k : prefix + "." + k, out);
  } else if (j.is_array()) {
    std::string joined;
    for (const auto& v : j) {
      if (v.is_structured()) return;  // per-SIP tables stay in the JSON
      if (!joined.empty()) joined += ';';
      joined += v.is_string() ? v.get<std::string>() : v.dump();
    }
    out.emplace_back(prefix, joined);
  } else {
    out.emplace_back(prefix, j.is_string() ? j.get<std::string>() : j.dump());
  }
}

std::string csv_of(const std::map<std::size_t, Json>& rows) {
  std::vector<std::string> columns;
  std::set<std::string> seen;
  std::vector<std::map<std::string, std::string>> cells;
  for (const auto& [i, row] : rows) {
    std::vector<std::pair<std::string, std::string>> flat;
    flatten(row, "", flat);
    auto& c = cells.emplace_back();
    for (auto& [k, v] : flat) {
      if (seen.insert(k).second) columns.push_back(k);
      c[k] = v;
    }
  }
  auto quoted = [](const std::string& v) {
    if (v.find_first_of(",\"\n") == std::string::npos) return v;
    std::string q = "\"";
    for (const char ch : v) q += ch == '"' ? std::string("\"\"") : std::string(1, ch);
    return q + "\"";
  };
  std::string out;
  for (std::size_t i = 0; i < columns.size(); ++i) {
    if (i) out += ',';
    out += quoted(columns[i]);
  }
  out += "\n";
  for (const auto& c : cells) {
    for (std::size_t i = 0; i < columns.size(); ++i) {
      const auto it = c.find(columns[i]);
      if (i) out += ',';
      if (it != c.end()) out += quoted(it->second);
    }
    out += "\n";
  }
  return out;
}

// The SP table from the sweep's decode rows (all of them: the table keeps every (C, P)).
gqa::SpTable sp_table(const std::map<std::size_t, Json>& rows) {
  gqa::SpTable t;
  for (const auto& [i, row] : rows) {
    if (row["panel"] != "decode") continue;
    const workloads::Result r = workloads::Result::from_json(row);
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

std::string clock_text(double seconds) {
  const auto s = static_cast<long>(seconds + 0.5);
  char buf[32];
  std::snprintf(buf, sizeof buf, "%ld:%02ld", s / 60, s % 60);
  return buf;
}

struct Running {
  std::size_t point;
  std::string json, log;
  std::chrono::steady_clock::time_point started;
  std::shared_ptr<interrupt::RemovedOnInterrupt> json_removed, log_removed;
};

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
  po::options_description hidden;
  hidden.add_options()("name", po::value(&name));
  po::options_description all;
  all.add(opts).add(hidden);
  po::positional_options_description pos;
  pos.add("name", 1);
  po::variables_map vm;
  po::store(po::command_line_parser(args).options(all).positional(pos).run(), vm);
  po::notify(vm);
  if (vm.count("help")) {
    std::cout << "usage: kernbench bench gqa_llama70b [--quick] [--out sweep.json] [--jobs N] [--resume]\n" << opts;
    return 0;
  }
  if (name != kBench) throw UsageError("bench: unknown sweep '" + name + "'; sweeps: " + kBench);
  const auto jobs = std::strtoul(jobs_text.c_str(), nullptr, 10);
  if (jobs_text.find_first_not_of("0123456789") != std::string::npos || jobs < 1 || jobs > 256)
    throw UsageError("--jobs '" + jobs_text + "': expected a whole number from 1 to 256");
  if (!out_file.ends_with(".json")) throw UsageError("--out " + out_file + ": the file name must end in .json");
  const std::filesystem::path out_path(out_file);
  const std::string csv_file = out_file.substr(0, out_file.size() - 5) + ".csv";
  if (table_file.empty()) table_file = (out_path.parent_path() / "sp_table.json").string();
  const std::filesystem::path dir = out_path.has_parent_path() ? out_path.parent_path() : ".";
  if (!std::filesystem::is_directory(dir) || ::access(dir.c_str(), W_OK) != 0)
    throw InputError("--out " + out_file + ": folder '" + dir.string() + "' does not exist or is not writable");

  Topology::load(topology_file);  // a bad topology is reported once, before any point runs
  const std::vector<Point> plan = points(quick);
  const std::string revision = git_revision();
  std::map<std::size_t, Json> rows;  // by point index, so the files do not depend on --jobs
  if (resume && std::filesystem::exists(out_path)) {
    std::ifstream in(out_file);
    Json previous;
    try {
      previous = Json::parse(in);
    } catch (const Json::exception& e) {
      throw InputError("--resume: " + out_file + " is not a sweep file: " + e.what());
    }
    if (previous.value("bench", "") != kBench || previous.value("quick", !quick) != quick)
      throw InputError("--resume: " + out_file + " holds another sweep (bench " + previous.value("bench", "?") +
                       (previous.value("quick", false) ? ", --quick" : "") + ")");
    std::map<std::string, std::size_t> index;
    for (std::size_t i = 0; i < plan.size(); ++i) index[plan[i].key()] = i;
    for (const auto& row : previous["rows"])
      if (const auto it = index.find(row.value("key", "")); it != index.end()) rows[it->second] = row;
  }
  auto save = [&] {
    Json doc = {{"bench", kBench}, {"quick", quick}, {"points", plan.size()}, {"rows", Json::array()}};
    for (const auto& [i, row] : rows) doc["rows"].push_back(row);
    write_file_atomically(out_file, doc.dump(1) + "\n");
    write_file_atomically(csv_file, csv_of(rows));
  };

  // Under mpirun the ranks take every size-th point; rank 0 gathers the rows and writes.
  const World& world = World::get();
  const int rank = world.rank(), ranks = world.size();
  std::vector<std::size_t> todo;
  std::size_t total = 0;
  for (std::size_t i = 0; i < plan.size(); ++i)
    if (!rows.count(i) && total++ % static_cast<std::size_t>(ranks) == static_cast<std::size_t>(rank))
      todo.push_back(i);
  const auto scratch = std::filesystem::temp_directory_path() / ("kernbench_bench_" + std::to_string(::getpid()));
  std::filesystem::create_directories(scratch);
  const interrupt::RemovedOnInterrupt scratch_removed(scratch.string());
  const bool progress = rank == 0 && ::isatty(STDERR_FILENO) != 0;
  const auto t0 = std::chrono::steady_clock::now();
  std::size_t done = 0, next = 0;
  int ranks_running = ranks - 1;  // (rank 0) other ranks not yet finished
  std::map<pid_t, Running> running;
  std::string failure;
  auto record = [&](const Json& row) {
    rows[row["point"].get<std::size_t>()] = row;
    save();
    ++done;
    if (progress) {
      const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      const double eta = elapsed / static_cast<double>(done) * static_cast<double>(total - done);
      std::cerr << "\r\033[K[" << done << "/" << total << "] " << row["key"].get<std::string>() << " | elapsed "
                << clock_text(elapsed) << " | ETA " << clock_text(eta) << std::flush;
    }
  };
  auto take_message = [&](const std::string& text) {  // rank 0: a row, or a rank's end
    const Json m = Json::parse(text);
    if (m.contains("row")) record(m["row"]);
    else {
      --ranks_running;
      if (m.contains("failure") && failure.empty()) failure = m["failure"].get<std::string>();
    }
  };
  const bool gathering = rank == 0 && ranks > 1;
  while ((next < todo.size() && failure.empty()) || !running.empty() || (gathering && ranks_running > 0)) {
    while (next < todo.size() && failure.empty() && running.size() < jobs) {
      const std::size_t i = todo[next++];
      const std::string stem = (scratch / std::to_string(i)).string();
      Running r{i, stem + ".json", stem + ".log", std::chrono::steady_clock::now(),
                std::make_shared<interrupt::RemovedOnInterrupt>(stem + ".json"),
                std::make_shared<interrupt::RemovedOnInterrupt>(stem + ".log")};
      std::vector<std::string> a = plan[i].args(topology_file);
      a.insert(a.end(), {"--json", r.json});
      running.emplace(spawn_self(a, r.log), r);
    }
    if (gathering)
      while (auto m = world.poll()) take_message(m->second);
    int status = 0;
    const pid_t pid = running.empty() ? 0 : reap(status, !gathering);
    if (pid == 0) {
      if (running.empty() && gathering && ranks_running > 0) take_message(world.receive().second);
      else std::this_thread::sleep_for(std::chrono::milliseconds(20));
      continue;
    }
    if (pid < 0) break;
    const auto it = running.find(pid);
    if (it == running.end()) continue;
    const Running r = it->second;
    running.erase(it);
    const Point& pt = plan[r.point];
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
      failure = "bench: point '" + pt.key() + "' failed (" + command_text(pt.args(topology_file)) + "):\n" +
                log_tail(r.log);
      continue;
    }
    Json result;
    {
      std::ifstream in(r.json);
      // Read through the result schema: a point's row is its run's Result.
      result = workloads::Result::from_json(nlohmann::json::parse(in)).to_json();
    }
    std::filesystem::remove(r.json);
    std::filesystem::remove(r.log);
    Json row = {{"point", r.point}, {"key", pt.key()}, {"panel", pt.panel},
                {"headline", pt.panel != "decode" || (pt.cubes == 8 && pt.pes == 8)}, {"git_revision", revision}};
    if (result.contains("utilisation")) result["utilisation"].erase("cubes");  // per SIP is enough for a sweep
    for (const auto& [k, v] : result.items()) row[k] = v;
    // Rows name the topology as the repository does, not by where this checkout lives.
    const std::string source_dir = std::string(KERNBENCH_SOURCE_DIR) + "/";
    if (std::string file = row["topology"].value("file", ""); file.starts_with(source_dir))
      row["topology"]["file"] = file.substr(source_dir.size());
    const double total_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - r.started).count();
    row["wall"]["total_seconds"] = total_s;
    const double sim = row["wall"].value("simulation_seconds", 0.0);
    row["wall"]["transactions_per_second"] = sim > 0 ? row["wall"].value("transactions", 0.0) / sim : 0.0;
    if (rank == 0) record(row);
    else world.send(0, Json{{"row", row}}.dump());
  }
  if (progress) std::cerr << "\n";
  std::filesystem::remove_all(scratch);
  if (rank != 0) {  // this rank's points are all with rank 0
    world.send(0, failure.empty() ? Json{{"done", true}}.dump() : Json{{"failure", failure}}.dump());
    return failure.empty() ? 0 : 1;
  }
  if (!failure.empty())
    throw std::runtime_error(failure + (rows.empty() ? "no point finished; nothing was written"
                                                     : "the rows finished so far are in " + out_file));
  save();
  const gqa::SpTable table = sp_table(rows);
  write_file_atomically(table_file, table.to_json().dump(1) + "\n");
  std::cout << "kernbench bench " << kBench << ": " << rows.size() << " of " << plan.size() << " points in " << out_file
            << " and " << csv_file << "; SP table " << table_file << "\n";
  return 0;
}

}  // namespace kb::cli
