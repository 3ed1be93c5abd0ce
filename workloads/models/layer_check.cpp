#include "workloads/models/layer_check.h"

#include <cmath>

#include <nlohmann/json.hpp>

#include "base/dtype.h"
#include "base/output_file.h"
#include "kernels/nn/rope.h"

namespace kb::workloads {

namespace {

using Vec = std::vector<double>;

// W x for W [out, in].
Vec times(const HostTensor& w, const Vec& x) {
  const auto out = static_cast<std::size_t>(w.shape[0]), in = static_cast<std::size_t>(w.shape[1]);
  Vec y(out, 0.0);
  for (std::size_t o = 0; o < out; ++o)
    for (std::size_t k = 0; k < in; ++k) y[o] += double(w.data[o * in + k]) * x[k];
  return y;
}

double gelu(double x) { return 0.5 * x * (1 + std::tanh(std::sqrt(2 / M_PI) * (x + 0.044715 * x * x * x))); }
double silu(double x) { return x / (1 + std::exp(-x)); }

class Layer {
 public:
  Layer(const StepConfig& c, const StepValues& v, bool storage)
      : c_(c), m_(c.model), v_(v), w_(v.layer.weights), storage_(storage),
        inv_freq_(nn::rope_inv_freq(c.model.head_dim, c.model.rope_theta, c.model.rope_scaling)) {}

  // Request r's new tokens (rows `first` on of x) through the layer, each attending to the
  // cache and the new tokens up to itself: y, and the new K and V rows (every KV head's).
  void request(std::uint32_t r, std::size_t first, std::vector<Vec>& y, std::vector<Vec>& k_new,
               std::vector<Vec>& v_new) const {
    const std::uint32_t d = m_.head_dim, g = m_.heads_q / m_.heads_kv;
    const HostTensor& kc = v_.layer.k_cache[r];
    const HostTensor& vc = v_.layer.v_cache[r];
    const auto held = static_cast<std::size_t>(kc.shape[1]), news = static_cast<std::size_t>(c_.news(r));
    std::vector<Vec> xs, ns, qs;
    for (std::size_t j = 0; j < news; ++j) {
      const Vec x(v_.x.data.begin() + (first + j) * m_.hidden, v_.x.data.begin() + (first + j + 1) * m_.hidden);
      const Vec n = norm(x, "input_layernorm");
      Vec q = project("q_proj", n), k = project("k_proj", n);
      v_new.push_back(round(project("v_proj", n)));
      const double pos = static_cast<double>(v_.positions[first + j]);
      for (std::uint32_t h = 0; h < m_.heads_q; ++h) rotate(q, h * d, pos);
      for (std::uint32_t h = 0; h < m_.heads_kv; ++h) rotate(k, h * d, pos);
      qs.push_back(round(q));
      k_new.push_back(round(k));
      xs.push_back(x);
      ns.push_back(n);
    }
    for (std::size_t j = 0; j < xs.size(); ++j) {
      // Each query head over its KV head's cache and the new rows up to this token's.
      Vec o(std::size_t{m_.heads_q} * d, 0.0);
      for (std::uint32_t h = 0; h < m_.heads_q; ++h) {
        const std::uint32_t kh = h / g;
        auto key = [&](std::size_t t, std::uint32_t i) {
          return t < held ? double(kc.data[(kh * held + t) * d + i]) : k_new[t - held][kh * d + i];
        };
        auto value = [&](std::size_t t, std::uint32_t i) {
          return t < held ? double(vc.data[(kh * held + t) * d + i]) : v_new[t - held][kh * d + i];
        };
        Vec s(held + j + 1);
        double top = -INFINITY;
        for (std::size_t t = 0; t < s.size(); ++t) {
          double dot = 0;
          for (std::uint32_t i = 0; i < d; ++i) dot += qs[j][h * d + i] * key(t, i);
          s[t] = dot / std::sqrt(double(d));
          top = std::max(top, s[t]);
        }
        double l = 0;
        for (double& e : s) l += (e = std::exp(e - top));
        for (std::uint32_t i = 0; i < d; ++i) {
          double acc = 0;
          for (std::size_t t = 0; t < s.size(); ++t) acc += s[t] * value(t, i);
          o[h * d + i] = acc / l;
        }
      }
      const Vec attn = times(w_.at("o_proj"), round(o));
      Vec out = xs[j];
      if (m_.block == BlockKind::Parallel) {
        const Vec mlp = feed_forward(ns[j]);
        for (std::size_t i = 0; i < out.size(); ++i) out[i] += attn[i] + mlp[i];
      } else {
        for (std::size_t i = 0; i < out.size(); ++i) out[i] += attn[i];
        const Vec mlp = feed_forward(norm(out, "post_attention_layernorm"));
        for (std::size_t i = 0; i < out.size(); ++i) out[i] += mlp[i];
      }
      y.push_back(std::move(out));
    }
  }

 private:
  Vec round(Vec v) const {
    if (storage_)
      for (double& x : v) x = bf16_to_fp32(fp32_to_bf16(static_cast<float>(x)));
    return v;
  }
  // The norm's output, converted to the GEMMs' bf16.
  Vec norm(const Vec& x, const std::string& name) const {
    const auto h = static_cast<double>(x.size());
    const std::vector<float>& w = w_.at(name).data;
    Vec out(x.size());
    if (m_.norm == NormKind::Rms) {
      double ss = 0;
      for (const double e : x) ss += e * e;
      const double inv = 1 / std::sqrt(ss / h + m_.norm_eps);
      for (std::size_t k = 0; k < x.size(); ++k) out[k] = x[k] * inv * w[k];
    } else {
      double mean = 0, var = 0;
      for (const double e : x) mean += e / h;
      for (const double e : x) var += (e - mean) * (e - mean) / h;
      const double inv = 1 / std::sqrt(var + m_.norm_eps);
      const std::vector<float>& b = w_.at(name + ".bias").data;
      for (std::size_t k = 0; k < x.size(); ++k) out[k] = (x[k] - mean) * inv * w[k] + b[k];
    }
    return round(out);
  }
  Vec project(const std::string& name, const Vec& n) const {
    Vec y = times(w_.at(name), n);
    if (const auto b = w_.find(name + ".bias"); b != w_.end())
      for (std::size_t i = 0; i < y.size(); ++i) y[i] += b->second.data[i];
    return y;
  }
  void rotate(Vec& x, std::size_t at, double pos) const {
    const std::size_t half = inv_freq_.size();
    for (std::size_t i = 0; i < half; ++i) {
      const double c = std::cos(pos * inv_freq_[i]), s = std::sin(pos * inv_freq_[i]);
      const double x1 = x[at + i], x2 = x[at + half + i];
      x[at + i] = x1 * c - x2 * s;
      x[at + half + i] = x2 * c + x1 * s;
    }
  }
  Vec feed_forward(const Vec& n) const {
    const Vec up = times(w_.at("up_proj"), n);
    Vec act(up.size());
    if (m_.mlp == MlpKind::Gelu) {
      for (std::size_t i = 0; i < up.size(); ++i) act[i] = gelu(up[i]);
    } else {
      const Vec gate = times(w_.at("gate_proj"), n);
      for (std::size_t i = 0; i < up.size(); ++i)
        act[i] = (m_.mlp == MlpKind::SwiGlu ? silu(gate[i]) : gelu(gate[i])) * up[i];
    }
    return times(w_.at("down_proj"), round(act));
  }

  const StepConfig& c_;
  const ModelPreset& m_;
  const StepValues& v_;
  const std::map<std::string, HostTensor>& w_;
  bool storage_;
  std::vector<double> inv_freq_;
};

double max_diff(const HostTensor& a, const HostTensor& b) {
  double e = 0;
  for (std::size_t i = 0; i < a.data.size(); ++i) e = std::max(e, std::abs(double(a.data[i]) - double(b.data[i])));
  return e;
}

}  // namespace

LayerOutputs reference_layer(const StepConfig& c, const StepValues& v, bool storage) {
  const Layer layer(c, v, storage);
  const ModelPreset& m = c.model;
  LayerOutputs out;
  const auto tokens = static_cast<std::int64_t>(c.tokens());
  out.y.shape = {tokens, m.hidden};
  out.k_new.shape = out.v_new.shape = {tokens, m.heads_kv, m.head_dim};
  std::size_t first = 0;
  for (std::uint32_t r = 0; r < c.batch(); ++r) {
    std::vector<Vec> y, k, val;
    layer.request(r, first, y, k, val);
    for (std::size_t j = 0; j < y.size(); ++j) {
      out.y.data.insert(out.y.data.end(), y[j].begin(), y[j].end());
      out.k_new.data.insert(out.k_new.data.end(), k[j].begin(), k[j].end());
      out.v_new.data.insert(out.v_new.data.end(), val[j].begin(), val[j].end());
    }
    first += y.size();
  }
  return out;
}

Numerics check_layer(const StepConfig& c, const StepValues& v, const LayerOutputs& got) {
  const LayerOutputs exact = reference_layer(c, v, false), naive = reference_layer(c, v, true);
  Numerics n;
  n.error = max_diff(got.y, exact.y);
  n.naive_error = max_diff(naive.y, exact.y);
  n.tolerance = 2 * n.naive_error + 1e-5;
  n.pass = n.error <= n.tolerance;
  return n;
}

void write_layer_files(const std::string& dir, const StepConfig& c, const StepValues& v, const LayerOutputs& out) {
  const ModelPreset& m = c.model;
  write_npy(dir + "/x.npy", v.x);
  HostTensor positions;
  positions.shape = {static_cast<std::int64_t>(v.positions.size())};
  for (const std::int64_t p : v.positions) positions.data.push_back(static_cast<float>(p));
  write_npy(dir + "/positions.npy", positions);
  for (const auto& [name, w] : v.layer.weights) {
    HostTensor t = w;
    if (t.shape[0] == 1) t.shape = {t.shape[1]};  // norms and biases: [h]
    write_npy(dir + "/" + name + ".npy", t);
  }
  for (std::uint32_t r = 0; r < c.batch(); ++r) {
    write_npy(dir + "/k_cache_" + std::to_string(r) + ".npy", v.layer.k_cache[r]);
    write_npy(dir + "/v_cache_" + std::to_string(r) + ".npy", v.layer.v_cache[r]);
  }
  write_npy(dir + "/y.npy", out.y);
  write_npy(dir + "/k_new.npy", out.k_new);
  write_npy(dir + "/v_new.npy", out.v_new);
  std::vector<std::uint64_t> news;  // per request: its rows of x, one after another
  for (std::uint32_t r = 0; r < c.batch(); ++r) news.push_back(c.news(r));
  nlohmann::json config = {{"model", m.name},
                           {"hidden_size", m.hidden},
                           {"intermediate_size", m.intermediate},
                           {"num_attention_heads", m.heads_q},
                           {"num_key_value_heads", m.heads_kv},
                           {"head_dim", m.head_dim},
                           {"rope_theta", m.rope_theta},
                           {"rms_norm_eps", m.norm_eps},
                           {"norm", norm_name(m.norm)},
                           {"mlp", mlp_name(m.mlp)},
                           {"block", block_name(m.block)},
                           {"new_tokens", news}};
  if (m.rope_scaling.on())
    config["rope_scaling"] = {{"rope_type", "llama3"},
                              {"factor", m.rope_scaling.factor},
                              {"low_freq_factor", m.rope_scaling.low_freq_factor},
                              {"high_freq_factor", m.rope_scaling.high_freq_factor},
                              {"original_max_position_embeddings", m.rope_scaling.original_max_position}};
  write_file_atomically(dir + "/config.json", config.dump(2) + "\n");
}

}  // namespace kb::workloads
