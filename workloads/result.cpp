#include "workloads/result.h"

#include <algorithm>
#include <cstdio>
#include <stdexcept>

namespace kb::workloads {

using Json = nlohmann::json;

namespace {

const char* merge_name(Merge m) {
  switch (m) {
    case Merge::Same: return "same";
    case Merge::Sum: return "sum";
    case Merge::Max: return "max";
    case Merge::Widen: return "widen";
    case Merge::Derived: return "derived";
  }
  return "same";
}

Merge merge_of(const std::string& name) {
  for (const Merge m : {Merge::Same, Merge::Sum, Merge::Max, Merge::Widen, Merge::Derived})
    if (name == merge_name(m)) return m;
  throw std::invalid_argument("unknown merge rule '" + name + "'");
}

// "ring.bytes" as a JSON pointer.
Json::json_pointer pointer(const std::string& dotted) {
  std::string p = "/" + dotted;
  std::replace(p.begin(), p.end(), '.', '/');
  return Json::json_pointer(p);
}

Json sum(const Json& a, const Json& b) {
  if (a.is_number_unsigned() && b.is_number_unsigned()) return a.get<std::uint64_t>() + b.get<std::uint64_t>();
  return a.get<double>() + b.get<double>();
}

Json widen(const Json& a, const Json& b) {
  if (a.at("end") == 0) return b;
  if (b.at("end") == 0) return a;
  return {{"begin", std::min(a.at("begin").get<std::uint64_t>(), b.at("begin").get<std::uint64_t>())},
          {"end", std::max(a.at("end").get<std::uint64_t>(), b.at("end").get<std::uint64_t>())}};
}

// Rows of another part added in: a place both parts ran (the groups of one SIP split
// between them) adds up, as one process counts it.
void add_rows(std::vector<UseRow>& into, const std::vector<UseRow>& from) {
  for (const UseRow& row : from) {
    const auto it = std::find_if(into.begin(), into.end(), [&](const UseRow& r) { return r.where == row.where; });
    if (it == into.end()) {
      into.push_back(row);
      continue;
    }
    it->pes += row.pes;
    for (const auto& [engine, e] : row.engines) {
      EngineUse& sum = it->engines[engine];
      sum.ops += e.ops;
      sum.busy_cycles += e.busy_cycles;
      sum.bytes += e.bytes;
      sum.flops += e.flops;
    }
  }
}

// In the order one process lists them: SIP by SIP, cube by cube ("sip1.cube10" after "sip1.cube2").
void sort_rows(std::vector<UseRow>& rows) {
  auto key = [](const UseRow& r) {
    unsigned sip = 0, cube = 0;
    std::sscanf(r.where.c_str(), "sip%u.cube%u", &sip, &cube);
    return std::pair{sip, cube};
  };
  std::stable_sort(rows.begin(), rows.end(), [&](const UseRow& a, const UseRow& b) { return key(a) < key(b); });
}

Json use_rows_json(const std::vector<UseRow>& rows, std::uint64_t cycles) {
  Json out = Json::array();
  for (const UseRow& row : rows) {
    Json engines = Json::object();
    for (const auto& [engine, e] : row.engines)
      engines[engine] = {{"ops", e.ops},
                         {"busy_cycles", e.busy_cycles},
                         {"busy", cycles && row.pes ? static_cast<double>(e.busy_cycles) /
                                                          (static_cast<double>(cycles) * row.pes)
                                                    : 0.0},
                         {"bytes", e.bytes},
                         {"flops", e.flops}};
    out.push_back({{"where", row.where}, {"pes", row.pes}, {"engines", engines}});
  }
  return out;
}

std::vector<UseRow> use_rows_of(const Json& rows) {
  std::vector<UseRow> out;
  for (const auto& r : rows) {
    UseRow row{r.at("where"), r.at("pes"), {}};
    for (const auto& [name, e] : r.at("engines").items())
      row.engines[name] = {e.at("ops"), e.at("busy_cycles"), e.at("bytes"), e.at("flops")};
    out.push_back(std::move(row));
  }
  return out;
}

// A direction is simulated where its sender is: parts of a split run hold different ones.
void add_links(std::vector<LinkUse>& into, const std::vector<LinkUse>& from) {
  for (const LinkUse& l : from) {
    const auto it = std::find_if(into.begin(), into.end(), [&](const LinkUse& k) { return k.name == l.name; });
    if (it == into.end()) {
      into.push_back(l);
      continue;
    }
    it->messages += l.messages;
    it->bytes += l.bytes;
    it->busy_cycles += l.busy_cycles;
  }
}

Json link_rows_json(const std::vector<LinkUse>& links, std::uint64_t cycles) {
  Json out = Json::array();
  for (const LinkUse& l : links)
    out.push_back({{"link", l.name},
                   {"messages", l.messages},
                   {"bytes", l.bytes},
                   {"busy_cycles", l.busy_cycles},
                   {"busy", cycles ? static_cast<double>(l.busy_cycles) / static_cast<double>(cycles) : 0.0}});
  return out;
}

std::vector<LinkUse> link_rows_of(const Json& rows) {
  std::vector<LinkUse> out;
  for (const auto& r : rows) out.push_back({r.at("link"), r.at("messages"), r.at("bytes"), r.at("busy_cycles")});
  return out;
}

Json counts_json(const ActCounts& c) {
  Json out = Json::object();
  for (std::size_t a = 0; a < kActs; ++a) out[act_name(a)] = c[a];
  return out;
}

ActCounts counts_of(const Json& j) {
  ActCounts c{};
  for (std::size_t a = 0; a < kActs; ++a) c[a] = j.at(act_name(a)).get<std::uint64_t>();
  return c;
}

Json activity_json(const std::vector<SipActivity>& activity, bool windows) {
  Json out = Json::array();
  for (const SipActivity& a : activity) {
    Json row = {{"sip", a.sip.value}, {"counts", counts_json(a.totals)}};
    if (windows) {
      row["window_cycles"] = a.window_cycles;
      row["windows"] = Json::array();
      for (const ActCounts& w : a.windows) row["windows"].push_back(w);
    }
    out.push_back(std::move(row));
  }
  return out;
}

std::vector<SipActivity> activity_of_json(const Json& rows) {
  std::vector<SipActivity> out;
  for (const Json& r : rows) {
    SipActivity a{SipId(r.at("sip").get<std::uint32_t>()),
                  counts_of(r.at("counts")),
                  r.value("window_cycles", 0ull),
                  {}};
    for (const Json& w : r.value("windows", Json::array())) a.windows.push_back(w.get<ActCounts>());
    out.push_back(std::move(a));
  }
  return out;
}

Json energy_json(const Energy& e) {
  Json by_cause = Json::object();
  for (std::size_t c = 0; c < kEnergyCauses; ++c) by_cause[kEnergyCauseNames[c]] = e.by_cause[c];
  return {{"total_joules", e.total_joules},
          {"by_cause", by_cause},
          {"seconds", e.seconds},
          {"average_watts", e.watts()}};
}

Energy energy_of_json(const Json& j) {
  Energy e;
  e.total_joules = j.at("total_joules");
  e.seconds = j.at("seconds");
  for (std::size_t c = 0; c < kEnergyCauses; ++c)
    e.by_cause[c] = j.at("by_cause").at(kEnergyCauseNames[c]);
  return e;
}

}  // namespace

std::string devices_text(const std::vector<SipId>& devices) {
  std::string out;
  for (const SipId d : devices) {
    if (!out.empty()) out += ',';
    out += std::to_string(d.value);
  }
  return out;
}

Result Result::of(std::string workload, std::vector<SipId> devices, std::uint64_t cycles, const Topology& topo) {
  Result r;
  r.workload = std::move(workload);
  r.devices = std::move(devices);
  r.simulated_cycles = cycles;
  r.simulated_seconds = static_cast<double>(cycles) / topo.pe.clock_hz;
  const auto sips = static_cast<double>(r.devices.size());
  r.machine = {sips * topo.gemm_flops_per_second_per_sip(), sips * topo.hbm_bytes_per_second_per_sip()};
  return r;
}

void Result::add(std::string name, Json value, Merge merge) {
  for (Figure& f : figures)
    if (f.name == name) {
      f.value = std::move(value);
      f.merge = merge;
      return;
    }
  figures.push_back({std::move(name), std::move(value), merge});
}

bool Result::has(const std::string& name) const {
  return std::any_of(figures.begin(), figures.end(), [&](const Figure& f) { return f.name == name; });
}

const Json& Result::figure(const std::string& name) const {
  for (const Figure& f : figures)
    if (f.name == name) return f.value;
  throw std::out_of_range(workload + " result has no figure '" + name + "'");
}

Json Result::to_json(bool windows) const {
  Json j = {{"kernel", workload}, {"topology", {{"file", topology_file}, {"name", topology_name}}}, {"knobs", knobs}};
  if (!mode.empty()) j["mode"] = mode;
  j["devices"] = Json::array();
  for (const SipId d : devices) j["devices"].push_back(d.value);
  j["machine"] = {{"peak_flops_per_second", machine.peak_flops_per_second},
                  {"hbm_bytes_per_second", machine.hbm_bytes_per_second}};
  if (partial) {
    j["partial"] = true;
    j["stopped"] = stopped;
    j["cycles_reached"] = cycles_reached;
  } else {
    j["simulated_cycles"] = simulated_cycles;
    j["simulated_seconds"] = simulated_seconds;
  }
  if (energy)
    j["energy"] =
        energy_json(*energy);  // before the figures: a workload's energy.* figures join it
  Json rules = Json::object();
  for (const Figure& f : figures) {
    j[pointer(f.name)] = f.value;
    rules[f.name] = merge_name(f.merge);
  }
  j["merge_rules"] = rules;
  if (!critical_path.cycles.empty()) {
    j["critical_path"] = Json::object();
    for (const auto& [cause, cycles] : critical_path.cycles) j["critical_path"][cause] = cycles;
    if (critical_path.end) j["critical_path_end"] = critical_path.end->str();
  }
  if (numerics)
    j["numerics"] = {{"max_abs_error", numerics->error}, {"naive_error", numerics->naive_error},
                     {"tolerance", numerics->tolerance}, {"pass", numerics->pass}, {"enforced", numerics->enforced}};
  if (use) {
    j["utilisation"] = {{"cycles", use->cycles},
                        {"sips", use_rows_json(use->sips, use->cycles)},
                        {"cubes", use_rows_json(use->cubes, use->cycles)}};
    if (!use->links.empty()) j["utilisation"]["links"] = link_rows_json(use->links, use->cycles);
  }
  if (!activity.empty()) j["activity"] = activity_json(activity, windows);
  j["wall"] = {{"elaboration_seconds", wall.elaboration_seconds}, {"simulation_seconds", wall.simulation_seconds},
               {"peak_rss_kib", wall.peak_rss_kib}, {"transactions", wall.transactions}};
  return j;
}

Result Result::from_json(const Json& j) {
  Result r;
  r.workload = j.at("kernel");
  r.topology_file = j.at("topology").at("file");
  r.topology_name = j.at("topology").at("name");
  r.knobs = j.at("knobs");
  r.mode = j.value("mode", "");
  for (const auto& d : j.at("devices")) r.devices.emplace_back(d.get<std::uint32_t>());
  if (j.contains("machine"))
    r.machine = {j["machine"].at("peak_flops_per_second"), j["machine"].at("hbm_bytes_per_second")};
  r.partial = j.value("partial", false);
  if (r.partial) {
    r.stopped = j.at("stopped");
    r.cycles_reached = j.at("cycles_reached");
  } else {
    r.simulated_cycles = j.at("simulated_cycles");
    r.simulated_seconds = j.at("simulated_seconds");
  }
  for (const auto& [name, rule] : j.at("merge_rules").items())
    r.figures.push_back({name, j.at(pointer(name)), merge_of(rule.get<std::string>())});
  if (j.contains("critical_path")) {
    for (std::size_t c = 0; c < kCauses; ++c)  // largest first, ties in cause order
      if (const char* name = cause_name(static_cast<Cause>(c)); j["critical_path"].contains(name))
        r.critical_path.cycles.emplace_back(name, j["critical_path"][name].get<std::uint64_t>());
    std::stable_sort(r.critical_path.cycles.begin(), r.critical_path.cycles.end(),
                     [](const auto& a, const auto& b) { return a.second > b.second; });
    if (j.contains("critical_path_end")) r.critical_path.end = PeCoord::parse(j["critical_path_end"]);
  }
  if (j.contains("numerics")) {
    const Json& n = j["numerics"];
    r.numerics = Numerics{n.at("max_abs_error"), n.at("naive_error"), n.at("tolerance"), n.at("pass"),
                          n.at("enforced")};
  }
  if (j.contains("utilisation")) {
    const Json& u = j["utilisation"];
    r.use = Utilisation{u.at("cycles"), use_rows_of(u.at("sips")), use_rows_of(u.value("cubes", Json::array())),
                        link_rows_of(u.value("links", Json::array()))};
  }
  if (j.contains("energy")) r.energy = energy_of_json(j["energy"]);
  if (j.contains("activity")) r.activity = activity_of_json(j["activity"]);
  const Json& w = j.at("wall");
  r.wall = {w.at("elaboration_seconds"), w.at("simulation_seconds"), w.at("peak_rss_kib"), w.at("transactions")};
  return r;
}

Result Result::merge(const std::vector<Result>& parts) {
  if (parts.empty()) throw std::invalid_argument("a merge needs at least one part");
  Result m = parts.front();
  m.figures.clear();
  m.wall = {};
  m.energy.reset();  // priced again from the merged activity
  std::vector<std::vector<SipActivity>> activity;
  if (m.use) m.use = Utilisation{};
  for (const Result& p : parts) {
    // The slowest part's path; of parts as slow, the one ending on the first PE (as one
    // process picks among its programs).
    if (p.simulated_cycles > m.simulated_cycles ||
        (p.simulated_cycles == m.simulated_cycles && p.critical_path.end && m.critical_path.end &&
         *p.critical_path.end < *m.critical_path.end))
      m.critical_path = p.critical_path;
    m.simulated_cycles = std::max(m.simulated_cycles, p.simulated_cycles);
    m.simulated_seconds = std::max(m.simulated_seconds, p.simulated_seconds);
    for (const Figure& f : p.figures) {
      if (f.merge == Merge::Derived) continue;
      const auto it = std::find_if(m.figures.begin(), m.figures.end(), [&](const Figure& g) { return g.name == f.name; });
      if (it == m.figures.end()) {
        m.figures.push_back(f);
        continue;
      }
      Json& v = it->value;
      if (f.merge == Merge::Sum) v = sum(v, f.value);
      else if (f.merge == Merge::Max) v = std::max(v, f.value);
      else if (f.merge == Merge::Widen) v = widen(v, f.value);
    }
    m.wall.elaboration_seconds = std::max(m.wall.elaboration_seconds, p.wall.elaboration_seconds);
    m.wall.peak_rss_kib = std::max(m.wall.peak_rss_kib, p.wall.peak_rss_kib);
    m.wall.transactions += p.wall.transactions;
    activity.push_back(p.activity);
    if (m.use && p.use) {
      add_rows(m.use->sips, p.use->sips);
      add_rows(m.use->cubes, p.use->cubes);
      add_links(m.use->links, p.use->links);
    }
  }
  m.activity = merge_activity(activity);
  if (m.use) {
    m.use->cycles = m.simulated_cycles;
    sort_rows(m.use->sips);
    sort_rows(m.use->cubes);
    sort_links(m.use->links);
  }
  return m;
}

}  // namespace kb::workloads
