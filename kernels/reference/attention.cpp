#include "kernels/reference/attention.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include <Eigen/Dense>

namespace kb::reference {
namespace {

using Matrix = Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
using FloatRows = Eigen::Map<const Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>>;

// Scores held at a time: query rows per block x keys (32 MiB of fp64).
constexpr std::uint64_t kBlockScores = std::uint64_t{1} << 22;

// Per KV head, its G query heads' rows in blocks: the scores as one GEMM, the softmax
// row by row over the visible keys (the rest zeroed), O as a second GEMM. `round` is
// applied to every stored intermediate, as a naive implementation in that dtype would.
template <class Round>
std::vector<double> run(const AttentionShape& sh, const std::vector<float>& q, const std::vector<float>& k,
                        const std::vector<float>& v, Round round) {
  const std::uint32_t g = sh.h_q / sh.h_kv;
  const auto s = static_cast<Eigen::Index>(sh.s), d = static_cast<Eigen::Index>(sh.d);
  const auto rows = static_cast<Eigen::Index>(g) * sh.t_q;  // a KV head's query rows, head by head
  const Eigen::Index block = std::max<Eigen::Index>(1, static_cast<Eigen::Index>(kBlockScores / std::max<std::uint64_t>(sh.s, 1)));
  std::vector<double> out(static_cast<std::size_t>(sh.h_q) * sh.t_q * sh.d);
  Matrix kh(s, d), vh(s, d);  // one KV head in fp64, the buffers reused head after head
  for (std::uint32_t h = 0; h < sh.h_kv; ++h) {
    const std::size_t kv = static_cast<std::size_t>(h) * sh.s * sh.d;
    kh = FloatRows(&k[kv], s, d).cast<double>();
    vh = FloatRows(&v[kv], s, d).cast<double>();
    for (Eigen::Index r0 = 0; r0 < rows; r0 += block) {
      const Eigen::Index n = std::min(block, rows - r0);
      const std::size_t first = (static_cast<std::size_t>(h) * rows + r0) * sh.d;
      Matrix p = FloatRows(&q[first], n, d).cast<double>() * kh.transpose();
      for (Eigen::Index i = 0; i < n; ++i) {
        const auto pos = static_cast<Eigen::Index>(sh.s - sh.t_q) + (r0 + i) % sh.t_q;  // its query position
        const Eigen::Index visible = sh.causal ? pos + 1 : s;
        auto row = p.row(i);
        double mx = -std::numeric_limits<double>::infinity();
        for (Eigen::Index j = 0; j < visible; ++j) mx = std::max(mx, row(j) = round(round(row(j)) * sh.scale));
        double sum = 0;
        for (Eigen::Index j = 0; j < visible; ++j) sum += row(j) = round(std::exp(row(j) - mx));
        for (Eigen::Index j = 0; j < visible; ++j) row(j) = round(row(j) / sum);
        row.tail(s - visible).setZero();
      }
      const Matrix o = p * vh;
      for (Eigen::Index i = 0; i < o.size(); ++i) out[first + static_cast<std::size_t>(i)] = round(o.data()[i]);
    }
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
