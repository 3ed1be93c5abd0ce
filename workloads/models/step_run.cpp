#include "workloads/models/step_run.h"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <numeric>

#include <nlohmann/json.hpp>

#include "base/dtype.h"
#include "base/units.h"
#include "kernels/gqa/helpers.h"
#include "kernels/layer/model_step.h"
#include "kernels/nn/rope.h"
#include "workloads/attention/placement.h"
#include "workloads/gqa_decode_batch/batch_run.h"
#include "workloads/workload.h"

namespace kb::workloads {

namespace {

std::uint32_t ceil_div(std::uint64_t a, std::uint64_t b) { return static_cast<std::uint32_t>((a + b - 1) / b); }
float round_bf16(float v) { return bf16_to_fp32(fp32_to_bf16(v)); }
std::int64_t i64(std::uint64_t v) { return static_cast<std::int64_t>(v); }

// Where a SIP's PEs sit among the KV-head groups.
struct Geometry {
  gqa::HeadPlacement heads;
  std::uint32_t sip_pes = 0, cube_pes = 0, ranks = 0;
  std::vector<std::uint32_t> starts;  // each group slot's first cube

  Geometry(const Topology& topo, std::uint32_t h_kv, std::size_t sips)
      : heads(gqa::place_heads(h_kv, sips, topo, false, std::nullopt, std::nullopt)),
        sip_pes(topo.pes_per_sip()),
        cube_pes(topo.cube.pes),
        ranks(heads.cubes * heads.pes) {
    for (std::uint32_t slot = 0; slot < heads.groups_per_sip; ++slot)
      starts.push_back(gqa::group_start(topo, heads.cubes, slot));
  }
  // The group slot and rank of a SIP's shard `i` (cube i / P, PE i % P), if it is in one.
  std::optional<std::pair<std::uint32_t, std::uint32_t>> role(const Mesh& mesh, std::uint32_t i) const {
    if (i % cube_pes >= heads.pes) return std::nullopt;
    for (std::uint32_t slot = 0; slot < starts.size(); ++slot)
      if (const auto idx = gqa::GroupGeometry::of(starts[slot], heads.cubes, mesh).index_of(CubeId(i / cube_pes)))
        return std::pair{slot, *idx * heads.pes + i % cube_pes};
    return std::nullopt;
  }
};

layer::LayerForm form_of(const StepConfig& c, const Geometry& geo) {
  const ModelPreset& m = c.model;
  layer::LayerForm f;
  f.hidden = m.hidden;
  f.head_dim = m.head_dim;
  f.g = m.heads_q / m.heads_kv;
  f.batch = c.batch();
  f.qkv_cols = ceil_div(std::uint64_t{f.g + 2} * m.head_dim, geo.ranks);
  f.o_cols = ceil_div(std::uint64_t{f.g} * m.head_dim, geo.ranks);
  f.layer_norm = m.norm == NormKind::Layer;
  f.parallel = m.block == BlockKind::Parallel;
  f.qkv_bias = m.qkv_bias;
  f.act = m.mlp == MlpKind::SwiGlu ? nn::Activation::Silu : nn::Activation::Gelu;
  f.gated = m.mlp != MlpKind::Gelu;
  f.eps = static_cast<float>(m.norm_eps);
  return f;
}

// Intermediate features per PE of the run.
std::uint32_t mlp_cols(const StepConfig& c, std::uint32_t pes) { return ceil_div(c.model.intermediate, pes); }

// W^T's columns `rows` of W [out, in] (a row index past `out`: a zero column): [in, rows].
HostTensor columns_of(const HostTensor& w, const std::vector<std::int64_t>& rows) {
  const auto out = w.shape[0], in = w.shape[1];
  HostTensor t;
  t.shape = {in, i64(rows.size())};
  t.data.assign(static_cast<std::size_t>(in) * rows.size(), 0.0f);
  for (std::int64_t k = 0; k < in; ++k)
    for (std::size_t j = 0; j < rows.size(); ++j)
      if (rows[j] < out) t.data[k * rows.size() + j] = w.data[rows[j] * in + k];
  return t;
}
// W's columns `cols` as rows: [cols, out] (a column past `in`: a zero row).
HostTensor rows_of_columns(const HostTensor& w, const std::vector<std::int64_t>& cols) {
  const auto out = w.shape[0], in = w.shape[1];
  HostTensor t;
  t.shape = {i64(cols.size()), out};
  t.data.assign(cols.size() * static_cast<std::size_t>(out), 0.0f);
  for (std::size_t j = 0; j < cols.size(); ++j)
    if (cols[j] < in)
      for (std::int64_t o = 0; o < out; ++o) t.data[j * out + o] = w.data[o * in + cols[j]];
  return t;
}
HostTensor stacked(const std::vector<HostTensor>& parts) {
  HostTensor t;
  t.shape = {0, parts.at(0).shape[1]};
  for (const HostTensor& p : parts) {
    t.shape[0] += p.shape[0];
    t.data.insert(t.data.end(), p.data.begin(), p.data.end());
  }
  return t;
}
std::vector<std::int64_t> run_of(std::int64_t first, std::int64_t count) {
  std::vector<std::int64_t> v(static_cast<std::size_t>(count));
  std::iota(v.begin(), v.end(), first);
  return v;
}

// A group's feature f of [Q | K | V] as (matrix, row) of the model's projections.
std::pair<const char*, std::int64_t> qkv_feature(const ModelPreset& m, std::uint32_t kv_head, std::int64_t f) {
  const std::int64_t d = m.head_dim, gd = i64(m.heads_q / m.heads_kv) * d;
  if (f < gd) return {"q_proj", kv_head * gd + f};
  if (f < gd + d) return {"k_proj", kv_head * d + f - gd};
  if (f < gd + 2 * d) return {"v_proj", kv_head * d + f - gd - d};
  return {nullptr, 0};
}

// The tensors of one layer on one SIP (device index `di`), from `values` or empty.
layer::LayerWeights place_layer(RuntimeContext& rt, const StepConfig& c, const Geometry& geo, const layer::LayerForm& f,
                                std::uint32_t di, SipId sip, std::uint32_t index, const LayerValues* values) {
  const Topology& topo = rt.system().topology();
  const ModelPreset& m = c.model;
  const DPPolicy every = DPPolicy::replicate(topo.cubes_per_sip(), geo.cube_pes);
  const DPPolicy dealt = DPPolicy::shard2d(topo.cubes_per_sip(), geo.cube_pes);
  const std::uint32_t ic = mlp_cols(c, geo.sip_pes * static_cast<std::uint32_t>(c.devices.size()));
  const std::int64_t h = m.hidden, pes = geo.sip_pes, norm_rows = f.layer_norm ? 2 : 1;
  const std::string at = "w.L" + std::to_string(index) + ".";
  auto put = [&](const std::string& name, const Shape& shape, DType dtype, const DPPolicy& p,
                 const std::function<HostTensor()>& host) {
    return values ? rt.from_host(at + name, host(), dtype, p, sip) : rt.empty(at + name, shape, dtype, p, sip);
  };
  auto norm = [&](const std::string& name) {
    return put(name, {norm_rows, h}, DType::fp32, every, [&] {
      std::vector<HostTensor> rows{values->weights.at(name)};
      if (f.layer_norm) rows.push_back(values->weights.at(name + ".bias"));
      return stacked(rows);
    });
  };
  // Per shard: the group features of its rank (qkv, o), or its run-wide MLP features.
  auto per_shard = [&](const std::function<HostTensor(std::uint32_t)>& shard) {
    std::vector<HostTensor> parts;
    for (std::uint32_t i = 0; i < geo.sip_pes; ++i) parts.push_back(shard(i));
    return stacked(parts);
  };
  auto group_features = [&](std::uint32_t i, std::uint32_t cols) -> std::optional<std::pair<std::uint32_t, std::vector<std::int64_t>>> {
    const auto role = geo.role(topo.mesh(), i);
    if (!role) return std::nullopt;
    return std::pair{di * geo.heads.groups_per_sip + role->first, run_of(i64(role->second) * cols, cols)};
  };
  layer::LayerWeights w;
  w.attn_norm = norm("input_layernorm");
  if (!f.parallel) w.mlp_norm = norm("post_attention_layernorm");
  w.qkv_t = put("qkv_t", {pes * h, f.qkv_cols}, DType::bf16, dealt, [&] {
    return per_shard([&](std::uint32_t i) {
      HostTensor t;
      t.shape = {h, f.qkv_cols};
      t.data.assign(static_cast<std::size_t>(h) * f.qkv_cols, 0.0f);
      if (const auto g = group_features(i, f.qkv_cols))
        for (std::uint32_t j = 0; j < f.qkv_cols; ++j)
          if (const auto [matrix, row] = qkv_feature(m, g->first, g->second[j]); matrix) {
            const HostTensor col = columns_of(values->weights.at(matrix), {row});
            for (std::int64_t k = 0; k < h; ++k) t.data[k * f.qkv_cols + j] = col.data[k];
          }
      return t;
    });
  });
  if (f.qkv_bias)
    w.qkv_bias = put("qkv_bias", {pes, f.qkv_cols}, DType::fp32, dealt, [&] {
      return per_shard([&](std::uint32_t i) {
        HostTensor t;
        t.shape = {1, f.qkv_cols};
        t.data.assign(f.qkv_cols, 0.0f);
        if (const auto g = group_features(i, f.qkv_cols))
          for (std::uint32_t j = 0; j < f.qkv_cols; ++j)
            if (const auto [matrix, row] = qkv_feature(m, g->first, g->second[j]); matrix)
              t.data[j] = values->weights.at(std::string(matrix) + ".bias").data[row];
        return t;
      });
    });
  w.o_t = put("o_t", {pes * f.o_cols, h}, DType::bf16, dealt, [&] {
    return per_shard([&](std::uint32_t i) {
      std::vector<std::int64_t> cols(f.o_cols, values->weights.at("o_proj").shape[1]);  // none: zero rows
      if (const auto g = group_features(i, f.o_cols)) {
        const std::int64_t gd = i64(f.g) * m.head_dim;
        for (std::uint32_t j = 0; j < f.o_cols; ++j)
          if (g->second[j] < gd) cols[j] = g->first * gd + g->second[j];
      }
      return rows_of_columns(values->weights.at("o_proj"), cols);
    });
  });
  auto features = [&](std::uint32_t i) { return run_of((i64(di) * pes + i) * ic, ic); };
  if (f.gated)
    w.gate_t = put("gate_t", {pes * h, ic}, DType::bf16, dealt,
                   [&] { return per_shard([&](std::uint32_t i) { return columns_of(values->weights.at("gate_proj"), features(i)); }); });
  w.up_t = put("up_t", {pes * h, ic}, DType::bf16, dealt,
               [&] { return per_shard([&](std::uint32_t i) { return columns_of(values->weights.at("up_proj"), features(i)); }); });
  w.down_t = put("down_t", {pes * ic, h}, DType::bf16, dealt, [&] {
    return per_shard([&](std::uint32_t i) { return rows_of_columns(values->weights.at("down_proj"), features(i)); });
  });
  return w;
}

// Batched decode's configuration for the step's attention.
gqa::BatchConfig attention_config(const StepConfig& c, const Geometry& geo) {
  gqa::BatchConfig a;
  a.h_q = c.model.heads_q;
  a.h_kv = c.model.heads_kv;
  a.d = c.model.head_dim;
  a.t_q = 1;
  a.s = *std::max_element(c.lens.begin(), c.lens.end());
  a.model = c.model.name;
  a.lens = c.lens;
  a.page_rows = c.page_rows;
  a.cubes = geo.heads.cubes;
  a.pes = geo.heads.pes;
  a.devices = c.devices;
  a.o_every_rank = true;
  // Through the attention a PE keeps x (fp32), its normalised copy (bf16) and the group's
  // Q, K and V in their few forms, with the RoPE tables.
  const std::uint64_t b = c.batch(), h = c.model.hidden, d = c.model.head_dim;
  a.tcm_reserved = b * (6 * h + 16 * std::uint64_t{a.g() + 2} * d + 8 * d) + 16 * 1024;
  return a;
}

// The caches before the step in batched decode's varlen layout, the new rows zero.
gqa::BatchInputs cache_inputs(const StepConfig& c, const LayerValues& v) {
  const ModelPreset& m = c.model;
  const std::uint64_t total = std::accumulate(c.lens.begin(), c.lens.end(), std::uint64_t{0});
  gqa::BatchInputs in;
  in.q.shape = {c.batch(), m.heads_q, 1, m.head_dim};
  in.q.data.assign(in.q.elements(), 0.0f);
  auto varlen = [&](const std::vector<HostTensor>& caches) {
    HostTensor t;
    t.shape = {m.heads_kv, i64(total), m.head_dim};
    t.data.assign(t.elements(), 0.0f);
    std::uint64_t first = 0;
    for (std::uint32_t r = 0; r < c.batch(); ++r) {
      const std::uint64_t held = c.lens[r] - 1;
      for (std::uint32_t hk = 0; hk < m.heads_kv; ++hk)
        std::copy_n(caches[r].data.begin() + static_cast<std::ptrdiff_t>(hk * held * m.head_dim), held * m.head_dim,
                    t.data.begin() + static_cast<std::ptrdiff_t>((hk * total + first) * m.head_dim));
      first += c.lens[r];
    }
    return t;
  };
  in.k = varlen(v.k_cache);
  in.v = varlen(v.v_cache);
  return in;
}

// The step's collectives: each group's, and the all-reduce over every PE of the run.
void plan_collectives(layer::StepPlan& s, const Topology& topo, const Geometry& geo, const std::vector<SipId>& devices) {
  const layer::LayerForm& f = s.form;
  for (const SipId sip : devices)
    for (const std::uint32_t start : geo.starts) {
      const gqa::GroupGeometry g = gqa::GroupGeometry::of(start, geo.heads.cubes, topo.mesh());
      collectives::Request q;
      for (std::uint32_t i = 0; i < g.cubes(); ++i)
        for (std::uint32_t p = 0; p < geo.heads.pes; ++p) q.ranks.push_back({PeCoord{sip, g.cube_at(i), PeId(p)}});
      q.cols = f.batch;
      layer::GroupPlan plan{sip, start, {}, {}};
      q.op = collectives::Op::AllGather;
      q.algorithm = collectives::Algorithm::OneShot;
      q.bytes = std::uint64_t{geo.ranks} * f.qkv_cols * f.batch * 4;
      plan.gather_qkv = collectives::make_plan(topo, q);
      plan.gather_qkv.tag = 1000;
      q.op = collectives::Op::ReduceScatter;
      q.algorithm = collectives::Algorithm::OneShot;
      q.bytes = std::uint64_t{geo.ranks} * f.o_cols * f.batch * 4;
      plan.scatter_o = collectives::make_plan(topo, q);
      plan.scatter_o.tag = 2000;
      s.groups.push_back(std::move(plan));
    }
  collectives::Request all;
  all.ranks = collectives::ranks_of_pes(topo, devices);
  all.bytes = std::uint64_t{f.batch} * f.hidden * 4;
  all.cols = 64;
  s.all_reduce = collectives::make_plan(topo, all);
  s.all_reduce.tag = 3000;
}

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

 private:
  inline static const std::vector<std::string> kOps = {
      "embed",     "embed_all_reduce", "attn_norm",  "qkv_proj",        "qkv_gather", "rope",
      "kv_append", "attention",        "o_scatter",  "o_proj",          "attn_all_reduce", "mlp_norm",
      "up_gate_proj", "activation",    "down_proj",  "mlp_all_reduce",  "final_norm", "lm_head",
      "pick_gather", "pick"};
  std::string last_;
  std::map<std::string, std::uint64_t> sums_;
  std::map<std::string, std::size_t> layers_of_;  // per PE: layers ended
  std::vector<std::uint64_t> ends_;
  std::uint64_t first_ = ~std::uint64_t{0};
};

// The ends of the model (model_step, timing mode): the vocabulary dealt over every PE of
// the run, each PE's pick gathered by all.
layer::Ends place_ends(RuntimeContext& rt, const StepConfig& c, const Geometry& geo, const layer::LayerForm& f) {
  const Topology& topo = rt.system().topology();
  const DPPolicy every = DPPolicy::replicate(topo.cubes_per_sip(), geo.cube_pes);
  const DPPolicy dealt = DPPolicy::shard2d(topo.cubes_per_sip(), geo.cube_pes);
  const auto ranks = static_cast<std::uint32_t>(c.devices.size()) * geo.sip_pes;
  const std::int64_t pes = geo.sip_pes, h = f.hidden, b = f.batch;
  layer::Ends e;
  e.vocab_rows = ceil_div(c.model.vocab, ranks);
  const std::uint32_t sips = topo.system.sips;
  for (auto* v : {&e.embed, &e.sums, &e.final_norm, &e.head_t, &e.picks, &e.rank_index, &e.next}) v->resize(sips);
  e.first_pe.assign(sips, 0);
  HostTensor index;
  index.shape = {b, ranks};
  for (std::int64_t r = 0; r < b; ++r)
    for (std::uint32_t i = 0; i < ranks; ++i) index.data.push_back(static_cast<float>(i));
  for (std::uint32_t di = 0; di < c.devices.size(); ++di) {
    const SipId sip = c.devices[di];
    const std::uint32_t i = sip.value;
    e.first_pe[i] = di * geo.sip_pes;
    e.embed[i] = rt.empty("w.embed", {pes * i64(e.vocab_rows), h}, DType::bf16, dealt, sip);
    e.sums[i] = rt.empty("embed_sums", {pes * b * h / 64, 64}, DType::fp32, dealt, sip);
    e.final_norm[i] = rt.empty("w.final_norm", {f.layer_norm ? 2 : 1, h}, DType::fp32, every, sip);
    e.head_t[i] = rt.empty("w.lm_head_t", {pes * h, i64(e.vocab_rows)}, DType::bf16, dealt, sip);
    e.picks[i] = rt.empty("picks", {pes * ranks * b, 2}, DType::fp32, dealt, sip);
    e.rank_index[i] = rt.from_host("rank_index", index, DType::fp32, every, sip);
    e.next[i] = rt.empty("next_tokens", {b, 1}, DType::fp32, every, sip);
  }
  collectives::Request q;
  q.op = collectives::Op::AllGather;
  q.ranks = collectives::ranks_of_pes(topo, c.devices);
  q.bytes = std::uint64_t{ranks} * f.batch * 2 * 4;
  q.cols = 2;
  e.gather_picks = collectives::make_plan(topo, q);
  e.gather_picks.tag = 4000;
  // The step's tokens: any ids, spread over the vocabulary.
  for (std::uint32_t r = 0; r < f.batch; ++r) e.tokens.push_back((std::uint64_t{r} * 7919 + 17) % c.model.vocab);
  return e;
}

}  // namespace

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
  gqa::validate(attention_config(placed, geo), topo);
  return tp;
}

StepValues StepValues::random(const StepConfig& c, std::uint32_t seed) {
  const ModelPreset& m = c.model;
  const std::int64_t h = m.hidden, d = m.head_dim, q = i64(m.heads_q) * d, kv = i64(m.heads_kv) * d, in = m.intermediate;
  StepValues v;
  v.x = gqa::random_normal({c.batch(), h}, seed);
  for (const std::uint64_t len : c.lens) v.positions.push_back(i64(len) - 1);
  std::uint32_t next = seed + 1;
  auto weight = [&](Shape shape) {  // bf16 values of scale 1 / sqrt(in): activations stay O(1)
    HostTensor t = gqa::random_normal(shape, next++);
    const float scale = 1.0f / std::sqrt(static_cast<float>(shape[1]));
    for (float& x : t.data) x = round_bf16(x * scale);
    return t;
  };
  auto around = [&](float base) {
    HostTensor t = gqa::random_normal({1, h}, next++);
    for (float& x : t.data) x = base + 0.1f * x;
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
      for (float& x : b.data) x *= 0.1f;
      w[std::string(p) + ".bias"] = b;
    }
  w["o_proj"] = weight({h, q});
  if (m.mlp != MlpKind::Gelu) w["gate_proj"] = weight({in, h});
  w["up_proj"] = weight({in, h});
  w["down_proj"] = weight({h, in});
  for (const std::uint64_t len : c.lens) {
    for (auto* cache : {&v.layer.k_cache, &v.layer.v_cache}) {
      HostTensor t = gqa::random_normal({m.heads_kv, i64(len) - 1, d}, next++);
      for (float& x : t.data) x = round_bf16(x);
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
  layer::StepPlan s;
  s.form = form_of(cfg, geo);
  const layer::LayerForm& f = s.form;
  s.cubes = geo.heads.cubes;
  s.pes = geo.heads.pes;
  plan_collectives(s, topo, geo, res.devices);
  const std::uint32_t b = cfg.batch(), sips = topo.system.sips;
  const DPPolicy every = DPPolicy::replicate(topo.cubes_per_sip(), geo.cube_pes);
  const DPPolicy dealt = DPPolicy::shard2d(topo.cubes_per_sip(), geo.cube_pes);
  const std::int64_t pes = geo.sip_pes;
  s.qkv_buffer.resize(sips);
  s.o_buffer.resize(sips);
  s.sum_buffer.resize(sips);
  s.rope_cos.resize(sips);
  s.rope_sin.resize(sips);
  std::vector<std::int64_t> positions;
  for (const std::uint64_t len : cfg.lens) positions.push_back(i64(len) - 1);
  const nn::RopeTables rope = nn::rope_tables(positions, m.head_dim, m.rope_theta, m.rope_scaling);
  for (const SipId sip : res.devices) {
    const std::uint32_t i = sip.value;
    s.qkv_buffer[i] = rt.empty("qkv_gather", {pes * geo.ranks * f.qkv_cols, b}, DType::fp32, dealt, sip);
    s.o_buffer[i] = rt.empty("o_scatter", {pes * geo.ranks * f.o_cols, b}, DType::fp32, dealt, sip);
    s.sum_buffer[i] = rt.empty("partial_sums", {pes * b * f.hidden / 64, 64}, DType::fp32, dealt, sip);
    s.rope_cos[i] = rt.from_host("rope_cos", rope.cos, DType::fp32, every, sip);
    s.rope_sin[i] = rt.from_host("rope_sin", rope.sin, DType::fp32, every, sip);
  }
  // Each layer's weights and cache; the pages are dealt alike for every layer.
  const gqa::BatchConfig attention = attention_config(cfg, geo);
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
      for (const auto& layer : layers) layer::decoder_layer(tl, s, layer.at(sip.value), x);
      if (tl.coord() == first) tl.store(y_out[sip.value], tl.shard_rows(y_out[sip.value]), x);
    });
  rt.couple_devices();
  Breakdown breakdown(f.parallel);
  {
    const OpLog::Listening listening = rt.op_log().listen([&](const OpRecord& r) {
      breakdown.add(r);
      if (r.bytes == 0 || (r.engine.str() != "dma" && r.kind.str() != "composite")) return;
      const std::string& t = r.tensor;
      if (t.rfind("w.L", 0) == 0) res.weight_bytes += r.bytes;
      else if (t.rfind("w.", 0) == 0) res.end_weight_bytes += r.bytes;
      else if (t.rfind("k.h", 0) == 0 || t.rfind("v.h", 0) == 0) res.kv_bytes += r.bytes;
      else if (t == "embed_sums" || t == "picks" || t == "rank_index" || t == "next_tokens") res.end_activation_bytes += r.bytes;
      else res.activation_bytes += r.bytes;
    });
    rt.run();
  }
  res.cycles = rt.last_run_cycles();
  res.layer_cycles = breakdown.layer_cycles();
  res.by_op = breakdown.by_op();
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
