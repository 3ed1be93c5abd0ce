#include "workloads/models/model_presets.h"

#include <yaml-cpp/yaml.h>

#include <cmath>
#include <optional>

#include "workloads/workload.h"

namespace kb::workloads {

const char* norm_name(NormKind k) { return k == NormKind::Rms ? "rms" : "layer"; }
const char* mlp_name(MlpKind k) { return k == MlpKind::SwiGlu ? "swiglu" : k == MlpKind::GeGlu ? "geglu" : "gelu"; }
const char* block_name(BlockKind k) { return k == BlockKind::Sequential ? "sequential" : "parallel"; }

std::uint64_t ModelPreset::layer_parameters() const {
  const std::uint64_t h = hidden, q = std::uint64_t{heads_q} * head_dim, kv = std::uint64_t{heads_kv} * head_dim;
  std::uint64_t n = h * q + 2 * h * kv + q * h;              // Q, K, V, O
  if (qkv_bias) n += q + 2 * kv;
  n += (mlp == MlpKind::Gelu ? 2 : 3) * h * intermediate;    // up (and gate), down
  const std::uint64_t norm_weights = norm == NormKind::Rms ? h : 2 * h;
  n += (block == BlockKind::Parallel ? 1 : 2) * norm_weights;  // a parallel block has one norm
  return n;
}

std::uint64_t ModelPreset::parameters() const {
  const std::uint64_t embedding = std::uint64_t{vocab} * hidden;
  const std::uint64_t final_norm = norm == NormKind::Rms ? hidden : 2 * std::uint64_t{hidden};
  return embedding * (tied_embeddings ? 1 : 2) + layers * layer_parameters() + final_norm;
}

const std::string& presets_file() {
  static const std::string file = KERNBENCH_MODEL_PRESETS;
  return file;
}

namespace {

std::string where(const std::string& file, const YAML::Node& node) {
  return ConfigError::literal(file) + ":" + std::to_string(node.Mark().line + 1);
}

// One model's entry, each key read once with what it allows.
class Entry {
 public:
  // `prefix`: what the keys are under ("rope_scaling.").
  Entry(const std::string& file, std::string name, const YAML::Node& node, std::string prefix = "")
      : file_(file), name_(std::move(name)), node_(node), prefix_(std::move(prefix)) {}

  std::uint32_t count(const char* key) const {
    std::uint32_t n = 0;
    const YAML::Node v = node_[key];
    if (!v || !YAML::convert<std::uint32_t>::decode(v, n) || n == 0) fail(v, key, "a whole number of at least 1");
    return n;
  }
  double positive(const char* key, std::optional<double> fallback = std::nullopt) const {
    const YAML::Node v = node_[key];
    if (!v && fallback) return *fallback;
    double x = 0;
    if (!v || !YAML::convert<double>::decode(v, x) || !std::isfinite(x) || x <= 0) fail(v, key, "a number above 0");
    return x;
  }
  bool flag(const char* key) const {
    const YAML::Node v = node_[key];
    bool b = false;
    if (v && !YAML::convert<bool>::decode(v, b)) fail(v, key, "true or false");
    return b;
  }
  // One of `names` (its index); `fallback` when the key is absent (required when none).
  template <class Kind>
  Kind choice(const char* key, const std::vector<std::string>& names, std::optional<Kind> fallback = std::nullopt) const {
    const YAML::Node v = node_[key];
    if (!v && fallback) return *fallback;
    std::string text;
    if (v && YAML::convert<std::string>::decode(v, text))
      for (std::size_t i = 0; i < names.size(); ++i)
        if (names[i] == text) return static_cast<Kind>(i);
    std::string allowed;
    for (const std::string& n : names) allowed += (allowed.empty() ? "" : ", ") + n;
    fail(v, key, "one of " + allowed);
  }
  const YAML::Node& node() const { return node_; }
  [[noreturn]] void fail(const YAML::Node& v, const std::string& key, const std::string& allowed) const {
    throw ConfigError(where(file_, v ? v : node_) + ": model '" + ConfigError::literal(name_) + "' needs " + prefix_ + key +
                      ", " + allowed);
  }

 private:
  const std::string& file_;
  std::string name_;
  YAML::Node node_;
  std::string prefix_;
};

ModelPreset read_preset(const std::string& file, const std::string& name, const YAML::Node& node) {
  const Entry e(file, name, node);
  ModelPreset p;
  p.name = name;
  p.heads_q = e.count("heads_q");
  p.heads_kv = e.count("heads_kv");
  p.head_dim = e.count("head_dim");
  p.hidden = e.count("hidden");
  p.intermediate = e.count("intermediate");
  p.layers = e.count("layers");
  p.vocab = e.count("vocab");
  p.rope_theta = e.positive("rope_theta");
  p.norm_eps = e.positive("norm_eps");
  p.norm = e.choice<NormKind>("norm", {"rms", "layer"});
  p.mlp = e.choice<MlpKind>("mlp", {"swiglu", "geglu", "gelu"});
  p.block = e.choice<BlockKind>("block", {"sequential", "parallel"}, BlockKind::Sequential);
  p.qkv_bias = e.flag("qkv_bias");
  p.tied_embeddings = e.flag("tied_embeddings");
  if (p.heads_q % p.heads_kv != 0) e.fail(node["heads_kv"], "heads_kv", "a divisor of heads_q");
  if (const YAML::Node s = node["rope_scaling"]) {
    const Entry r(file, name, s, "rope_scaling.");
    p.rope_scaling.factor = r.positive("factor");
    p.rope_scaling.low_freq_factor = r.positive("low_freq_factor");
    p.rope_scaling.high_freq_factor = r.positive("high_freq_factor");
    p.rope_scaling.original_max_position = r.count("original_max_position");
    if (p.rope_scaling.high_freq_factor <= p.rope_scaling.low_freq_factor)
      r.fail(s["high_freq_factor"], "high_freq_factor", "a number above low_freq_factor");
  }
  return p;
}

}  // namespace

std::vector<ModelPreset> model_presets(const std::string& file) {
  YAML::Node root;
  try {
    root = YAML::LoadFile(file);
  } catch (const YAML::BadFile&) {
    throw ConfigError(ConfigError::literal(file) + ": cannot read the model presets");
  } catch (const YAML::Exception& e) {
    throw ConfigError(ConfigError::literal(file) + ":" + std::to_string(e.mark.line + 1) + ": " +
                      ConfigError::literal(e.msg));
  }
  const YAML::Node models = root["models"];
  if (!models || !models.IsMap())
    throw ConfigError(ConfigError::literal(file) + ": expected a map 'models' of NAME: {heads_q, heads_kv, head_dim, ...}");
  std::vector<ModelPreset> out;
  for (const auto& entry : models) {
    if (!entry.second.IsMap())
      throw ConfigError(where(file, entry.second) + ": model '" + ConfigError::literal(entry.first.as<std::string>()) +
                        "' must be a map of its architecture's fields");
    out.push_back(read_preset(file, entry.first.as<std::string>(), entry.second));
  }
  return out;
}

ModelPreset model_preset(const std::string& name, const std::string& file) {
  const std::vector<ModelPreset> presets = model_presets(file);
  std::string names;
  for (const ModelPreset& p : presets) {
    if (p.name == name) return p;
    if (!names.empty()) names += ", ";
    names += p.name;
  }
  throw ConfigError("{model} '" + ConfigError::literal(name) + "' is not a preset; presets: " + names +
                        " (kernbench models)",
                    true);
}

}  // namespace kb::workloads
