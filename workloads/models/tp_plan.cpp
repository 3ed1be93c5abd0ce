#include "workloads/models/tp_plan.h"

#include "base/units.h"
#include "workloads/workload.h"

namespace kb::workloads {

namespace {

constexpr std::uint64_t kWeightBytes = 2;  // bf16

std::uint64_t ceil_div(std::uint64_t a, std::uint64_t b) { return (a + b - 1) / b; }

// Why the heads do not split over `sips` ("" when they do).
std::string heads_problem(const ModelPreset& m, std::uint32_t sips) {
  if (m.heads_q % sips != 0)
    return std::to_string(m.heads_q) + " query heads do not split evenly over " + std::to_string(sips) + " SIPs";
  if (m.heads_kv >= sips ? m.heads_kv % sips != 0 : sips % m.heads_kv != 0)
    return std::to_string(m.heads_kv) + " KV heads neither split evenly over " + std::to_string(sips) +
           " SIPs nor replicate evenly on them";
  return "";
}

TpPlan plan(const ModelPreset& m, const Topology& topo, std::uint32_t sips) {
  TpPlan p;
  p.sips = sips;
  p.pes = topo.pes_per_sip();
  p.channel_capacity = topo.cube.hbm.capacity;
  LayerShare& s = p.share;
  s.heads_q = m.heads_q / sips;
  s.heads_kv = m.heads_kv >= sips ? m.heads_kv / sips : 1;
  s.qkv_rows = std::uint64_t{s.heads_q + 2 * s.heads_kv} * m.head_dim;
  s.o_cols = std::uint64_t{s.heads_q} * m.head_dim;
  s.mlp = ceil_div(m.intermediate, sips);
  const std::uint64_t h = m.hidden, mlp_mats = m.mlp == MlpKind::Gelu ? 2 : 3;
  const std::uint64_t norm = m.norm == NormKind::Rms ? h : 2 * h;  // one norm's weights (and bias)
  const std::uint64_t norms = (m.block == BlockKind::Parallel ? 1 : 2) * norm;
  const std::uint64_t bias = m.qkv_bias ? s.qkv_rows : 0;
  p.layer_bytes_per_sip = (s.qkv_rows * h + h * s.o_cols + mlp_mats * s.mlp * h + norms + bias) * kWeightBytes;
  // The fullest PE: the column-parallel linears' rows dealt over the SIP's PEs, the
  // row-parallel ones' columns (W_o's and W_down's: a PE's partial sums, all-reduced over
  // every PE), the norms with every PE that normalises.
  const std::uint64_t per_pe_layer = (ceil_div(s.qkv_rows, p.pes) * h + ceil_div(s.o_cols, p.pes) * h +
                                      mlp_mats * ceil_div(s.mlp, p.pes) * h + norms + ceil_div(bias, p.pes)) *
                                     kWeightBytes;
  p.vocab_rows_per_pe = ceil_div(m.vocab, std::uint64_t{sips} * p.pes);
  const std::uint64_t vocab_tables = m.tied_embeddings ? 1 : 2;
  p.weight_bytes_per_channel =
      m.layers * per_pe_layer + (vocab_tables * p.vocab_rows_per_pe * h + norm) * kWeightBytes;  // + the final norm
  p.kv_bytes_per_token = 2ull * m.layers * s.heads_kv * m.head_dim * kWeightBytes;
  return p;
}

}  // namespace

std::uint64_t TpPlan::kv_token_capacity() const {
  if (weight_bytes_per_channel >= channel_capacity || kv_bytes_per_token == 0) return 0;
  return (channel_capacity - weight_bytes_per_channel) * pes / kv_bytes_per_token;
}

void check_kv_fits(const ModelPreset& m, const TpPlan& plan, std::uint64_t tokens) {
  if (tokens <= plan.kv_token_capacity()) return;
  throw ConfigError("model " + ConfigError::literal(m.name) + " on " + std::to_string(plan.sips) + " SIP(s): " +
                    std::to_string(tokens) + " tokens of KV cache (" +
                    units::format_bytes(tokens * plan.kv_bytes_per_token) + " a SIP) do not fit beside the weights; " +
                    std::to_string(plan.kv_token_capacity()) + " do");
}

TpPlan plan_tensor_parallel(const ModelPreset& m, const Topology& topo, std::uint32_t sips) {
  if (const std::string why = heads_problem(m, sips); !why.empty())
    throw ConfigError("model " + ConfigError::literal(m.name) + ": " + why + " (tensor parallelism splits heads by SIP)");
  const TpPlan p = plan(m, topo, sips);
  if (p.weight_bytes_per_channel > p.channel_capacity) {
    const std::uint32_t need = min_sips(m, topo);
    throw ConfigError("model " + ConfigError::literal(m.name) + ": its weights need " +
                      units::format_bytes(p.weight_bytes_per_channel) + " in the fullest HBM channel of " +
                      std::to_string(sips) + " SIP(s), which holds " + units::format_bytes(p.channel_capacity) +
                      (need ? "; it needs " + std::to_string(need) + " SIPs for its weights" : ""));
  }
  return p;
}

std::uint32_t min_sips(const ModelPreset& m, const Topology& topo) {
  for (std::uint32_t s = 1; s <= 64; ++s)
    if (heads_problem(m, s).empty() && plan(m, topo, s).weight_bytes_per_channel <= topo.cube.hbm.capacity) return s;
  return 0;
}

}  // namespace kb::workloads
