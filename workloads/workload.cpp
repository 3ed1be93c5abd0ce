#include "workloads/workload.h"

#include "base/units.h"

namespace kb::workloads {

namespace {

// The text with its fields as they are named: the braces dropped.
std::string plain(std::string text) {
  std::erase(text, '{');
  std::erase(text, '}');
  return text;
}

}  // namespace

ConfigError::ConfigError(const std::string& text, bool usage)
    : std::invalid_argument(plain(text)), text_(text), usage_(usage) {}

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
    throw ConfigError("{" + field + "} '" + text(field) + "': expected a whole number from " + std::to_string(lo) +
                          " to " + std::to_string(hi),
                      true);
  return *v;
}

const KnobSet& storage_knobs() {
  static const KnobSet set{"storage",
                           {{"dtype", "bf16", "storage dtype: bf16 or fp32"}, {"seed", "1", "seed of the random inputs"}}};
  return set;
}

DType dtype_of(const Values& v) {
  const auto dtype = parse_dtype(v.text("dtype"));
  if (!dtype) throw ConfigError("{dtype} '" + v.text("dtype") + "': allowed values: bf16, fp32", true);
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
