#include "sc_main/sweep_spec.h"

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include <boost/program_options/errors.hpp>
#include <yaml-cpp/yaml.h>

#include "base/topology.h"
#include "base/units.h"
#include "sc_main/errors.h"
#include "sc_main/run_command.h"

namespace kb::cli {
namespace {

using Json = nlohmann::ordered_json;

// The sweep writes each point's result itself; these flags would make every point write
// over one file.
const std::set<std::string> kOwnedFlags = {"help", "json", "op-log", "timeline", "vcd", "vcd-filter"};
const std::set<std::string> kPartKeys = {"run", "grid", "zip", "where"};
const std::vector<std::string> kOperators = {"==", "!=", "<=", ">=", "<", ">"};
constexpr std::size_t kMaxErrors = 20;

// The edit distance of two keys, for "did you mean".
std::size_t distance(const std::string& a, const std::string& b) {
  std::vector<std::size_t> row(b.size() + 1);
  for (std::size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i) {
    std::size_t diagonal = row[0];
    row[0] = i;
    for (std::size_t j = 1; j <= b.size(); ++j) {
      const std::size_t up = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diagonal = up;
    }
  }
  return row[b.size()];
}

// A spec key and its values, each with the node it came from (one value for a `run` key).
struct Setting {
  std::string key;
  YAML::Node key_node;
  std::vector<YAML::Node> values;
};

// A condition of `where`: two operands (keys or literal values) and an operator.
struct Condition {
  std::string left, op, right;
  YAML::Node node;
};

// Where a point's setting came from: its key's node and its value's.
struct Origin {
  YAML::Node key, value;
};

struct Part {
  std::string name;
  YAML::Node node;  // where a point's own problems are reported
  std::vector<Setting> fixed, grid, zip;
  std::vector<Condition> where;
};

class SpecReader {
 public:
  SpecReader(std::string file, std::vector<std::string> more) : file_(std::move(file)), more_(std::move(more)) {
    for (const RunFlag& f : run_flags())
      if (!kOwnedFlags.count(f.name)) flags_[f.name] = f.takes_value;
  }

  SweepSpec read() {
    std::ifstream in(file_, std::ios::binary);
    if (!in || !std::filesystem::is_regular_file(file_)) throw InputError("sweep spec " + file_ + ": cannot read the file");
    const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    if (text.find('\0') != std::string::npos) throw InputError(file_ + ": not a text file (contains NUL bytes)");
    YAML::Node root;
    try {
      root = YAML::Load(text);
    } catch (const YAML::ParserException& e) {
      throw SpecError({file_ + ":" + std::to_string(e.mark.line + 1) + ":" + std::to_string(e.mark.column + 1) +
                       ": malformed YAML: " + e.msg});
    }
    if (!root.IsMap())
      throw SpecError({file_ + ": a sweep spec is a YAML map of name, run, grid, zip, where (or parts)"});
    SweepSpec spec;
    spec.file = file_;
    for (const auto& kv : root) {
      const std::string k = kv.first.Scalar();
      if (k != "name" && k != "parts" && !kPartKeys.count(k))
        error(kv.first, "unknown key '" + k + "'; valid keys here: name, run, grid, zip, where, parts");
    }
    if (!root["name"] || !root["name"].IsScalar() || root["name"].Scalar().empty())
      error(root["name"] ? root["name"] : root, "name: the spec needs a name (text)");
    else spec.name = root["name"].Scalar();
    const std::vector<Setting> common = settings(root["run"], "run", false);
    std::vector<Part> parts;
    if (const YAML::Node p = root["parts"]) {
      for (const char* k : {"grid", "zip", "where"})
        if (root[k]) error(root[k], std::string(k) + ": a spec with parts sweeps inside each part");
      if (!p.IsMap() || p.size() == 0) error(p, "parts: expected a map of part name -> {run, grid, zip, where}");
      else
        for (const auto& kv : p) parts.push_back(part(kv.first.Scalar(), kv.second, common));
    } else {
      parts.push_back(part("", root, common));
    }
    for (const Part& pt : parts) expand(pt, spec.points);
    if (errors_.empty() && spec.points.empty()) error(root, "the spec gives no point to run (where: skips them all)");
    if (errors_.empty())
      for (std::size_t i = 0; i < spec.points.size(); ++i) check(spec.points[i], origins_[i].first, origins_[i].second);
    if (!errors_.empty()) throw SpecError(errors_);
    return spec;
  }

 private:
  std::string at(const YAML::Node& n) const {
    const YAML::Mark m = n.Mark();
    if (m.is_null()) return file_;
    return file_ + ":" + std::to_string(m.line + 1) + ":" + std::to_string(m.column + 1);
  }
  void error(const YAML::Node& n, const std::string& what) { add(at(n) + ": " + what); }
  void add(const std::string& text) {
    if (std::find(errors_.begin(), errors_.end(), text) == errors_.end()) errors_.push_back(text);
  }

  // Whether `key` is something a point can set; reports it if not.
  bool known(const YAML::Node& key_node) {
    const std::string key = key_node.Scalar();
    if (key.starts_with("set.")) {
      if (key.size() > 4) return true;
      error(key_node, "'set.': name a topology value, e.g. set.cube.hbm.bandwidth");
      return false;
    }
    if (flags_.count(key)) return true;
    if (kOwnedFlags.count(key)) {
      error(key_node, "'" + key + "': the sweep writes each point's outputs itself; a spec cannot set --" + key);
      return false;
    }
    std::string near;
    std::size_t best = 3;
    for (const auto& [flag, takes_value] : flags_)
      if (const std::size_t d = distance(key, flag); d < best) best = d, near = flag;
    error(key_node, "unknown key '" + key + "': a key is a `kernbench run` flag without its dashes, or set.<topology " +
                        "path>" + (near.empty() ? std::string() : "; did you mean '" + near + "'?"));
    return false;
  }

  bool scalar(const YAML::Node& v, const std::string& key) {
    if (v.IsScalar()) return true;
    error(v, key + ": expected a value (a number, a size like 64B/cycle, or text), got a " +
                 (v.IsSequence() ? "list" : v.IsMap() ? "map" : "null"));
    return false;
  }

  // The settings of a `run` map (one value each) or of `grid` and `zip` (lists).
  std::vector<Setting> settings(const YAML::Node& map, const std::string& where, bool lists) {
    std::vector<Setting> out;
    if (!map) return out;
    if (!map.IsMap()) {
      error(map, where + ": expected a map of key -> " + (lists ? "list of values" : "value"));
      return out;
    }
    for (const auto& kv : map) {
      if (!known(kv.first)) continue;
      Setting s{kv.first.Scalar(), kv.first, {}};
      if (!lists) {
        if (scalar(kv.second, s.key)) s.values.push_back(kv.second);
      } else if (!kv.second.IsSequence() || kv.second.size() == 0) {
        error(kv.second, s.key + ": expected a non-empty list of values, e.g. [32B/cycle, 64B/cycle]");
      } else {
        for (const YAML::Node& v : kv.second)
          if (scalar(v, s.key)) s.values.push_back(v);
      }
      if (!s.values.empty()) out.push_back(s);
    }
    return out;
  }

  Part part(const std::string& name, const YAML::Node& node, const std::vector<Setting>& common) {
    if (!node.IsMap()) {
      error(node, "part '" + name + "': expected a map of run, grid, zip, where");
      return {name, node, {}, {}, {}, {}};
    }
    // (A YAML::Node is never assigned to: that would write into the node it refers to.)
    Part p{name, node["grid"] ? node["grid"] : node, {}, {}, {}, {}};
    if (!name.empty()) {
      for (const auto& kv : node)
        if (!kPartKeys.count(kv.first.Scalar()))
          error(kv.first, "unknown key '" + kv.first.Scalar() + "' in part '" + name + "'; valid keys here: run, grid, zip, where");
    }
    // The spec's run values, then the part's own (which win).
    const std::vector<Setting> own = name.empty() ? std::vector<Setting>{} : settings(node["run"], "run", false);
    for (const Setting& s : common)
      if (std::none_of(own.begin(), own.end(), [&](const Setting& o) { return o.key == s.key; })) p.fixed.push_back(s);
    p.fixed.insert(p.fixed.end(), own.begin(), own.end());
    p.grid = settings(node["grid"], "grid", true);
    p.zip = settings(node["zip"], "zip", true);
    std::set<std::string> seen;
    for (const auto* list : {&p.fixed, &p.grid, &p.zip})
      for (const Setting& s : *list)
        if (!seen.insert(s.key).second)
          error(s.key_node, "'" + s.key + "' is given twice (a key is fixed in run, or swept in grid or zip, once)");
    for (const Setting& s : p.zip)
      if (s.values.size() != p.zip.front().values.size())
        error(s.key_node, "zip: '" + s.key + "' has " + std::to_string(s.values.size()) + " values and '" +
                              p.zip.front().key + "' " + std::to_string(p.zip.front().values.size()) +
                              "; the lists of zip vary together and must be as long");
    if (const YAML::Node w = node["where"]) {
      if (!w.IsSequence()) error(w, "where: expected a list of conditions like 'q-len <= seq-len'");
      else
        for (const YAML::Node& c : w) condition(c, seen, p.where);
    }
    return p;
  }

  void condition(const YAML::Node& c, const std::set<std::string>& keys, std::vector<Condition>& out) {
    const std::string text = c.IsScalar() ? c.Scalar() : "";
    std::istringstream words(text);
    Condition k{"", "", "", c};
    std::string rest;
    words >> k.left >> k.op >> k.right;
    words >> rest;
    if (k.right.empty() || !rest.empty() || std::find(kOperators.begin(), kOperators.end(), k.op) == kOperators.end()) {
      error(c, "where: '" + text + "': a condition is 'A OP B' with OP one of == != < <= > >=, A and B keys of " +
                   "this part or values");
      return;
    }
    if (!keys.count(k.left) && !keys.count(k.right)) {
      error(c, "where: '" + text + "' names no key of this part (keys: those of run, grid and zip)");
      return;
    }
    out.push_back(k);
  }

  // Whether a point's values meet a condition: as numbers when both sides are quantities.
  static bool holds(const Condition& c, const std::map<std::string, std::string>& values) {
    const auto text = [&](const std::string& s) {
      const auto it = values.find(s);
      return it == values.end() ? s : it->second;
    };
    const std::string a = text(c.left), b = text(c.right);
    const auto x = magnitude(a), y = magnitude(b);
    const int cmp = x && y ? (*x < *y ? -1 : *x > *y ? 1 : 0) : a.compare(b) < 0 ? -1 : a.compare(b) > 0 ? 1 : 0;
    if (c.op == "==") return cmp == 0;
    if (c.op == "!=") return cmp != 0;
    if (c.op == "<") return cmp < 0;
    if (c.op == "<=") return cmp <= 0;
    if (c.op == ">") return cmp > 0;
    return cmp >= 0;
  }

  // The command-line words of one setting's value.
  void append(std::vector<std::string>& args, const std::string& key, const YAML::Node& v) {
    if (key.starts_with("set.")) {
      args.insert(args.end(), {"--set", key.substr(4) + "=" + v.Scalar()});
    } else if (flags_.at(key)) {
      args.insert(args.end(), {"--" + key, v.Scalar()});
    } else {
      bool on = false;
      if (!YAML::convert<bool>::decode(v, on)) error(v, key + ": a switch takes true or false, got '" + v.Scalar() + "'");
      else if (on) args.push_back("--" + key);
    }
  }

  static Json json_of(const YAML::Node& v) {
    const Json j = Json::parse(v.Scalar(), nullptr, false);
    return !j.is_discarded() && (j.is_number() || j.is_boolean()) ? j : Json(v.Scalar());
  }

  // The part's points: the grid's cross product (its first key varying slowest) times the
  // zip's rows, less those a condition of `where` skips.
  void expand(const Part& p, std::vector<SweepPoint>& out) {
    std::vector<std::vector<std::pair<const Setting*, std::size_t>>> axes;  // per axis: its choices
    for (const Setting& s : p.grid) {
      auto& axis = axes.emplace_back();
      for (std::size_t i = 0; i < s.values.size(); ++i) axis.push_back({&s, i});
    }
    std::vector<std::size_t> choice(axes.size() + 1, 0);
    const std::size_t zip_rows = p.zip.empty() ? 1 : p.zip.front().values.size();
    if (std::any_of(p.zip.begin(), p.zip.end(), [&](const Setting& s) { return s.values.size() != zip_rows; })) return;
    while (true) {
      for (std::size_t z = 0; z < zip_rows; ++z) {
        SweepPoint point{p.name, Json::object(), Json::object(), {"run"}};
        point.args.insert(point.args.end(), more_.begin(), more_.end());
        std::map<std::string, std::string> texts;
        std::map<std::string, Origin> from;
        auto take = [&](const Setting& s, std::size_t i, bool swept) {
          append(point.args, s.key, s.values[i]);
          if (swept) {
            point.values[s.key] = json_of(s.values[i]);
            if (const auto m = magnitude(s.values[i].Scalar())) point.numbers[s.key] = *m;
          }
          texts[s.key] = s.values[i].Scalar();
          from.emplace(s.key, Origin{s.key_node, s.values[i]});
        };
        for (const Setting& s : p.fixed) take(s, 0, false);
        for (std::size_t a = 0; a < axes.size(); ++a) take(*axes[a][choice[a]].first, axes[a][choice[a]].second, true);
        for (const Setting& s : p.zip) take(s, z, true);
        if (std::all_of(p.where.begin(), p.where.end(), [&](const Condition& c) { return holds(c, texts); })) {
          origins_.push_back({std::move(from), p.node});
          out.push_back(std::move(point));
        }
      }
      // The next grid choice, the last axis fastest.
      std::size_t a = axes.size();
      while (a > 0 && ++choice[a - 1] == axes[a - 1].size()) choice[--a] = 0;
      if (a == 0) break;
    }
  }

  // A point's run checked as `kernbench run` would before simulating. Its problems are
  // reported at the value they name, or at its part with the point's values.
  void check(const SweepPoint& point, const std::map<std::string, Origin>& from, const YAML::Node& part_node) {
    auto report = [&](const std::string& text) {
      // The setting whose flag the message names, longest key first ("--heads-kv" before "--heads").
      const std::string* named = nullptr;
      const Origin* origin = nullptr;
      for (const auto& [key, o] : from) {
        const std::string flag = key.starts_with("set.") ? key.substr(4) + "=" : "--" + key;
        const auto pos = text.find(flag);
        const char next = pos == std::string::npos || pos + flag.size() == text.size() ? ' ' : text[pos + flag.size()];
        const bool whole = pos != std::string::npos && (flag.back() == '=' || !(std::isalnum(next) || next == '-'));
        if (whole && (named == nullptr || key.size() > named->size())) named = &key, origin = &o;
      }
      if (origin == nullptr) return add(at(part_node) + ": point " + point.key() + ": " + text);
      // A topology path that does not exist is its key's fault, whatever the value.
      if (const auto no_key = text.find(": no key '"); no_key != std::string::npos && named->starts_with("set."))
        return add(at(origin->key) + ": " + *named + text.substr(no_key));
      add(at(origin->value) + ": " + text);
    };
    try {
      const RunRequest request = parse_run(point.args);
      check_run(request);
    } catch (const TopologyError& e) {
      for (const std::string& err : e.errors_as("set.")) report(err);
    } catch (const boost::program_options::error& e) {
      report(e.what());
    } catch (const std::exception& e) {  // UsageError, InputError
      report(e.what());
    }
  }
  std::string file_;
  std::vector<std::string> more_;
  std::map<std::string, bool> flags_;  // run flag -> takes a value
  std::vector<std::string> errors_;
  // Per point, in order: the node of each setting's value, and the node of its part.
  std::vector<std::pair<std::map<std::string, Origin>, YAML::Node>> origins_;
};

}  // namespace

std::string SweepPoint::key() const {
  std::string k = part;
  for (const auto& [name, v] : values.items()) {
    if (!k.empty()) k += ' ';
    k += name + "=" + (v.is_string() ? v.get<std::string>() : v.dump());
  }
  return k;
}

SweepSpec SweepSpec::load(const std::string& file, const std::vector<std::string>& more) {
  return SpecReader(file, more).read();
}

SpecError::SpecError(std::vector<std::string> errors)
    : std::runtime_error(errors.empty() ? "invalid sweep spec" : errors.front()), errors_(std::move(errors)) {
  if (errors_.size() > kMaxErrors) {
    const std::size_t more = errors_.size() - kMaxErrors;
    errors_.resize(kMaxErrors);
    errors_.push_back("... and " + std::to_string(more) + " more");
  }
}

std::optional<double> magnitude(const std::string& text) {
  if (const auto v = units::parse_count(text)) return static_cast<double>(*v);
  if (const auto v = units::parse_bytes_per_cycle(text)) return static_cast<double>(*v);
  if (const auto v = units::parse_bytes(text)) return static_cast<double>(*v);
  if (const auto v = units::parse_cycles(text)) return static_cast<double>(*v);
  if (const auto v = units::parse_hertz(text)) return *v;
  for (const char* unit : {"J/B", "J/MAC", "J/op"})  // energy prices, in pJ
    if (const auto v = units::parse_quantity(text, unit, -12)) return *v;
  if (const auto v = units::parse_quantity(text, "W", 0)) return *v;
  char* end = nullptr;
  const double v = std::strtod(text.c_str(), &end);
  if (!text.empty() && end == text.c_str() + text.size()) return v;
  return std::nullopt;
}

}  // namespace kb::cli
