#include "kernels/reference/attention.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace kb::reference {
namespace {

// One query row against its KV head; `round` is applied to every stored intermediate.
template <class Round>
void attend(const AttentionShape& sh, const float* q, const float* k, const float* v, std::uint64_t visible,
            double* out, Round round) {
  std::vector<double> p(visible);
  double mx = -std::numeric_limits<double>::infinity();
  for (std::uint64_t j = 0; j < visible; ++j) {
    double dot = 0;
    for (std::uint32_t c = 0; c < sh.d; ++c) dot += static_cast<double>(q[c]) * k[j * sh.d + c];
    p[j] = round(round(dot) * sh.scale);
    mx = std::max(mx, p[j]);
  }
  double sum = 0;
  for (auto& x : p) {
    x = round(std::exp(x - mx));
    sum += x;
  }
  for (auto& x : p) x = round(x / sum);
  for (std::uint32_t c = 0; c < sh.d; ++c) {
    double acc = 0;
    for (std::uint64_t j = 0; j < visible; ++j) acc += p[j] * v[j * sh.d + c];
    out[c] = round(acc);
  }
}

template <class Round>
std::vector<double> run(const AttentionShape& sh, const std::vector<float>& q, const std::vector<float>& k,
                        const std::vector<float>& v, Round round) {
  const std::uint32_t g = sh.h_q / sh.h_kv;
  std::vector<double> out(static_cast<std::size_t>(sh.h_q) * sh.t_q * sh.d);
  for (std::uint32_t h = 0; h < sh.h_q; ++h)
    for (std::uint32_t i = 0; i < sh.t_q; ++i) {
      const std::uint64_t pos = sh.s - sh.t_q + i;
      const std::uint64_t visible = sh.causal ? pos + 1 : sh.s;
      const std::size_t kv = static_cast<std::size_t>(h / g) * sh.s * sh.d;
      attend(sh, &q[(static_cast<std::size_t>(h) * sh.t_q + i) * sh.d], &k[kv], &v[kv], visible,
             &out[(static_cast<std::size_t>(h) * sh.t_q + i) * sh.d], round);
    }
  return out;
}

}  // namespace

std::vector<double> attention(const AttentionShape& shape, const std::vector<float>& q,
                              const std::vector<float>& k, const std::vector<float>& v) {
  return run(shape, q, k, v, [](double x) { return x; });
}

std::vector<double> attention_naive(const AttentionShape& shape, const std::vector<float>& q,
                                    const std::vector<float>& k, const std::vector<float>& v, DType dtype) {
  if (dtype == DType::fp32) return run(shape, q, k, v, [](double x) { return static_cast<double>(static_cast<float>(x)); });
  return run(shape, q, k, v, [](double x) { return static_cast<double>(bf16_to_fp32(fp32_to_bf16(static_cast<float>(x)))); });
}

double max_abs_error(const std::vector<float>& got, const std::vector<double>& ref) {
  double m = 0;
  for (std::size_t i = 0; i < got.size(); ++i) m = std::max(m, std::abs(static_cast<double>(got[i]) - ref[i]));
  return m;
}

}  // namespace kb::reference
