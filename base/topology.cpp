#include "base/topology.h"

#include <fstream>
#include <set>
#include <sstream>

#include <yaml-cpp/yaml.h>

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
    if (!node.IsMap() || parts[i].empty() || !node[parts[i]]) {
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

Topology build(ParseContext& ctx, const YAML::Node& root) {
  Topology t;
  MapReader top(ctx, root, "");
  t.name = top.text("name");
  {
    MapReader sys = top.map("system");
    t.system.sips = static_cast<std::uint32_t>(sys.count("sips", 1, 64));
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
  top.finish();

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
    throw TopologyError({ctx.file + ": a topology must be a YAML map of keys (name, system, "
                                    "sip, cube, pe), got " + describe(root)});
  for (const auto& s : sets) apply_set(ctx, root, s);
  if (!ctx.errors.empty()) throw TopologyError(ctx.errors);
  Topology t = build(ctx, root);
  if (!ctx.errors.empty()) throw TopologyError(ctx.errors);
  t.source = ctx.file;
  return t;
}

}  // namespace

const std::vector<std::string>& Topology::math_ops() {
  static const std::vector<std::string> ops = {"add", "sub", "mul", "div", "max",
                                               "exp", "where", "copy", "fma"};
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
