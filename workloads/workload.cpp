#include "workloads/workload.h"

#include "base/units.h"

namespace kb::workloads {

namespace {

// `text` with each {field} replaced by name(field) and doubled braces made single.
std::string expand(const std::string& text, const std::function<std::string(const std::string&)>& name) {
  std::string out;
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if ((c == '{' || c == '}') && i + 1 < text.size() && text[i + 1] == c) {
      out += c;
      ++i;
      continue;
    }
    const std::size_t close = c == '{' ? text.find('}', i) : std::string::npos;
    if (close == std::string::npos) {
      out += c;
      continue;
    }
    out += name(text.substr(i + 1, close - i - 1));
    i = close;
  }
  return out;
}

std::string as_named(const std::string& field) { return field; }

}  // namespace

ConfigError::ConfigError(const std::string& text, bool usage)
    : std::invalid_argument(expand(text, as_named)), text_(text), usage_(usage) {}

std::string ConfigError::render(const std::function<std::string(const std::string&)>& name) const {
  return expand(text_, name);
}

std::string ConfigError::literal(const std::string& text) {
  std::string out;
  for (const char c : text) {
    if (c == '{' || c == '}') out += c;
    out += c;
  }
  return out;
}

void Values::set(const std::string& field, std::string text, bool given) {
  texts_[field] = std::move(text);
  if (given) given_.insert(field);
}

const std::string& Values::text(const std::string& field) const {
  static const std::string none;
  const auto it = texts_.find(field);
  return it == texts_.end() ? none : it->second;
}

std::uint64_t Values::count(const std::string& field, std::uint64_t lo, std::uint64_t hi) const {
  const auto v = units::parse_count(text(field));
  if (!v || *v < lo || *v > hi)
    throw ConfigError("{" + field + "} '" + ConfigError::literal(text(field)) + "': expected a whole number from " + std::to_string(lo) +
                          " to " + std::to_string(hi),
                      true);
  return *v;
}

const KnobSet& storage_knobs() {
  static const KnobSet set{"storage",
                           {{"dtype", "bf16", "storage dtype: bf16 or fp32"}, {"seed", "1", "seed of the random inputs"}}};
  return set;
}

const KnobSet& size_knobs() {
  static const KnobSet set{"size", {{"bytes", "256KiB", "hbm_stream: bytes each PE moves; collective: each rank's buffer"}}};
  return set;
}

const KnobSet& model_knobs() {
  static const KnobSet set{
      "model",
      {{"model", "", "a model preset (kernbench models lists them): attention takes its heads and head_dim (flags "
                     "override them); decoder_layer and model_step the whole model (default llama3-70b)"}}};
  return set;
}

const KnobSet& outputs_knobs() {
  static const KnobSet set{"outputs",
                           {{"outputs", "", "write the run's outputs as .npy to DIR (data mode; docs/workloads.md)"}}};
  return set;
}

const KnobSet& q_len_knobs() {
  static const KnobSet set{
      "query tokens",
      {{"q_len", "", "query tokens: attention T_q (decode: 1; prefill: S, or fewer for a chunk after a cached "
                     "prefix); a model's prefill: new tokens a prompt, after its cached prefix (default: all)"}}};
  return set;
}

const KnobSet& check_knobs() {
  static const KnobSet set{"check", {{"check", "", "exit 1 if the result misses its fp64 reference (data mode)", true}}};
  return set;
}

DType dtype_of(const Values& v) {
  const auto dtype = parse_dtype(v.text("dtype"));
  if (!dtype) throw ConfigError("{dtype} '" + ConfigError::literal(v.text("dtype")) + "': allowed values: bf16, fp32", true);
  return *dtype;
}

std::uint32_t seed_of(const Values& v) { return v.count32("seed", 0, 1u << 30); }

#define KB_WORKLOAD(fn) const Workload& fn();
#include "workloads/list.h"
#undef KB_WORKLOAD

const std::vector<const Workload*>& registry() {
#define KB_WORKLOAD(fn) &fn(),
  static const std::vector<const Workload*> all = {
#include "workloads/list.h"
  };
#undef KB_WORKLOAD
  return all;
}

const Workload* find(const std::string& name) {
  for (const Workload* w : registry())
    if (w->name() == name) return w;
  return nullptr;
}

}  // namespace kb::workloads
