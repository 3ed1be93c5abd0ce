#include "workloads/models/weight_slices.h"

#include <numeric>

namespace kb::workloads {

namespace {

std::int64_t i64(std::size_t v) {
  return static_cast<std::int64_t>(v);
}

}  // namespace

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

HostTensor side_by_side(const HostTensor& a, const HostTensor& b) {
  HostTensor t;
  t.shape = {a.shape[0], a.shape[1] + b.shape[1]};
  for (std::int64_t r = 0; r < a.shape[0]; ++r) {
    t.data.insert(t.data.end(), a.data.begin() + r * a.shape[1],
                  a.data.begin() + (r + 1) * a.shape[1]);
    t.data.insert(t.data.end(), b.data.begin() + r * b.shape[1],
                  b.data.begin() + (r + 1) * b.shape[1]);
  }
  return t;
}

HostTensor block_of(const HostTensor& t, std::int64_t first, std::int64_t count, std::int64_t col,
                    std::int64_t cols) {
  HostTensor b;
  b.shape = {count, cols};
  b.data.assign(static_cast<std::size_t>(count * cols), 0.0f);
  for (std::int64_t r = 0; r < count && first + r < t.shape[0]; ++r)
    for (std::int64_t c = 0; c < cols && col + c < t.shape[1]; ++c)
      b.data[static_cast<std::size_t>(r * cols + c)] =
          t.data[static_cast<std::size_t>((first + r) * t.shape[1] + col + c)];
  return b;
}

}  // namespace kb::workloads
