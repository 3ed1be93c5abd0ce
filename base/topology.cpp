#include "base/topology.h"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <set>
#include <sstream>

#include <yaml-cpp/yaml.h>

#include "base/sip_graph.h"
#include "base/units.h"

namespace kb {
namespace {

// The models run at SystemC's default time resolution; a clock period below it cannot be
// represented.
constexpr double kTimeResolutionSeconds = 1e-12;

// Collects every error of one parse, with where each value came from.
struct ParseContext {
  std::string file;
  std::vector<std::string> errors;
  std::map<std::string, std::string> set_origin;  // key path -> the --set that wrote it
};

std::string describe(const YAML::Node& n) {
  if (!n.IsDefined() || n.IsNull()) return "an empty value";
  if (n.IsScalar()) return "'" + n.Scalar() + "'";
  if (n.IsMap()) return "a map";
  return "a list";
}

// Reads one YAML map against the schema the parser asks for, so the keys asked are the
// valid keys and anything else is reported as unknown.
class MapReader {
 public:
  // `missing`: the map itself was absent (already reported); its keys then read as absent.
  MapReader(ParseContext& ctx, YAML::Node node, std::string path, bool missing = false)
      : ctx_(ctx), node_(std::move(node)), path_(std::move(path)), missing_(missing) {
    if (!missing_ && !node_.IsMap()) {
      error(node_, path_, "expected a map of keys, got " + describe(node_));
      valid_ = false;
    }
  }

  std::uint64_t count(const std::string& key, std::uint64_t lo, std::uint64_t hi) {
    return number(key, lo, hi, units::parse_count, "a whole number", "");
  }
  std::uint64_t bytes(const std::string& key, std::uint64_t lo, std::uint64_t hi) {
    return number(key, lo, hi, units::parse_bytes, "a size in bytes", "2KiB, 1MiB or 4096");
  }
  std::uint64_t bandwidth(const std::string& key, std::uint64_t lo, std::uint64_t hi) {
    return number(key, lo, hi, units::parse_bytes_per_cycle, "bytes per cycle", "64B/cycle");
  }
  std::uint64_t cycles(const std::string& key, std::uint64_t lo, std::uint64_t hi) {
    return number(key, lo, hi, units::parse_cycles, "a whole number of cycles", "120cycles");
  }
  double hertz(const std::string& key, double lo, double hi) {
    const YAML::Node n = take(key);
    if (!n) return 0;
    const auto v = n.IsScalar() ? units::parse_hertz(n.Scalar()) : std::nullopt;
    if (!v || *v < lo || *v > hi) {
      error(n, join(key),
            "value " + describe(n) + " is not allowed; allowed: a frequency from " +
                units::format_hertz(lo) + " to " + units::format_hertz(hi) + ", e.g. 1GHz");
      return 0;
    }
    return *v;
  }
  // An energy or power: a non-negative decimal in `unit` with an SI prefix, in unit x
  // 10^scale (energy("read", "J/B", -12): picojoules a byte).
  double quantity(const std::string& key, const std::string& unit, int scale,
                  const std::string& example) {
    const YAML::Node n = take(key);
    if (!n) return 0;
    const auto v = n.IsScalar() ? units::parse_quantity(n.Scalar(), unit, scale) : std::nullopt;
    if (!v) {
      error(n, join(key),
            "value " + describe(n) + " is not allowed; allowed: a non-negative number in " + unit +
                " with an SI prefix (f, p, n, u, m, k), e.g. " + example);
      return 0;
    }
    return *v;
  }
  std::string text(const std::string& key) {
    const YAML::Node n = take(key);
    if (!n) return {};
    if (!n.IsScalar()) {
      error(n, join(key), "expected text, got " + describe(n));
      return {};
    }
    return n.Scalar();
  }
  MapReader map(const std::string& key) {
    const YAML::Node n = take(key);
    return MapReader(ctx_, n ? n : YAML::Node(YAML::NodeType::Map), join(key), !n);
  }
  // An optional key's value, or an undefined node (asked either way: a valid key here).
  YAML::Node optional(const std::string& key) {
    if (asked_.insert(key).second) asked_order_.push_back(key);
    if (!valid_ || missing_) return YAML::Node(YAML::NodeType::Undefined);
    const YAML::Node n = node_[key];
    return n ? n : YAML::Node(YAML::NodeType::Undefined);
  }
  // A list of whole numbers, each from lo to hi.
  std::vector<std::uint64_t> counts(const std::string& key, std::uint64_t lo, std::uint64_t hi, const std::string& what) {
    std::vector<std::uint64_t> out;
    const YAML::Node n = take(key);
    if (!n) return out;
    if (!n.IsSequence() || n.size() == 0) {
      error(n, join(key), "expected a list of " + what + ", got " + describe(n));
      return out;
    }
    for (const YAML::Node& item : n) {
      const auto v = item.IsScalar() ? units::parse_count(item.Scalar()) : std::nullopt;
      if (!v || *v < lo || *v > hi) {
        error(item, join(key), "value " + describe(item) + " is not allowed; allowed: " + what + " from " +
                                   std::to_string(lo) + " to " + std::to_string(hi));
        continue;
      }
      out.push_back(*v);
    }
    return out;
  }
  // A list of pairs [a, b] of different whole numbers, each from lo to hi.
  std::vector<std::pair<std::uint32_t, std::uint32_t>> pairs(const std::string& key, std::uint64_t lo, std::uint64_t hi,
                                                             const std::string& what) {
    std::vector<std::pair<std::uint32_t, std::uint32_t>> out;
    const YAML::Node n = take(key);
    if (!n) return out;
    if (!n.IsSequence() || n.size() == 0) {
      error(n, join(key), "expected a list of pairs [a, b] of " + what + ", got " + describe(n));
      return out;
    }
    for (const YAML::Node& item : n) {
      std::optional<std::uint64_t> a, b;
      if (item.IsSequence() && item.size() == 2 && item[0].IsScalar() && item[1].IsScalar()) {
        a = units::parse_count(item[0].Scalar());
        b = units::parse_count(item[1].Scalar());
      }
      if (!a || !b || *a < lo || *a > hi || *b < lo || *b > hi || *a == *b) {
        error(item, join(key), "value " + describe(item) + " is not allowed; allowed: a pair [a, b] of two different " +
                                   what + " from " + std::to_string(lo) + " to " + std::to_string(hi));
        continue;
      }
      out.emplace_back(static_cast<std::uint32_t>(*a), static_cast<std::uint32_t>(*b));
    }
    return out;
  }
  // A required scalar, for a caller that converts it itself (report() names it).
  YAML::Node scalar(const std::string& key) {
    const YAML::Node n = take(key);
    if (n && !n.IsScalar()) {
      error(n, join(key), "expected a value, got " + describe(n));
      return YAML::Node(YAML::NodeType::Undefined);
    }
    return n;
  }
  void report(const YAML::Node& n, const std::string& key, const std::string& what) { error(n, join(key), what); }

  // Reports keys present in the file that the schema did not ask for.
  void finish() {
    if (!valid_ || missing_) return;
    for (const auto& kv : node_) {
      const std::string key = kv.first.IsScalar() ? kv.first.Scalar() : describe(kv.first);
      if (asked_.count(key)) continue;
      std::string valid;
      for (const auto& k : asked_order_) valid += (valid.empty() ? "" : ", ") + k;
      error(kv.first, join(key), "unknown key '" + key + "'; valid keys here: " + valid);
    }
  }

 private:
  std::string join(const std::string& key) const { return path_.empty() ? key : path_ + "." + key; }

  std::string where(const YAML::Node& n, const std::string& path) const {
    const auto it = ctx_.set_origin.find(path);
    if (it != ctx_.set_origin.end()) return TopologyError::kOverride + it->second;
    const YAML::Mark m = n.IsDefined() ? n.Mark() : YAML::Mark::null_mark();
    if (m.is_null()) return ctx_.file;
    return ctx_.file + ":" + std::to_string(m.line + 1) + ":" + std::to_string(m.column + 1);
  }

  void error(const YAML::Node& n, const std::string& path, const std::string& what) {
    ctx_.errors.push_back(where(n, path) + ": " + (path.empty() ? "" : path + ": ") + what);
  }

  // Returns the value of a required key, or an undefined node after reporting it missing.
  YAML::Node take(const std::string& key) {
    if (asked_.insert(key).second) asked_order_.push_back(key);
    if (!valid_ || missing_) return YAML::Node(YAML::NodeType::Undefined);
    const YAML::Node n = node_[key];
    if (!n) {
      error(node_, join(key), "required key '" + key + "' is missing");
      return YAML::Node(YAML::NodeType::Undefined);
    }
    return n;
  }

  template <class Parse>
  std::uint64_t number(const std::string& key, std::uint64_t lo, std::uint64_t hi, Parse parse,
                       const std::string& form, const std::string& example) {
    const YAML::Node n = take(key);
    if (!n) return 0;
    const auto v = n.IsScalar() ? parse(n.Scalar()) : std::nullopt;
    if (!v || *v < lo || *v > hi) {
      error(n, join(key),
            "value " + describe(n) + " is not allowed; allowed: " + form + " from " +
                std::to_string(lo) + " to " + std::to_string(hi) +
                (example.empty() ? "" : " (e.g. " + example + ")"));
      return 0;
    }
    return *v;
  }

  ParseContext& ctx_;
  YAML::Node node_;
  std::string path_;
  bool missing_ = false;
  bool valid_ = true;
  std::set<std::string> asked_;
  std::vector<std::string> asked_order_;
};

LinkParams read_link(MapReader m, const char* bw_key, const char* lat_key) {
  LinkParams p;
  p.bytes_per_cycle = m.bandwidth(bw_key, 1, 1ull << 20);
  p.latency_cycles = m.cycles(lat_key, 1, 1000000);
  m.finish();
  return p;
}

// The `energy:` section (docs/energy.md).
Topology::EnergySpec read_energy(MapReader e) {
  Topology::EnergySpec s;
  auto per_byte = [](MapReader& m, const std::string& key) {
    return m.quantity(key, "J/B", -12, "3.9pJ/B");
  };
  auto read_write = [&](MapReader m, double& read, double& write) {
    read = per_byte(m, "read");
    write = per_byte(m, "write");
    m.finish();
  };
  read_write(e.map("hbm"), s.hbm_read, s.hbm_write);
  read_write(e.map("tcm"), s.tcm_read, s.tcm_write);
  s.fabric = per_byte(e, "fabric");
  s.noc = per_byte(e, "noc");
  s.link = per_byte(e, "link");
  s.gemm_mac = e.quantity("gemm", "J/MAC", -12, "0.5pJ/MAC");
  MapReader math = e.map("math");
  for (const auto& op : Topology::math_ops())
    s.math[op] = math.quantity(op, "J/op", -12, "0.2pJ/op");
  math.finish();
  s.cpu_op = e.quantity("cpu", "J/op", -12, "20pJ/op");
  MapReader power = e.map("static");
  s.static_pe = power.quantity("pe", "W", 0, "50mW");
  s.static_cube = power.quantity("cube", "W", 0, "1.5W");
  s.static_sip = power.quantity("sip", "W", 0, "10W");
  power.finish();
  e.finish();
  return s;
}

CostTable read_cost_table(MapReader m, const std::vector<std::string>& ops) {
  CostTable table;
  for (const auto& op : ops) table[op] = m.cycles(op, 1, 1000000);
  m.finish();
  return table;
}

// Applies one "a.b.c=value" override to the document tree; the path must exist.
void apply_set(ParseContext& ctx, YAML::Node& root, const std::string& set) {
  const auto eq = set.find('=');
  if (eq == std::string::npos || eq == 0) {
    ctx.errors.push_back(TopologyError::kOverride + set + ": expected key.path=value");
    return;
  }
  const std::string path = set.substr(0, eq);
  const std::string value = set.substr(eq + 1);
  std::vector<std::string> parts;
  std::stringstream ss(path);
  for (std::string part; std::getline(ss, part, '.');) parts.push_back(part);
  YAML::Node node = root;
  std::string walked;
  for (std::size_t i = 0; i < parts.size(); ++i) {
    // Optional keys absent from the file may be added; others must be there to replace.
    static const std::set<std::string> kOptional = {"system.links", "system.links.pairs"};
    const bool adds = i + 1 == parts.size() && node.IsMap() && kOptional.count(path) > 0;
    if (!node.IsMap() || parts[i].empty() || (!node[parts[i]] && !adds)) {
      std::string valid;
      if (node.IsMap())
        for (const auto& kv : node) valid += (valid.empty() ? "" : ", ") + kv.first.Scalar();
      ctx.errors.push_back(TopologyError::kOverride + set + ": no key '" + parts[i] + "'" +
                           (walked.empty() ? "" : " under '" + walked + "'") +
                           (valid.empty() ? "" : "; valid keys there: " + valid));
      return;
    }
    walked += (walked.empty() ? "" : ".") + parts[i];
    if (i + 1 == parts.size()) {
      YAML::Node parsed;
      try {
        parsed = YAML::Load(value);
      } catch (const YAML::Exception& e) {
        ctx.errors.push_back(TopologyError::kOverride + set + ": value is not valid YAML: " + e.msg);
        return;
      }
      node[parts[i]] = parsed;
      ctx.set_origin[path] = set;
    } else {
      node.reset(node[parts[i]]);
    }
  }
}

// system.links (docs/topology.md, Links). Its bandwidth and latency take the clock's units
// or the PE clock's cycles; `clock_hz` is 0 when the clock itself is bad (then they are
// left unconverted: that error is reported where the clock is).
void read_links(MapReader links, Topology& t, double clock_hz) {
  using Kind = Topology::SystemSpec::Links::Kind;
  auto& l = t.system.links;
  const YAML::Node kind = links.scalar("topology");
  const std::pair<const char*, Kind> kinds[] = {
      {"fully_connected", Kind::FullyConnected}, {"ring", Kind::Ring}, {"switch", Kind::Switch}, {"pairs", Kind::Pairs}};
  for (const auto& [name, k] : kinds)
    if (kind && kind.Scalar() == name) l.kind = k;
  if (kind && l.kind == Kind::None)
    links.report(kind, "topology", "value " + describe(kind) + " is not allowed; allowed: fully_connected, ring, switch, pairs");
  const YAML::Node bw = links.scalar("bandwidth"), lat = links.scalar("latency");
  if (bw && clock_hz > 0) {
    const auto per_cycle = units::parse_bytes_per_cycle(bw.Scalar());
    const auto per_second = units::parse_bytes_per_second(bw.Scalar());
    const double v = per_cycle ? static_cast<double>(*per_cycle) : per_second ? *per_second / clock_hz : 0;
    l.link.bytes_per_cycle = static_cast<std::uint64_t>(std::llround(v));
    if (l.link.bytes_per_cycle < 1 || l.link.bytes_per_cycle > (1ull << 20))
      links.report(bw, "bandwidth", "value " + describe(bw) + " is not allowed; allowed: each way, from 1 B to 1 MiB per "
                                    "cycle of pe.clock (e.g. 150GB/s or 150B/cycle)");
  }
  if (lat && clock_hz > 0) {
    const auto cycles = units::parse_cycles(lat.Scalar());
    const auto ps = units::parse_picoseconds(lat.Scalar());
    const double v = cycles ? static_cast<double>(*cycles) : ps ? static_cast<double>(*ps) * clock_hz / 1e12 : 0;
    l.link.latency_cycles = static_cast<std::uint64_t>(std::llround(v));
    if (l.link.latency_cycles < 1 || l.link.latency_cycles > 100000000)
      links.report(lat, "latency", "value " + describe(lat) + " is not allowed; allowed: from 1 to 100000000 cycles of "
                                   "pe.clock (e.g. 500ns or 500cycles)");
  }
  if (const YAML::Node p = links.optional("ports"); p && p.IsScalar() && p.Scalar() == "quarters") {
    links.scalar("ports");
    l.ports_by_quarters = true;
  } else {
    for (const std::uint64_t c : links.counts("ports", 0, 4095, "cube ids (or the word quarters)"))
      l.ports.push_back(static_cast<std::uint32_t>(c));
  }
  if (l.kind == Kind::Pairs) l.pairs = links.pairs("pairs", 0, 63, "SIP ids");
  else if (const YAML::Node p = links.optional("pairs"))
    links.report(p, "pairs", "a list of pairs is only for topology: pairs; this one is " + describe(kind));
  links.finish();
}

// What the links' values alone cannot say: the ports on cubes that exist, the pairs on
// SIPs that exist, every SIP reachable from every other.
void check_links(ParseContext& ctx, Topology& t, const YAML::Node& root) {
  auto& l = t.system.links;
  if (l.kind == Topology::SystemSpec::Links::Kind::None) return;
  if (l.ports_by_quarters) {
    // The cube of each quarter of the mesh nearest the mesh's centre; halves of an odd
    // side split it one to the first half's side, and a side of one cube has one half.
    const std::uint32_t w = t.sip.mesh_x, h = t.sip.mesh_y, hx = (w + 1) / 2, hy = (h + 1) / 2;
    for (const std::uint32_t y : {hy - 1, hy})
      for (const std::uint32_t x : {hx - 1, hx})
        if (x < w && y < h) l.ports.push_back(y * w + x);
  }
  const YAML::Node node = root["system"]["links"];
  auto where = [&](const char* key, std::size_t i) {
    const auto set = ctx.set_origin.find(std::string("system.links.") + key);
    if (set != ctx.set_origin.end()) return TopologyError::kOverride + set->second;
    const YAML::Node n = node[key] && node[key].IsSequence() && i < node[key].size() ? node[key][i] : node;
    return ctx.file + ":" + std::to_string(n.Mark().line + 1) + ":" + std::to_string(n.Mark().column + 1);
  };
  for (std::size_t i = 0; i < l.ports.size(); ++i)
    if (l.ports[i] >= t.cubes_per_sip())
      ctx.errors.push_back(where("ports", i) + ": system.links.ports: cube " + std::to_string(l.ports[i]) +
                           " does not exist; a SIP of this topology has cubes 0 to " + std::to_string(t.cubes_per_sip() - 1));
  for (std::size_t i = 0; i < l.ports.size(); ++i)
    for (std::size_t j = 0; j < i; ++j)
      if (l.ports[j] == l.ports[i])
        ctx.errors.push_back(where("ports", i) + ": system.links.ports: cube " + std::to_string(l.ports[i]) +
                             " is listed twice; a cube holds at most one port");
  for (std::size_t i = 0; i < l.pairs.size(); ++i) {
    for (const std::uint32_t s : {l.pairs[i].first, l.pairs[i].second})
      if (s >= t.system.sips)
        ctx.errors.push_back(where("pairs", i) + ": system.links.pairs: a link to SIP " + std::to_string(s) +
                             ", which the system lacks; it has SIPs 0 to " + std::to_string(t.system.sips - 1));
    for (std::size_t j = 0; j < i; ++j)
      if (std::minmax(l.pairs[j].first, l.pairs[j].second) == std::minmax(l.pairs[i].first, l.pairs[i].second))
        ctx.errors.push_back(where("pairs", i) + ": system.links.pairs: SIPs " + std::to_string(l.pairs[i].first) +
                             " and " + std::to_string(l.pairs[i].second) + " are joined twice; one link per pair");
  }
  if (!ctx.errors.empty()) return;
  const std::vector<std::uint32_t> cut_off = SipGraph(t).unreachable();
  if (!cut_off.empty()) {
    std::string list;
    for (const std::uint32_t s : cut_off) list += (list.empty() ? "" : ", ") + std::to_string(s);
    ctx.errors.push_back(where("pairs", ~std::size_t{0}) + ": system.links: SIP " + list +
                         (cut_off.size() > 1 ? " are" : " is") + " not reachable from SIP 0 over the links");
  }
}

Topology build(ParseContext& ctx, const YAML::Node& root) {
  Topology t;
  MapReader top(ctx, root, "");
  t.name = top.text("name");
  {
    MapReader sys = top.map("system");
    t.system.sips = static_cast<std::uint32_t>(sys.count("sips", 1, 64));
    if (sys.optional("links")) {
      // Read before pe.clock's own check; a bad clock is reported there.
      const YAML::Node clock = root["pe"] && root["pe"].IsMap() ? root["pe"]["clock"] : YAML::Node();
      const auto hz = clock && clock.IsScalar() ? units::parse_hertz(clock.Scalar()) : std::nullopt;
      read_links(sys.map("links"), t, hz && *hz >= 1e6 && *hz <= 1e11 ? *hz : 0);
    }
    sys.finish();
  }
  {
    MapReader sip = top.map("sip");
    MapReader mesh = sip.map("mesh");
    t.sip.mesh_x = static_cast<std::uint32_t>(mesh.count("x", 1, 16));
    t.sip.mesh_y = static_cast<std::uint32_t>(mesh.count("y", 1, 16));
    mesh.finish();
    t.sip.noc = read_link(sip.map("noc"), "link_bandwidth", "hop_latency");
    t.sip.job_queue = static_cast<std::uint32_t>(sip.count("job_queue", 1, 4096));
    sip.finish();
  }
  {
    MapReader cube = top.map("cube");
    t.cube.pes = static_cast<std::uint32_t>(cube.count("pes", 1, 64));
    t.cube.fabric = read_link(cube.map("fabric"), "bandwidth", "latency");
    MapReader hbm = cube.map("hbm");
    t.cube.hbm.bytes_per_cycle = hbm.bandwidth("bandwidth", 1, 1ull << 20);
    t.cube.hbm.latency_cycles = hbm.cycles("latency", 1, 1000000);
    t.cube.hbm.capacity = hbm.bytes("capacity", 1ull << 12, 1ull << 40);
    hbm.finish();
    cube.finish();
  }
  {
    MapReader pe = top.map("pe");
    t.pe.clock_hz = pe.hertz("clock", 1e6, 1e11);
    t.pe.tcm_bytes = pe.bytes("tcm", 1ull << 12, 1ull << 30);
    MapReader dma = pe.map("dma");
    t.pe.dma.burst_bytes = dma.bytes("burst", 16, 1ull << 20);
    t.pe.dma.outstanding = static_cast<std::uint32_t>(dma.count("outstanding", 1, 1024));
    dma.finish();
    MapReader gemm = pe.map("gemm");
    t.pe.gemm.rows = static_cast<std::uint32_t>(gemm.count("rows", 1, 4096));
    t.pe.gemm.cols = static_cast<std::uint32_t>(gemm.count("cols", 1, 4096));
    gemm.finish();
    MapReader math = pe.map("math");
    t.pe.math.lanes = static_cast<std::uint32_t>(math.count("lanes", 1, 65536));
    t.pe.math.cycles = read_cost_table(math.map("cycles"), Topology::math_ops());
    math.finish();
    MapReader cpu = pe.map("cpu");
    t.pe.cpu.issue_cycles = read_cost_table(cpu.map("issue_cycles"), Topology::cpu_ops());
    cpu.finish();
    pe.finish();
  }
  t.energy = read_energy(top.map("energy"));
  top.finish();

  if (ctx.errors.empty()) check_links(ctx, t, root);
  if (ctx.errors.empty()) {
    if (t.pe.dma.burst_bytes > t.pe.tcm_bytes)
      ctx.errors.push_back(ctx.file + ": pe.dma.burst (" + units::format_bytes(t.pe.dma.burst_bytes) +
                           ") must not exceed pe.tcm (" + units::format_bytes(t.pe.tcm_bytes) + ")");
    if (1.0 / t.pe.clock_hz < kTimeResolutionSeconds)
      ctx.errors.push_back(ctx.file + ": pe.clock " + units::format_hertz(t.pe.clock_hz) +
                           " has a period below the simulation time resolution");
  }
  return t;
}

Topology parse_root(ParseContext& ctx, const std::string& yaml_text, const std::vector<std::string>& sets) {
  YAML::Node root;
  try {
    root = YAML::Load(yaml_text);
  } catch (const YAML::ParserException& e) {
    throw TopologyError({ctx.file + ":" + std::to_string(e.mark.line + 1) + ":" +
                         std::to_string(e.mark.column + 1) + ": malformed YAML: " + e.msg});
  } catch (const YAML::Exception& e) {
    throw TopologyError({ctx.file + ": cannot read topology: " + e.msg});
  }
  if (!root.IsMap())
    throw TopologyError({ctx.file +
                         ": a topology must be a YAML map of keys (name, system, "
                         "sip, cube, pe, energy), got " +
                         describe(root)});
  for (const auto& s : sets) apply_set(ctx, root, s);
  if (!ctx.errors.empty()) throw TopologyError(ctx.errors);
  Topology t = build(ctx, root);
  if (!ctx.errors.empty()) throw TopologyError(ctx.errors);
  t.source = ctx.file;
  return t;
}

}  // namespace

const char* Topology::link_kind_name(SystemSpec::Links::Kind kind) {
  switch (kind) {
    case SystemSpec::Links::Kind::None: return "none";
    case SystemSpec::Links::Kind::FullyConnected: return "fully_connected";
    case SystemSpec::Links::Kind::Ring: return "ring";
    case SystemSpec::Links::Kind::Switch: return "switch";
    case SystemSpec::Links::Kind::Pairs: return "pairs";
  }
  return "none";
}

const std::vector<std::string>& Topology::math_ops() {
  static const std::vector<std::string> ops = {"add", "sub", "mul", "div", "max",
                                               "exp", "where", "copy", "fma", "rsqrt"};
  return ops;
}

std::uint64_t cost_of(const CostTable& table, std::string_view op) {
  const auto it = table.find(op);
  if (it == table.end()) throw std::out_of_range("no cost for op '" + std::string(op) + "'");
  return it->second;
}

std::uint64_t Topology::math_cycles(std::string_view op, std::uint64_t elements, std::uint32_t reduce_width) const {
  return math_cycles_at(cost_of(pe.math.cycles, op), elements, reduce_width);
}

std::uint64_t Topology::math_cycles_at(std::uint64_t op_cycles, std::uint64_t elements,
                                       std::uint32_t reduce_width) const {
  const std::uint64_t lanes = pe.math.lanes;
  std::uint64_t cycles = (elements + lanes - 1) / lanes * op_cycles;
  if (reduce_width > 0) {
    std::uint64_t depth = 0;
    while ((1ull << depth) < reduce_width) ++depth;
    const std::uint64_t rows = (elements + reduce_width - 1) / reduce_width;
    cycles += (rows + lanes - 1) / lanes * depth;
  }
  return cycles;
}

const std::vector<std::string>& Topology::cpu_ops() {
  static const std::vector<std::string> ops = {"load", "store", "ref",  "composite", "dot",
                                               "math", "reduce", "trans", "view", "send",
                                               "recv", "wait", "alloc", "sequence"};
  return ops;
}

Topology Topology::load(const std::string& path, const std::vector<std::string>& sets) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw TopologyError({path + ": cannot open topology file"});
  std::stringstream buf;
  buf << in.rdbuf();
  return parse(buf.str(), path, sets);
}

Topology Topology::parse(const std::string& yaml_text, const std::string& source_name,
                         const std::vector<std::string>& sets) {
  if (yaml_text.find('\0') != std::string::npos)
    throw TopologyError({source_name + ": not a text file (contains NUL bytes); expected YAML"});
  ParseContext ctx;
  ctx.file = source_name;
  return parse_root(ctx, yaml_text, sets);
}


double Topology::hbm_bytes_per_second_per_sip() const {
  return static_cast<double>(pes_per_sip()) * static_cast<double>(cube.hbm.bytes_per_cycle) *
         pe.clock_hz;
}

double Topology::static_watts_per_sip() const {
  return energy.static_sip + energy.static_cube * cubes_per_sip() +
         energy.static_pe * pes_per_sip();
}

double Topology::gemm_flops_per_second_per_sip() const {
  return 2.0 * static_cast<double>(pes_per_sip()) * pe.gemm.rows * pe.gemm.cols * pe.clock_hz;
}

namespace {

// The errors with every override marker replaced by `word`.
std::vector<std::string> with_word(const std::vector<std::string>& raw, const std::string& word) {
  const std::string marker = TopologyError::kOverride;
  std::vector<std::string> out;
  for (std::string e : raw) {
    for (std::size_t at = e.find(marker); at != std::string::npos; at = e.find(marker, at + word.size()))
      e.replace(at, marker.size(), word);
    out.push_back(std::move(e));
  }
  return out;
}

std::string first_of(const std::vector<std::string>& errors) {
  return errors.empty() ? "invalid topology" : errors.front();
}

}  // namespace

TopologyError::TopologyError(std::vector<std::string> errors)
    : std::runtime_error(first_of(with_word(errors, "override "))),
      raw_(std::move(errors)),
      errors_(with_word(raw_, "override ")) {}

std::vector<std::string> TopologyError::errors_as(const std::string& override_word) const {
  return with_word(raw_, override_word);
}

}  // namespace kb
