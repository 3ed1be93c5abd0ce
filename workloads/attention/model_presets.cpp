#include "workloads/attention/model_presets.h"

#include <yaml-cpp/yaml.h>

#include "workloads/workload.h"

namespace kb::gqa {

using workloads::ConfigError;

const std::string& presets_file() {
  static const std::string file = KERNBENCH_MODEL_PRESETS;
  return file;
}

namespace {

std::string where(const std::string& file, const YAML::Node& node) {
  return ConfigError::literal(file) + ":" + std::to_string(node.Mark().line + 1);
}

std::uint32_t field(const std::string& file, const std::string& name, const YAML::Node& model, const char* key) {
  const YAML::Node v = model[key];
  std::uint32_t n = 0;
  if (!v || !YAML::convert<std::uint32_t>::decode(v, n) || n == 0)
    throw ConfigError(where(file, v ? v : model) + ": model '" + ConfigError::literal(name) + "' needs " + key +
                      ", a whole number of at least 1");
  return n;
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
    throw ConfigError(ConfigError::literal(file) + ": expected a map 'models' of NAME: {heads_q, heads_kv, head_dim}");
  std::vector<ModelPreset> out;
  for (const auto& entry : models) {
    ModelPreset p;
    p.name = entry.first.as<std::string>();
    p.heads_q = field(file, p.name, entry.second, "heads_q");
    p.heads_kv = field(file, p.name, entry.second, "heads_kv");
    p.head_dim = field(file, p.name, entry.second, "head_dim");
    out.push_back(p);
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

}  // namespace kb::gqa
