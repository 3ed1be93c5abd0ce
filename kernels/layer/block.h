#pragma once
// What a decoder layer's block is made of, whatever the phase: its norm, its MLP, a QKV
// bias, and whether attention and MLP run side by side from one norm (Falcon).
#include "kernels/nn/mlp.h"

namespace kb::layer {

struct Block {
  bool layer_norm = false;  // LayerNorm (weight and bias rows) instead of RMSNorm
  bool parallel = false;    // attention and MLP from one norm, one all-reduce
  bool qkv_bias = false;
  nn::Activation act = nn::Activation::Silu;
  bool gated = true;
  float eps = 1e-5f;
};

}  // namespace kb::layer
