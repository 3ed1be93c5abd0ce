#pragma once
// Attention shapes of real models, read from presets/models.yaml: `--model NAME` sets
// heads_q, heads_kv and head_dim from one (explicit flags override it), and
// `kernbench models` lists them.
#include <cstdint>
#include <string>
#include <vector>

namespace kb::gqa {

struct ModelPreset {
  std::string name;
  std::uint32_t heads_q = 0, heads_kv = 0, head_dim = 0;
};

// The repository's preset file.
const std::string& presets_file();
// The presets of `file`, in file order. Throws workloads::ConfigError naming the file
// and line of what is malformed.
std::vector<ModelPreset> model_presets(const std::string& file = presets_file());
// The preset `name`; throws workloads::ConfigError (a usage error) listing the names.
ModelPreset model_preset(const std::string& name, const std::string& file = presets_file());

}  // namespace kb::gqa
