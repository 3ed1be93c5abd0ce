#include "kernels/gqa/helpers.h"

#include <limits>

#include "base/dp_policy.h"

namespace kb::gqa {

GroupGeometry GroupGeometry::of(std::uint32_t cube_start, std::uint32_t cubes, const Mesh& mesh) {
  const GroupShape s = group_shape(cubes);
  return {cube_start, s.w, s.h, mesh};
}

std::optional<std::uint32_t> GroupGeometry::index_of(CubeId cube) const {
  const MeshPos p0 = mesh.pos(CubeId(cube_start)), p = mesh.pos(cube);
  if (p.x < p0.x || p.y < p0.y || p.x >= p0.x + w || p.y >= p0.y + h) return std::nullopt;
  return (p.y - p0.y) * w + (p.x - p0.x);
}

CubeId GroupGeometry::cube_at(std::uint32_t index) const {
  const MeshPos p0 = mesh.pos(CubeId(cube_start));
  return mesh.id({p0.x + index % w, p0.y + index / w});
}

TreeNode binomial_node(std::uint32_t pe, std::uint32_t pes) {
  TreeNode n;
  std::uint32_t bit = 1;
  for (; bit < pes && (pe & bit) == 0; bit <<= 1)
    if (pe + bit < pes) n.children.push_back(pe + bit);
  if (pe != 0) n.parent = pe - bit;
  return n;
}

std::uint32_t binomial_rounds(std::uint32_t pes) {
  std::uint32_t r = 0;
  while ((1u << r) < pes) ++r;
  return r;
}

TreeNode center_node(std::uint32_t index, std::uint32_t w, std::uint32_t h) {
  const std::uint32_t gx = index % w, gy = index / w, rx = (w - 1) / 2, ry = (h - 1) / 2;
  auto at = [w](std::uint32_t x, std::uint32_t y) { return y * w + x; };
  TreeNode n;
  if (gx < rx) {  // left of the root column: a chain toward it
    if (gx > 0) n.children.push_back(at(gx - 1, gy));
    n.parent = at(gx + 1, gy);
  } else if (gx > rx) {
    if (gx + 1 < w) n.children.push_back(at(gx + 1, gy));
    n.parent = at(gx - 1, gy);
  } else {  // the root column: gather the row, then chain toward the root row
    if (rx > 0) n.children.push_back(at(rx - 1, gy));
    if (rx + 1 < w) n.children.push_back(at(rx + 1, gy));
    if (gy < ry) {
      if (gy > 0) n.children.push_back(at(rx, gy - 1));
      n.parent = at(rx, gy + 1);
    } else if (gy > ry) {
      if (gy + 1 < h) n.children.push_back(at(rx, gy + 1));
      n.parent = at(rx, gy - 1);
    } else {
      if (ry > 0) n.children.push_back(at(rx, ry - 1));
      if (ry + 1 < h) n.children.push_back(at(rx, ry + 1));
    }
  }
  return n;
}

TreeNode center_node_yx(std::uint32_t index, std::uint32_t w, std::uint32_t h) {
  // Index (x, y) of the w x h group is (y, x) of its h x w transpose.
  auto transpose = [](std::uint32_t i, std::uint32_t width, std::uint32_t other) { return i % width * other + i / width; };
  TreeNode n = center_node(transpose(index, w, h), h, w);
  for (std::uint32_t& c : n.children) c = transpose(c, h, w);
  if (n.parent) n.parent = transpose(*n.parent, h, w);
  return n;
}

std::uint32_t center_rounds(std::uint32_t w, std::uint32_t h) { return w / 2 + h / 2; }

namespace {

SoftmaxState views(tl::Ctx& tl, const tl::Tensor& packed) {
  const std::uint32_t d = packed.cols() - 2;
  return {packed, tl.cols(packed, d + 1, 1), tl.cols(packed, d, 1), tl.cols(packed, 0, d), tl.cols(packed, 0, d + 1)};
}

}  // namespace

namespace {

// The pieces of `rows` that lie in one shard each, as (rows, offset into `rows`).
std::vector<std::pair<RowRange, std::uint32_t>> pieces(const DeviceTensor& t, RowRange rows) {
  std::vector<std::pair<RowRange, std::uint32_t>> out;
  std::uint64_t at = rows.begin;
  while (at < rows.end()) {
    std::uint64_t end = rows.end();
    for (const ShardPlacement& p : t.placements())
      if (p.rows.count > 0 && at >= p.rows.begin && at < p.rows.end()) end = std::min(end, p.rows.end());
    out.push_back({{at, end - at}, static_cast<std::uint32_t>(at - rows.begin)});
    at = end;
  }
  return out;
}

}  // namespace

void load_rows(tl::Ctx& tl, const DeviceTensor& t, RowRange rows, const tl::Tensor& into) {
  for (const auto& [piece, offset] : pieces(t, rows)) {
    const tl::Tensor part = tl.rows(into, offset, static_cast<std::uint32_t>(piece.count));
    tl.load(t, piece, &part);
  }
}

void store_rows(tl::Ctx& tl, const DeviceTensor& t, RowRange rows, const tl::Tensor& from) {
  for (const auto& [piece, offset] : pieces(t, rows)) {
    const tl::Tensor part = tl.rows(from, offset, static_cast<std::uint32_t>(piece.count));
    tl.store(t, piece, part);
  }
}

SoftmaxState SoftmaxState::of(tl::Ctx& tl, const tl::Tensor& packed) { return views(tl, packed); }

void SoftmaxState::reset(tl::Ctx& tl) const {
  tl.fill(ol, 0.0f);
  tl.fill(m, -std::numeric_limits<float>::infinity());
}

FlashWork FlashWork::make(tl::Ctx& tl, std::uint32_t m, std::uint32_t n, std::uint32_t d, DType dtype,
                          std::uint32_t stage_rows, bool pv) {
  FlashWork w;
  w.s = tl.persistent({m * n, 1}, DType::fp32, "S");
  w.p = tl.persistent({m * n, 1}, dtype, "P");
  if (pv) w.pv = tl.persistent({m, d}, DType::fp32, "PV");
  w.m_new = tl.persistent({m, 1}, DType::fp32, "m_new");
  w.alpha = tl.persistent({m, 1}, DType::fp32, "alpha");
  w.rowsum = tl.persistent({m, 1}, DType::fp32, "rowsum");
  if (stage_rows > 0) {
    w.stage_k = tl.persistent({stage_rows, d}, dtype, "stage_k");
    w.stage_v = tl.persistent({stage_rows, d}, dtype, "stage_v");
  }
  return w;
}

FlashTile flash_args(const tl::Tensor& q, const tl::Tensor& k, const tl::Tensor& v, const SoftmaxState& st,
                         const FlashWork& w, float scale) {
  FlashTile f;
  f.q = &q;
  f.k = &k;
  f.v = &v;
  f.m = &st.m;
  f.l = &st.l;
  f.o = &st.o;
  f.scale = scale;
  f.s = &w.s;
  f.p = &w.p;
  f.pv = &w.pv;
  f.m_new = &w.m_new;
  f.alpha = &w.alpha;
  f.rowsum = &w.rowsum;
  if (w.stage_k.valid()) {
    f.stage_k = &w.stage_k;
    f.stage_v = &w.stage_v;
  }
  return f;
}

std::vector<RowRange> segments(RowRange rows, std::uint32_t size) {
  std::vector<RowRange> out;
  const std::uint64_t n = size == 0 ? 1 : std::max<std::uint64_t>(1, rows.count / size);
  for (std::uint32_t i = 0; rows.count > 0 && i < n; ++i) {
    const RowRange s = shard_rows(rows.count, static_cast<std::uint32_t>(n), i);
    out.push_back({rows.begin + s.begin, s.count});
  }
  return out;
}

void merge_into(tl::Ctx& tl, const tl::Tensor& state, const tl::Tensor& other) {
  const std::uint32_t d = state.cols() - 2;
  const tl::Tensor ma = tl.cols(state, d + 1, 1), mb = tl.cols(other, d + 1, 1);
  const tl::Tensor ola = tl.cols(state, 0, d + 1), olb = tl.cols(other, 0, d + 1);
  const tl::Tensor m = tl.maximum(ma, mb);
  const tl::Tensor alpha = tl.exp_diff(ma, m);
  const tl::Tensor beta = tl.exp_diff(mb, m);
  tl.copy(m, ma);  // m's column is apart from [O | l]'s: it need not wait for them
  tl.mul(olb, beta, &olb);  // O and l in one pass each
  tl.fma(ola, alpha, olb, &ola);  // last: what follows (a send of these rows) waits only for it
}

void recv_merge(tl::Ctx& tl, const tl::Tensor& state, const PeCoord& from, std::uint32_t tag, Variant variant) {
  // Posted, not waited for: the merge's first op (or the scheduler) waits for it.
  const tl::Tensor got = tl.recv_async(from, state.shape(), DType::fp32, tag);
  if (variant == Variant::Fused) merge_state(tl, state, got);
  else merge_into(tl, state, got);
}

}  // namespace kb::gqa
