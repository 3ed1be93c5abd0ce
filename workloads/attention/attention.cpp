#include "workloads/attention/attention.h"

#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <random>

#include "base/dp_policy.h"
#include "workloads/models/model_presets.h"

namespace kb::gqa {

using workloads::ConfigError;

reference::AttentionShape AttentionShape::reference() const {
  return {h_q, h_kv, t_q, d, s, causal, 1.0 / std::sqrt(static_cast<double>(d))};
}

AttentionParams attention_params(const AttentionShape& a, std::uint32_t pes) {
  AttentionParams p;
  p.d = a.d;
  p.t_q = a.t_q;
  p.s = a.s;
  p.causal = a.causal;
  p.scale = static_cast<float>(1.0 / std::sqrt(static_cast<double>(a.d)));
  p.pes = pes;
  p.dtype = a.dtype;
  return p;
}

void validate_shape(const AttentionShape& a) {
  if (a.h_kv == 0 || a.h_q == 0) throw ConfigError("{heads_q} and {heads_kv} must be at least 1");
  if (a.h_q % a.h_kv != 0)
    throw ConfigError("{heads_q} " + std::to_string(a.h_q) + " is not a multiple of {heads_kv} " +
                      std::to_string(a.h_kv) + "; GQA needs H_q = G * H_kv");
  if (a.d == 0 || a.d > 512)
    throw ConfigError("{head_dim} " + std::to_string(a.d) + " is not supported; allowed: 1 to 512");
  if (a.s == 0) throw ConfigError("{seq_len} 0: the context needs at least one position");
  if (a.t_q == 0 || a.t_q > a.s)
    throw ConfigError("{q_len} " + std::to_string(a.t_q) + " is not allowed; allowed: 1 to the context length " +
                      std::to_string(a.s));
}

void validate_groups(const AttentionShape& a, std::uint32_t cubes, std::uint32_t pes, const std::string& group,
                     const std::vector<SipId>& devices, const Topology& topo) {
  if (pes == 0 || pes > topo.cube.pes)
    throw ConfigError("{pes} " + std::to_string(pes) + " is not allowed; a cube of this topology has " +
                      std::to_string(topo.cube.pes) + " PEs");
  const GroupShape g = group_shape(cubes);
  if (cubes == 0 || g.w > topo.sip.mesh_x || g.h > topo.sip.mesh_y || topo.sip.mesh_x % g.w != 0 ||
      topo.sip.mesh_y % g.h != 0)
    throw ConfigError(group + " is a " + std::to_string(g.w) + "x" + std::to_string(g.h) +
                      " group, which does not tile the " + std::to_string(topo.sip.mesh_x) + "x" +
                      std::to_string(topo.sip.mesh_y) + " cube mesh");
  for (const SipId s : devices)
    if (s.value >= topo.system.sips) throw ConfigError("device " + std::to_string(s.value) + " does not exist");
  const std::uint32_t per_sip = topo.cubes_per_sip() / cubes;
  if (static_cast<std::uint64_t>(devices.size()) * per_sip < a.h_kv)
    throw ConfigError(std::to_string(a.h_kv) + " KV heads in groups of " + std::to_string(cubes) + " cubes need " +
                      std::to_string((a.h_kv + per_sip - 1) / per_sip) + " SIP(s); the run has " +
                      std::to_string(devices.size()));
}

HostTensor random_normal(Shape shape, std::uint32_t seed) {
  HostTensor h;
  h.shape = std::move(shape);
  h.data.resize(h.elements());
  std::mt19937 gen(seed);
  std::normal_distribution<float> d(0.0f, 1.0f);
  for (auto& x : h.data) x = d(gen);
  return h;
}

AttentionInputs AttentionInputs::random(const AttentionShape& a, std::uint32_t seed) {
  const auto s = static_cast<std::int64_t>(a.s);
  return {random_normal({a.h_q, a.t_q, a.d}, seed), random_normal({a.h_kv, s, a.d}, seed + 1),
          random_normal({a.h_kv, s, a.d}, seed + 2)};
}

AttentionInputs AttentionInputs::from_npy(const std::string& dir, const AttentionShape& a) {
  AttentionInputs in{read_npy(dir + "/q.npy"), read_npy(dir + "/k.npy"), read_npy(dir + "/v.npy")};
  const auto s = static_cast<std::int64_t>(a.s);
  const std::pair<const HostTensor*, Shape> want[] = {
      {&in.q, {a.h_q, a.t_q, a.d}}, {&in.k, {a.h_kv, s, a.d}}, {&in.v, {a.h_kv, s, a.d}}};
  const char* names[] = {"q.npy", "k.npy", "v.npy"};
  for (int i = 0; i < 3; ++i)
    if (want[i].first->shape != want[i].second)
      throw ConfigError(ConfigError::literal(dir) + "/" + names[i] + ": shape " + shape_text(want[i].first->shape) +
                        " does not match the run's " + shape_text(want[i].second) +
                        " ([H_q, T_q, d] for q, [H_kv, S, d] for k and v)");
  return in;
}

workloads::Numerics check_attention(const AttentionShape& a, const AttentionInputs& in, const HostTensor& o) {
  const auto shape = a.reference();
  const auto exact = reference::attention(shape, in.q.data, in.k.data, in.v.data);
  const auto naive = reference::attention_naive(shape, in.q.data, in.k.data, in.v.data, a.dtype);
  std::vector<float> naive_f(naive.begin(), naive.end());
  workloads::Numerics r;
  r.error = reference::max_abs_error(o.data, exact);
  r.naive_error = reference::max_abs_error(naive_f, exact);
  r.tolerance = 2 * r.naive_error + 1e-5;  // FlashAttention style: twice the naive error, plus an atol
  r.pass = r.error <= r.tolerance;
  return r;
}

const workloads::KnobSet& shape_knobs() {
  static const workloads::KnobSet set{
      "attention shape",
      {{"heads_q", "64", "query heads H_q"},
       {"heads_kv", "8", "KV heads H_kv"},
       {"head_dim", "128", "head dimension d"},
       {"causal", "", "causal attention (the default)", true},
       {"no_causal", "", "attention without the causal mask", true}}};
  return set;
}

const workloads::KnobSet& context_knobs() {
  static const workloads::KnobSet set{"attention context", {{"seq_len", "32768", "context length S"}}};
  return set;
}

const workloads::KnobSet& data_knobs() {
  static const workloads::KnobSet set{
      "attention data",
      {{"inputs", "", "read q.npy [H_q,T_q,d], k.npy and v.npy [H_kv,S,d] from DIR"}}};
  return set;
}

const workloads::KnobSet& placement_knobs() {
  static const workloads::KnobSet set{
      "attention placement",
      {{"cubes_per_group", "auto", "cubes per KV head's group (C); auto: the default placement (docs/workloads.md)"},
       {"pes", "auto", "PEs per cube of a group (P); auto: the default placement"}}};
  return set;
}

const workloads::KnobSet& variant_knobs() {
  static const workloads::KnobSet set{
      "attention variant",
      {{"variant", "pipelined",
        "how a tile's work is issued: pipelined (tl ops, the next tile's Q.K^T ahead of this one's softmax), fused "
        "(one sequence per tile and per merge: an optional hardware sequencer) or naive (decode: each tile in order)"}}};
  return set;
}

Variant variant_of(const workloads::Values& v, bool naive_allowed) {
  const auto variant = parse_variant(v.text("variant"));
  if (!variant || (*variant == Variant::Naive && !naive_allowed))
    throw workloads::ConfigError("{variant} '" + workloads::ConfigError::literal(v.text("variant")) +
                                     "': allowed values: " + (naive_allowed ? "naive, " : "") + "pipelined, fused",
                                 true);
  return *variant;
}

std::optional<std::uint32_t> placement_count(const workloads::Values& v, const std::string& knob) {
  if (v.text(knob) == "auto") return std::nullopt;
  return v.count32(knob, 1, 4096);
}

AttentionShape shape_of(const workloads::Values& v, std::uint32_t t_q, bool context) {
  if (v.on("causal") && v.on("no_causal")) throw ConfigError("{causal} and {no_causal} contradict each other", true);
  AttentionShape a;
  if (context) a.s = v.count("seq_len", 0, 1u << 24);
  a.t_q = v.given("q_len") ? v.count32("q_len", 0, 1u << 24) : t_q;
  a.h_q = v.count32("heads_q", 0, 4096);
  a.h_kv = v.count32("heads_kv", 0, 4096);
  a.d = v.count32("head_dim", 0, 1u << 16);
  if (v.given("model")) {  // the preset's heads and head_dim, where no flag gives them
    const workloads::ModelPreset m = workloads::model_preset(v.text("model"));
    a.model = m.name;
    if (!v.given("heads_q")) a.h_q = m.heads_q;
    if (!v.given("heads_kv")) a.h_kv = m.heads_kv;
    if (!v.given("head_dim")) a.d = m.head_dim;
  }
  a.causal = !v.on("no_causal");
  a.dtype = workloads::dtype_of(v);
  return a;
}

AttentionData::AttentionData(const workloads::Values& v, bool data)
    : inputs_dir_(v.text("inputs")), outputs_dir_(v.text("outputs")), check_(v.on("check")) {
  if ((check_ || !outputs_dir_.empty()) && !data && inputs_dir_.empty())
    throw ConfigError("{check} and {outputs} need {data} (data mode) or {inputs}", true);
  data_ = data || !inputs_dir_.empty();
  seed_ = workloads::seed_of(v);
  if (outputs_dir_.empty()) return;
  if (!std::filesystem::is_directory(outputs_dir_))
    throw ConfigError("{outputs} " + ConfigError::literal(outputs_dir_) + ": no such folder; give an existing folder to write o.npy into");
  if (::access(outputs_dir_.c_str(), W_OK) != 0)
    throw ConfigError("{outputs} " + ConfigError::literal(outputs_dir_) + ": the folder is not writable");
}

void AttentionData::prepare(const AttentionShape& a) {
  if (!inputs_dir_.empty()) inputs_ = AttentionInputs::from_npy(inputs_dir_, a);
  else if (data_) inputs_ = AttentionInputs::random(a, seed_);
}

void AttentionData::finish(const AttentionShape& a, const HostTensor& o, workloads::Result& r) const {
  r.numerics = check_attention(a, *inputs_, o);
  r.numerics->enforced = check_;
  if (!outputs_dir_.empty()) write_npy(outputs_dir_ + "/o.npy", o);
}

double AttentionShape::hbm_bytes() const {
  return (2.0 * t_q * h_q + 2.0 * static_cast<double>(s) * h_kv) * d * static_cast<double>(dtype_bytes(dtype));
}

workloads::Result attention_result(const std::string& workload, const AttentionShape& a, bool data,
                                   const std::vector<SipId>& devices, std::uint64_t cycles, const Topology& topo) {
  workloads::Result r = workloads::Result::of(workload, devices, cycles, topo);
  r.mode = data ? "data" : "timing";
  std::vector<std::uint32_t> devs;
  for (const SipId d : devices) devs.push_back(d.value);
  r.knobs = {{"heads_q", a.h_q},   {"heads_kv", a.h_kv},          {"head_dim", a.d},
             {"seq_len", a.s},     {"q_len", a.t_q},              {"causal", a.causal},
             {"dtype", dtype_name(a.dtype)}, {"devices", devs}};
  if (!a.model.empty()) r.knobs["model"] = a.model;
  return r;
}

}  // namespace kb::gqa
