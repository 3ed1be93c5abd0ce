#include "sc_main/sweep.h"

#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>
#include <set>
#include <thread>

#include <boost/program_options.hpp>

#include "base/interrupt.h"
#include "base/output_file.h"
#include "sc_main/errors.h"
#include "sc_main/processes.h"
#include "sc_main/world.h"
#include "workloads/result.h"

namespace kb::cli {
namespace po = boost::program_options;
using Json = nlohmann::ordered_json;

namespace {

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

std::string clock_text(double seconds) {
  const auto s = static_cast<long>(seconds + 0.5);
  char buf[32];
  std::snprintf(buf, sizeof buf, "%ld:%02ld", s / 60, s % 60);
  return buf;
}

// A point's run as the rows record it: its result through the one result schema, the
// topology named as the repository does (not by where this checkout lives), and the
// process's own wall time.
Json result_of(const std::string& json_file, double total_seconds) {
  std::ifstream in(json_file);
  Json r = workloads::Result::from_json(nlohmann::json::parse(in)).to_json();
  if (r.contains("utilisation")) r["utilisation"].erase("cubes");  // per SIP is enough for a sweep
  const std::string source_dir = std::string(KERNBENCH_SOURCE_DIR) + "/";
  if (std::string file = r["topology"].value("file", ""); file.starts_with(source_dir))
    r["topology"]["file"] = file.substr(source_dir.size());
  r["wall"]["total_seconds"] = total_seconds;
  const double sim = r["wall"].value("simulation_seconds", 0.0);
  r["wall"]["transactions_per_second"] = sim > 0 ? r["wall"].value("transactions", 0.0) / sim : 0.0;
  return r;
}

struct Running {
  std::size_t point;
  std::string json, log;
  std::chrono::steady_clock::time_point started;
  std::shared_ptr<interrupt::RemovedOnInterrupt> json_removed, log_removed;
};

}  // namespace

std::map<std::size_t, Json> run_sweep(const SweepSpec& spec, const SweepOutput& out) {
  const std::vector<SweepPoint>& plan = spec.points;
  const std::string csv_file = out.json.substr(0, out.json.size() - 5) + ".csv";
  const std::string revision = git_revision();
  std::vector<std::string> commands;
  for (const SweepPoint& p : plan) commands.push_back(command_text(p.args));
  std::map<std::size_t, Json> rows;  // by point index, so the files do not depend on --jobs
  if (out.resume && std::filesystem::exists(out.json)) {
    std::ifstream in(out.json);
    Json previous;
    try {
      previous = Json::parse(in);
    } catch (const Json::exception& e) {
      throw InputError("--resume: " + out.json + " is not a sweep file: " + e.what());
    }
    if (previous.value("sweep", "") != spec.name)
      throw InputError("--resume: " + out.json + " holds another sweep ('" + previous.value("sweep", "?") +
                       "', not '" + spec.name + "')");
    // A finished row counts for the point that runs the same command.
    std::map<std::string, std::size_t> index;
    for (std::size_t i = 0; i < plan.size(); ++i) index[commands[i]] = i;
    for (Json row : previous["rows"])
      if (const auto it = index.find(row.value("command", "")); it != index.end()) {
        row["point"] = it->second;
        rows[it->second] = row;
      }
  }
  auto save = [&] {
    Json doc = {{"sweep", spec.name}, {"spec", spec.file}, {"points", plan.size()}, {"rows", Json::array()}};
    for (const auto& [i, row] : rows) doc["rows"].push_back(row);
    write_file_atomically(out.json, doc.dump(1) + "\n");
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
  const auto scratch = std::filesystem::temp_directory_path() / ("kernbench_sweep_" + std::to_string(::getpid()));
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
    while (next < todo.size() && failure.empty() && running.size() < out.jobs) {
      const std::size_t i = todo[next++];
      const std::string stem = (scratch / std::to_string(i)).string();
      Running r{i, stem + ".json", stem + ".log", std::chrono::steady_clock::now(),
                std::make_shared<interrupt::RemovedOnInterrupt>(stem + ".json"),
                std::make_shared<interrupt::RemovedOnInterrupt>(stem + ".log")};
      std::vector<std::string> a = plan[i].args;
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
    const SweepPoint& pt = plan[r.point];
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
      failure = "sweep " + spec.name + ": point '" + pt.key() + "' failed (" + commands[r.point] + "):\n" +
                log_tail(r.log);
      continue;
    }
    const double total_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - r.started).count();
    Json row = {{"point", r.point},   {"part", pt.part},       {"key", pt.key()},
                {"values", pt.values}, {"numbers", pt.numbers}, {"command", commands[r.point]},
                {"git_revision", revision}, {"result", result_of(r.json, total_s)}};
    std::filesystem::remove(r.json);
    std::filesystem::remove(r.log);
    if (rank == 0) record(row);
    else world.send(0, Json{{"row", row}}.dump());
  }
  if (progress) std::cerr << "\n";
  std::filesystem::remove_all(scratch);
  if (rank != 0) {  // this rank's points are all with rank 0
    world.send(0, failure.empty() ? Json{{"done", true}}.dump() : Json{{"failure", failure}}.dump());
    if (!failure.empty()) throw std::runtime_error(failure);
    return {};
  }
  if (!failure.empty())
    throw std::runtime_error(failure + (rows.empty() ? "no point finished; nothing was written"
                                                     : "the rows finished so far are in " + out.json));
  save();
  return rows;
}

namespace {

// `kernbench sweep --report DIR`: the analysis script over DIR/sweep.json.
int report(const std::string& dir) {
  // Debian's own Python, where python3-matplotlib installs.
  const std::string script = std::string(KERNBENCH_SOURCE_DIR) + "/scripts/sweep_report.py";
  if (!std::filesystem::exists(std::filesystem::path(dir) / "sweep.json"))
    throw InputError("--report " + dir + ": no sweep.json there (kernbench sweep SPEC --out " + dir + " writes it)");
  const pid_t pid = fork();
  if (pid == 0) {
    execl("/usr/bin/python3", "python3", script.c_str(), dir.c_str(), static_cast<char*>(nullptr));
    std::perror("kernbench: cannot start /usr/bin/python3 for --report");
    _exit(127);
  }
  int status = 0;
  waitpid(pid, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 1;
}

}  // namespace

po::variables_map parse_sweep_command(const std::vector<std::string>& args, const po::options_description& opts,
                                     std::string& positional) {
  po::options_description hidden;
  hidden.add_options()("positional", po::value(&positional));
  po::options_description all;
  all.add(opts).add(hidden);
  po::positional_options_description pos;
  pos.add("positional", 1);
  po::variables_map vm;
  po::store(po::command_line_parser(args).options(all).positional(pos).run(), vm);
  po::notify(vm);
  return vm;
}

std::size_t jobs_of(const std::string& text) {
  const auto jobs = std::strtoul(text.c_str(), nullptr, 10);
  if (text.find_first_not_of("0123456789") != std::string::npos || jobs < 1 || jobs > 256)
    throw UsageError("--jobs '" + text + "': expected a whole number from 1 to 256");
  return jobs;
}

int cmd_sweep(const std::vector<std::string>& args) {
  std::string spec_file, out_dir, report_dir, jobs_text;
  bool resume = false, list = false;
  po::options_description opts("kernbench sweep options");
  opts.add_options()
      ("help,h", "show this help")
      ("out", po::value(&out_dir), "the folder for sweep.json and sweep.csv (made if missing)")
      ("jobs", po::value(&jobs_text)->default_value("1"), "points run at the same time, each in its own process")
      ("resume", po::bool_switch(&resume), "keep the rows of DIR/sweep.json and run only the points it lacks")
      ("list", po::bool_switch(&list), "validate the spec and print its points' commands; run nothing")
      ("report", po::value(&report_dir), "analyse the finished sweep in DIR: elasticities, roofline and line plots");
  const po::variables_map vm = parse_sweep_command(args, opts, spec_file);
  const char* usage = "usage: kernbench sweep SPEC.yaml --out DIR [--jobs N] [--resume]\n"
                      "       kernbench sweep SPEC.yaml --list\n"
                      "       kernbench sweep --report DIR\n";
  if (vm.count("help")) {
    std::cout << usage << opts;
    return 0;
  }
  if (!report_dir.empty()) {
    if (!spec_file.empty() || !out_dir.empty() || resume)
      throw UsageError("sweep --report DIR analyses a finished sweep; it takes no spec, --out or --resume");
    return report(report_dir);
  }
  if (spec_file.empty()) throw UsageError("sweep: missing the SPEC.yaml to run");
  if (list) {
    const SweepSpec spec = SweepSpec::load(spec_file);
    for (std::size_t i = 0; i < spec.points.size(); ++i)
      std::cout << i << "\t" << spec.points[i].key() << "\t" << command_text(spec.points[i].args) << "\n";
    return 0;
  }
  if (out_dir.empty()) throw UsageError("sweep: missing --out DIR, the folder for the rows");
  const std::size_t jobs = jobs_of(jobs_text);
  const std::filesystem::path dir(out_dir), json = dir / "sweep.json";
  const bool writer = World::get().rank() == 0;  // under MPI, rank 0 alone writes the folder
  if (writer && std::filesystem::exists(dir) && !std::filesystem::is_directory(dir))
    throw InputError("--out " + out_dir + ": not a folder");
  if (writer && std::filesystem::exists(json) && !resume)
    throw InputError("--out " + out_dir + ": it holds a sweep already (sweep.json); --resume continues it, or choose "
                     "another folder");
  const SweepSpec spec = SweepSpec::load(spec_file);  // the whole spec, before anything is written
  if (writer) {
    std::error_code made;
    std::filesystem::create_directories(dir, made);
    if (made || ::access(dir.c_str(), W_OK) != 0)
      throw InputError("--out " + out_dir + ": cannot make or write the folder" + (made ? ": " + made.message() : ""));
  }
  const auto rows = run_sweep(spec, {json.string(), jobs, resume});
  if (writer)
    std::cout << "kernbench sweep " << spec.name << ": " << rows.size() << " of " << spec.points.size()
              << " points in " << json.string() << " and " << (dir / "sweep.csv").string() << "\n";
  return 0;
}

}  // namespace kb::cli
