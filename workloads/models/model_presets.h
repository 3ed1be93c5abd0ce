#pragma once
// Real models, read from presets/models.yaml: each preset is a model's architecture as
// its published config.json gives it (docs/models.md). The attention workloads take its
// heads and head dimension (`--model NAME`; explicit flags override them); the whole-model
// workloads take all of it; `kernbench models` lists them with their parameter counts.
#include <cstdint>
#include <string>
#include <vector>

#include "kernels/nn/rope.h"

namespace kb::workloads {

enum class NormKind : std::uint8_t { Rms, Layer };          // RMSNorm, or LayerNorm (with a bias)
enum class MlpKind : std::uint8_t { SwiGlu, GeGlu, Gelu };  // gated by SiLU or GELU, or up, GELU, down
enum class BlockKind : std::uint8_t { Sequential, Parallel };  // Falcon's: attention and MLP from one norm
const char* norm_name(NormKind k);
const char* mlp_name(MlpKind k);
const char* block_name(BlockKind k);

struct ModelPreset {
  std::string name;
  std::uint32_t heads_q = 0, heads_kv = 0, head_dim = 0;
  std::uint32_t hidden = 0, intermediate = 0, layers = 0, vocab = 0;
  double rope_theta = 10000;
  nn::RopeScaling rope_scaling;  // config.json's rope_scaling of rope_type "llama3"
  double norm_eps = 1e-5;
  NormKind norm = NormKind::Rms;
  MlpKind mlp = MlpKind::SwiGlu;
  BlockKind block = BlockKind::Sequential;
  bool qkv_bias = false;         // Qwen2's attention projections carry a bias
  bool tied_embeddings = false;  // the LM head is the embedding table

  // Weights of one decoder layer, and of the whole model (embeddings, layers, final
  // norm, the LM head unless tied).
  std::uint64_t layer_parameters() const;
  std::uint64_t parameters() const;
};

// The repository's preset file.
const std::string& presets_file();
// The presets of `file`, in file order. Throws ConfigError naming the file and line of
// what is malformed and what is allowed.
std::vector<ModelPreset> model_presets(const std::string& file = presets_file());
// The preset `name`; throws ConfigError (a usage error) listing the names.
ModelPreset model_preset(const std::string& name, const std::string& file = presets_file());

}  // namespace kb::workloads
