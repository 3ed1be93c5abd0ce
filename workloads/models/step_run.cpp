#include "workloads/models/step_run.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <numeric>
#include <set>

#include "base/dtype.h"
#include "base/units.h"
#include "kernels/nn/rope.h"
#include "workloads/models/layer_placement.h"
#include "workloads/models/prefill_placement.h"
#include "workloads/workload.h"

namespace kb::workloads {

namespace {

float round_bf16(float v) { return bf16_to_fp32(fp32_to_bf16(v)); }
std::int64_t i64(std::uint64_t v) { return static_cast<std::int64_t>(v); }

// Cycles per op: the mean over PEs of the phases' spans, the attention kernel's own
// phases counted as attention; and where each layer ends: the latest end of its last
// all-reduce, a point every PE passes together.
class Breakdown {
 public:
  explicit Breakdown(bool parallel) : last_(parallel ? "attn_all_reduce" : "mlp_all_reduce") {}
  void add(const OpRecord& r) {
    if (r.engine.str() != "phase") return;
    std::string name = r.kind.str();
    if (std::find(kOps.begin(), kOps.end(), name) == kOps.end()) name = "attention";
    sums_[name] += r.end - r.start;
    const std::string pe = r.pe.str();
    if (name == "attn_norm" && layers_of_[pe] == 0) first_ = std::min(first_, r.start);
    if (name == last_) {
      const std::size_t layer = layers_of_[pe]++;
      if (ends_.size() <= layer) ends_.resize(layer + 1, 0);
      ends_[layer] = std::max(ends_[layer], r.end);
    }
  }
  std::vector<std::pair<std::string, double>> by_op() const {
    std::vector<std::pair<std::string, double>> out;
    for (const std::string& op : kOps)
      if (const auto it = sums_.find(op); it != sums_.end())
        out.emplace_back(op, static_cast<double>(it->second) / static_cast<double>(layers_of_.size()));
    return out;
  }
  // A layer's cycles in the steady state: between the ends of the first and the last
  // layer, or the one layer's span.
  double layer_cycles() const {
    if (ends_.empty()) return 0;
    if (ends_.size() == 1) return static_cast<double>(ends_[0] - first_);
    return static_cast<double>(ends_.back() - ends_.front()) / static_cast<double>(ends_.size() - 1);
  }
  // The simulated layers, from the first one's start to the last one's end. What a
  // layer loads ahead for the next (its first weight tiles) falls in the span of the one
  // before, so the span holds as many layers' work as it has layers.
  LayerSpan layer_span() const {
    if (ends_.empty()) return {};
    return {first_, ends_.back(), static_cast<std::uint32_t>(ends_.size())};
  }

 private:
  inline static const std::vector<std::string> kOps = {
      "embed",     "embed_all_reduce", "attn_norm",  "qkv_proj",        "qkv_gather", "rope",
      "kv_append", "attention",        "o_scatter",  "o_proj",          "attn_all_reduce", "mlp_norm",
      "up_gate_proj", "activation",    "down_proj",  "mlp_all_reduce",  "last_tokens", "final_norm", "lm_head",
      "pick_gather", "pick"};
  std::string last_;
  std::map<std::string, std::uint64_t> sums_;
  std::map<std::string, std::size_t> layers_of_;  // per PE: layers ended
  std::vector<std::uint64_t> ends_;
  std::uint64_t first_ = ~std::uint64_t{0};
};

// Runs the launched step and measures it: cycles, the steady-state layer, the time by op
// and the bytes by tensor.
void measure(RuntimeContext& rt, bool parallel, StepResult& res) {
  rt.couple_devices();
  Breakdown breakdown(parallel);
  {
    const OpLog::Listening listening = rt.op_log().listen([&](const OpRecord& r) {
      breakdown.add(r);
      if (r.bytes == 0 || (r.engine.str() != "dma" && r.kind.str() != "composite")) return;
      const std::string& t = r.tensor;
      if (t.rfind("w.L", 0) == 0) res.weight_bytes += r.bytes;
      else if (t.rfind("w.", 0) == 0) res.end_weight_bytes += r.bytes;
      else if (t.rfind("k.h", 0) == 0 || t.rfind("v.h", 0) == 0) res.kv_bytes += r.bytes;
      else if (t == "picks" || t == "rank_index" || t == "next_tokens") res.end_activation_bytes += r.bytes;
      else res.activation_bytes += r.bytes;
    });
    rt.run();
  }
  res.cycles = rt.last_run_cycles();
  res.layers = breakdown.layer_span();
  res.layer_cycles = breakdown.layer_cycles();
  res.by_op = breakdown.by_op();
}

// A prefill step (docs/models.md, Prefill): placed by prefill_placement, each layer the
// prefill layer on every PE.
StepResult run_prefill(RuntimeContext& rt, const StepConfig& c, const Geometry& geo, const StepValues* values,
                       StepResult res) {
  const PrefillStep step = place_prefill(rt, c, geo, values);
  for (const SipId sip : c.devices)
    rt.launch(sip, c.ends ? "model_step" : "decoder_layer", [&, sip](tl::Ctx& tl) {
      if (c.ends) return layer::prefill_step(tl, step.plan, step.ends, step.layers);
      for (const auto& layer : step.layers) layer::prefill_layer(tl, step.plan, layer.at(sip.value));
    });
  measure(rt, step.plan.form.parallel, res);
  if (rt.data_mode()) res.out = read_prefill(rt, c, geo, step);
  return res;
}

}  // namespace

std::uint64_t StepConfig::tokens() const {
  std::uint64_t n = 0;
  for (std::uint32_t r = 0; r < batch(); ++r) n += news(r);
  return n;
}

TpPlan check_step(const StepConfig& c, const Topology& topo) {
  const ModelPreset& m = c.model;
  const auto sips = static_cast<std::uint32_t>(gqa::run_devices(c.devices, topo).size());
  if (c.lens.empty()) throw ConfigError("{batch}: no request");
  for (const std::uint64_t len : c.lens)
    if (len < 1) throw ConfigError("{batch}: a context of 0 tokens; each request's context holds its new token");
  const TpPlan tp = plan_tensor_parallel(m, topo, sips);
  if (m.heads_kv < sips)
    throw ConfigError("model " + ConfigError::literal(m.name) + ": its " + std::to_string(m.heads_kv) +
                      " KV heads are fewer than the " + std::to_string(sips) +
                      " SIPs of {devices}; a layer places each KV head on a CUBE group of one SIP: use at most " +
                      std::to_string(m.heads_kv) + " SIPs");
  check_kv_fits(m, tp, std::accumulate(c.lens.begin(), c.lens.end(), std::uint64_t{0}));
  if (c.prefill) {
    check_prefill(c, topo, tp);
    return tp;
  }
  // What a PE's TCM holds at the layer's fullest moments, per request: the norm (x, its
  // three fp32 temporaries and the bf16 result), and the MLP (x, the normalised copy and
  // the partial sum, and its features up, gate and activated, fp32 and bf16) beside the
  // two weight streams' staging (an eighth of the TCM each). The attention plans its
  // tiles within what the layer leaves it (gqa::validate below).
  const std::uint64_t h = m.hidden, ic = mlp_cols(c, sips * topo.pes_per_sip());
  const std::uint64_t tcm = topo.pe.tcm_bytes, norm = 20 * h, mlp = 10 * h + 14 * ic;
  const std::uint64_t most = std::min(tcm / norm, (tcm - tcm / 4) / mlp);
  if (c.batch() > most)
    throw ConfigError("{batch}: " + std::to_string(c.batch()) + " requests need " +
                      units::format_bytes(c.batch() * std::max(norm, mlp)) + " of activations in each PE's TCM of " +
                      units::format_bytes(tcm) + ": at most " + std::to_string(most) + " requests a step for " +
                      ConfigError::literal(m.name));
  const Geometry geo(topo, m.heads_kv, sips);
  StepConfig placed = c;
  placed.devices = gqa::run_devices(c.devices, topo);
  gqa::validate(attention_config(placed, geo, form_of(placed, geo, topo), topo), topo);
  return tp;
}

StepValues StepValues::random(const StepConfig& c, std::uint32_t seed) {
  const ModelPreset& m = c.model;
  const std::int64_t h = m.hidden, d = m.head_dim, q = i64(m.heads_q) * d, kv = i64(m.heads_kv) * d, in = m.intermediate;
  StepValues v;
  v.x = gqa::random_normal({i64(c.tokens()), h}, seed);
  for (std::uint32_t r = 0; r < c.batch(); ++r)
    for (std::uint64_t p = c.lens[r] - c.news(r); p < c.lens[r]; ++p) v.positions.push_back(i64(p));
  std::uint32_t next = seed + 1;
  auto weight = [&](Shape shape) {  // bf16 values of scale 1 / sqrt(in): activations stay O(1)
    HostTensor t = gqa::random_normal(shape, next++);
    const float scale = 1.0f / std::sqrt(static_cast<float>(shape[1]));
    for (float& e : t.data) e = round_bf16(e * scale);
    return t;
  };
  auto around = [&](float base) {
    HostTensor t = gqa::random_normal({1, h}, next++);
    for (float& e : t.data) e = base + 0.1f * e;
    return t;
  };
  auto& w = v.layer.weights;
  w["input_layernorm"] = around(1);
  if (m.block != BlockKind::Parallel) w["post_attention_layernorm"] = around(1);
  if (m.norm == NormKind::Layer) {
    w["input_layernorm.bias"] = around(0);
    if (m.block != BlockKind::Parallel) w["post_attention_layernorm.bias"] = around(0);
  }
  w["q_proj"] = weight({q, h});
  w["k_proj"] = weight({kv, h});
  w["v_proj"] = weight({kv, h});
  if (m.qkv_bias)
    for (const char* p : {"q_proj", "k_proj", "v_proj"}) {
      HostTensor b = gqa::random_normal({1, w[p].shape[0]}, next++);
      for (float& e : b.data) e *= 0.1f;
      w[std::string(p) + ".bias"] = b;
    }
  w["o_proj"] = weight({h, q});
  if (m.mlp != MlpKind::Gelu) w["gate_proj"] = weight({in, h});
  w["up_proj"] = weight({in, h});
  w["down_proj"] = weight({h, in});
  for (std::uint32_t r = 0; r < c.batch(); ++r) {
    for (auto* cache : {&v.layer.k_cache, &v.layer.v_cache}) {
      HostTensor t = gqa::random_normal({m.heads_kv, i64(c.lens[r] - c.news(r)), d}, next++);
      for (float& e : t.data) e = round_bf16(e);
      cache->push_back(std::move(t));
    }
  }
  return v;
}

StepResult run_step(RuntimeContext& rt, const StepConfig& c, const StepValues* values) {
  const Topology& topo = rt.system().topology();
  check_step(c, topo);
  if (rt.data_mode() && (values == nullptr || c.ends || c.layers != 1))
    throw ConfigError("data mode runs one decoder layer (decoder_layer), checked against fp64");
  const ModelPreset& m = c.model;
  StepResult res;
  res.devices = gqa::run_devices(c.devices, topo);
  StepConfig cfg = c;
  cfg.devices = res.devices;
  const Geometry geo(topo, m.heads_kv, res.devices.size());
  if (c.prefill) return run_prefill(rt, cfg, geo, values, std::move(res));
  layer::StepPlan s;
  s.form = form_of(cfg, geo, topo);
  const layer::LayerForm& f = s.form;
  s.cubes = geo.heads.cubes;
  s.pes = geo.heads.pes;
  plan_collectives(s, topo, geo, res.devices);
  const std::uint32_t b = cfg.batch(), sips = topo.system.sips;
  const DPPolicy every = DPPolicy::replicate(topo.cubes_per_sip(), geo.cube_pes);
  s.rope_cos.resize(sips);
  s.rope_sin.resize(sips);
  std::vector<std::int64_t> positions;
  for (const std::uint64_t len : cfg.lens) positions.push_back(i64(len) - 1);
  const nn::RopeTables rope = nn::rope_tables(positions, m.head_dim, m.rope_theta, m.rope_scaling);
  for (const SipId sip : res.devices) {
    const std::uint32_t i = sip.value;
    s.rope_cos[i] = rt.from_host("rope_cos", rope.cos, DType::fp32, every, sip);
    s.rope_sin[i] = rt.from_host("rope_sin", rope.sin, DType::fp32, every, sip);
  }
  // Each layer's weights and cache; the pages are dealt alike for every layer.
  const gqa::BatchConfig attention = attention_config(cfg, geo, f, topo);
  std::optional<gqa::BatchInputs> caches;
  if (values) caches = cache_inputs(cfg, values->layer);
  std::vector<std::vector<layer::LayerWeights>> layers(cfg.layers, std::vector<layer::LayerWeights>(sips));
  std::vector<gqa::BatchPlan> plans;
  for (std::uint32_t l = 0; l < cfg.layers; ++l) {
    plans.push_back(gqa::plan_decode_batch(rt, attention, caches ? &*caches : nullptr));
    for (std::uint32_t di = 0; di < res.devices.size(); ++di) {
      const SipId sip = res.devices[di];
      layers[l][sip.value] = place_layer(rt, cfg, geo, f, di, sip, l, values ? &values->layer : nullptr);
      layers[l][sip.value].attention = plans.back().params[di];
    }
  }
  const gqa::PagedKv& kv = plans.front().kv;
  for (std::uint32_t r = 0; r < b; ++r) {
    const std::uint64_t pos = cfg.lens[r] - 1;
    s.appends.push_back({r, kv.tables[r][pos / cfg.page_rows].rank, kv.cache_row(r, pos, plans.front().rank_rows)});
  }
  const layer::Ends ends = c.ends ? place_ends(rt, cfg, geo, f) : layer::Ends{};
  // The step's input and output on every PE (the first PE stores y).
  std::vector<DeviceTensor> x_in(sips), y_out(sips);
  for (const SipId sip : res.devices) {
    x_in[sip.value] = values ? rt.from_host("x", values->x, DType::fp32, every, sip)
                             : rt.empty("x", {b, f.hidden}, DType::fp32, every, sip);
    y_out[sip.value] = rt.empty("y", {b, f.hidden}, DType::fp32, every, sip);
  }
  const PeCoord first{res.devices.front(), CubeId(0), PeId(0)};
  for (const SipId sip : res.devices)
    rt.launch(sip, c.ends ? "model_step" : "decoder_layer", [&, sip](tl::Ctx& tl) {
      if (c.ends) return layer::model_step(tl, s, ends, layers);
      const tl::Tensor x = tl.persistent({b, f.hidden}, DType::fp32, "x");
      tl.load(x_in[sip.value], tl.shard_rows(x_in[sip.value]), &x);
      layer::decoder_layers(tl, s, layers, x);
      if (tl.coord() == first) tl.store(y_out[sip.value], tl.shard_rows(y_out[sip.value]), x);
    });
  measure(rt, f.parallel, res);
  if (rt.data_mode()) {
    LayerOutputs out;
    out.y = rt.read(y_out[first.sip.value]);
    out.k_new.shape = out.v_new.shape = {b, m.heads_kv, m.head_dim};
    for (std::uint32_t hk = 0; hk < m.heads_kv; ++hk) {
      const gqa::DecodeGroup& grp =
          plans.back().params[hk / geo.heads.groups_per_sip]->groups[hk % geo.heads.groups_per_sip];
      const HostTensor k = rt.read(grp.k), v = rt.read(grp.v);
      for (std::uint32_t r = 0; r < b; ++r) {
        const std::uint64_t row = s.appends[r].row;
        const auto at = static_cast<std::ptrdiff_t>(row * m.head_dim);
        std::copy_n(k.data.begin() + at, m.head_dim, std::back_inserter(out.k_new.data));
        std::copy_n(v.data.begin() + at, m.head_dim, std::back_inserter(out.v_new.data));
      }
    }
    // Gathered head by head; the layout is request-major.
    HostTensor k = out.k_new, v = out.v_new;
    for (std::uint32_t hk = 0; hk < m.heads_kv; ++hk)
      for (std::uint32_t r = 0; r < b; ++r)
        for (std::uint32_t j = 0; j < m.head_dim; ++j) {
          out.k_new.data[(r * m.heads_kv + hk) * m.head_dim + j] = k.data[(hk * b + r) * m.head_dim + j];
          out.v_new.data[(r * m.heads_kv + hk) * m.head_dim + j] = v.data[(hk * b + r) * m.head_dim + j];
        }
    res.out = std::move(out);
  }
  return res;
}

}  // namespace kb::workloads
