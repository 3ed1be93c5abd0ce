#pragma once
// Checking a decoder layer's data-mode run from the host: the layer in fp64, the same
// computed naively in the storage dtype (the check's tolerance, as every kernel's), and
// the files an outside numpy script recomputes it from (docs/models.md).
#include <string>

#include "workloads/models/step_run.h"
#include "workloads/result.h"

namespace kb::workloads {

// The layer on the host in fp64 (`storage` false) or rounding to bf16 wherever the PEs
// store or convert values (`storage` true).
LayerOutputs reference_layer(const StepConfig& c, const StepValues& v, bool storage);
// y against the fp64 reference, with the tolerance of twice the naive computation's
// error plus 1e-5.
Numerics check_layer(const StepConfig& c, const StepValues& v, const LayerOutputs& got);
// x.npy, positions.npy, the weights by their Hugging Face names, k_cache_<r>.npy and
// v_cache_<r>.npy, y.npy, k_new.npy, v_new.npy and config.json, into `dir`.
void write_layer_files(const std::string& dir, const StepConfig& c, const StepValues& v, const LayerOutputs& out);

}  // namespace kb::workloads
