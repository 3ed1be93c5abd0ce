#pragma once
// What the GQA attention workloads share: the problem's shape, its inputs (random or
// from .npy files), the numeric check against the fp64 reference, the knobs that set
// them, and the job steps around a run (inputs in, O checked and written out).
#include <cstdint>
#include <optional>
#include <string>

#include "base/dtype.h"
#include "base/npy.h"
#include "kernels/gqa/helpers.h"
#include "kernels/reference/attention.h"
#include "workloads/workload.h"

namespace kb {
struct HbmRegion;  // platform/runtime_context.h
}

namespace kb::gqa {

// H_q query heads in H_kv groups of G over head dimension d; T_q query tokens attend to a
// context of S positions (the last T_q of them, when causal).
struct AttentionShape {
  std::uint32_t h_q = 64, h_kv = 8, d = 128, t_q = 1;
  std::uint64_t s = 32768;
  bool causal = true;
  DType dtype = DType::bf16;
  std::string model;  // the preset the heads and head_dim came from ("" for none)
  std::uint32_t g() const { return h_q / h_kv; }
  // The HBM bytes attention moves at least (a roofline's denominator): Q and O, K and V once.
  double hbm_bytes() const;
  reference::AttentionShape reference() const;
};

// Throws ConfigError naming the shape's fields.
void validate_shape(const AttentionShape& a);
// Whether groups of `cubes` cubes x `pes` PEs tile the mesh and enough SIPs hold the
// H_kv groups; `group` names the group size in the message ("{cubes_per_group} 8").
void validate_groups(const AttentionShape& a, std::uint32_t cubes, std::uint32_t pes, const std::string& group,
                     const std::vector<SipId>& devices, const Topology& topo);

// What the kernels are told of the shape, for groups of `pes` PEs per cube.
AttentionParams attention_params(const AttentionShape& a, std::uint32_t pes);

// A tensor of standard-normal values from `seed` (the random inputs of data mode).
HostTensor random_normal(Shape shape, std::uint32_t seed);

// Where the caller placed a run's tensors (a virtual platform's software does, through
// a job descriptor); a null region: the runtime places that tensor after the others.
struct TensorRegions {
  kb::HbmRegion *q = nullptr, *k = nullptr, *v = nullptr, *o = nullptr;
  kb::HbmRegion* state = nullptr;  // prefill's pass-KV state
};

// q [H_q, T_q, d], k and v [H_kv, S, d].
struct AttentionInputs {
  HostTensor q, k, v;
  static AttentionInputs random(const AttentionShape& a, std::uint32_t seed);
  // Reads q.npy, k.npy, v.npy from a folder and checks their shapes against `a`.
  static AttentionInputs from_npy(const std::string& dir, const AttentionShape& a);
};

// O against the fp64 reference (workloads::Numerics says how it is judged).
workloads::Numerics check_attention(const AttentionShape& a, const AttentionInputs& in, const HostTensor& o);

// The knobs of the shape (model, q_len, heads_q, heads_kv, head_dim, causal, no_causal),
// of one context's length (seq_len) and of the data (inputs, outputs, check).
const workloads::KnobSet& shape_knobs();
const workloads::KnobSet& context_knobs();
const workloads::KnobSet& data_knobs();
// cubes_per_group and pes: the group of a KV head (each "auto" or a count).
const workloads::KnobSet& placement_knobs();
// A placement knob's count, or nothing for auto.
std::optional<std::uint32_t> placement_count(const workloads::Values& v, const std::string& knob);
// variant: how a tile's work is issued (kernels/gqa/variant.h); `naive` only where allowed.
const workloads::KnobSet& variant_knobs();
Variant variant_of(const workloads::Values& v, bool naive_allowed);
// The shape from its knobs; q_len, when not given, is `t_q` (0: the workload's choice);
// S from seq_len when `context` (a batch has one per request instead).
AttentionShape shape_of(const workloads::Values& v, std::uint32_t t_q, bool context = true);

// The data side of an attention job: inputs read or made before the run, O checked
// against the reference and written to the outputs folder after it.
class AttentionData {
 public:
  // Reads the data knobs; a usage ConfigError for a check or outputs without data.
  AttentionData(const workloads::Values& v, bool data);
  // Makes or reads the inputs of `a` when the run simulates values.
  void prepare(const AttentionShape& a);
  const AttentionInputs* inputs() const { return inputs_ ? &*inputs_ : nullptr; }
  bool data() const { return data_; }
  // The numerics of O, and o.npy written to the outputs folder if one was given.
  void finish(const AttentionShape& a, const HostTensor& o, workloads::Result& r) const;

 private:
  std::string inputs_dir_, outputs_dir_;
  bool check_ = false, data_ = false;
  std::uint32_t seed_ = 1;
  std::optional<AttentionInputs> inputs_;
};

// The result fields every attention workload fills.
workloads::Result attention_result(const std::string& workload, const AttentionShape& a, bool data,
                                   const std::vector<SipId>& devices, std::uint64_t cycles, const Topology& topo);

}  // namespace kb::gqa
