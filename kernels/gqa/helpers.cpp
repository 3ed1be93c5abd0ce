#include "kernels/gqa/helpers.h"

#include <limits>

#include "platform/dp_policy.h"

namespace kb::gqa {

GroupGeometry GroupGeometry::of(std::uint32_t cube_start, std::uint32_t cubes, std::uint32_t mesh_x) {
  const GroupShape s = group_shape(cubes);
  return {cube_start, s.w, s.h, mesh_x};
}

std::optional<std::uint32_t> GroupGeometry::index_of(CubeId cube) const {
  const std::uint32_t x0 = cube_start % mesh_x, y0 = cube_start / mesh_x;
  const std::uint32_t x = cube.value % mesh_x, y = cube.value / mesh_x;
  if (x < x0 || y < y0 || x >= x0 + w || y >= y0 + h) return std::nullopt;
  return (y - y0) * w + (x - x0);
}

CubeId GroupGeometry::cube_at(std::uint32_t index) const {
  return CubeId(cube_start + (index / w) * mesh_x + index % w);
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

std::uint32_t center_rounds(std::uint32_t w, std::uint32_t h) { return w / 2 + h / 2; }

SoftmaxState SoftmaxState::empty(tl::Ctx& tl, std::uint32_t rows, std::uint32_t d) {
  SoftmaxState s{tl.persistent({rows, 1}, DType::fp32, "m"), tl.persistent({rows, 1}, DType::fp32, "l"),
                 tl.persistent({rows, d}, DType::fp32, "o")};
  tl.fill(s.m, -std::numeric_limits<float>::infinity());
  tl.fill(s.l, 0.0f);
  tl.fill(s.o, 0.0f);
  return s;
}

void merge(tl::Ctx& tl, SoftmaxState& s, const tl::Tensor& m, const tl::Tensor& l, const tl::Tensor& o) {
  const auto scope = tl.scratch_scope();
  const tl::Tensor m_new = tl.maximum(s.m, m);
  const tl::Tensor ea = tl.exp_diff(s.m, m_new), eb = tl.exp_diff(m, m_new);
  tl.add(tl.mul(s.l, ea), tl.mul(l, eb), &s.l);
  tl.add(tl.mul(s.o, ea), tl.mul(o, eb), &s.o);
  tl.copy(m_new, s.m);
}

void send_state(tl::Ctx& tl, const PeCoord& to, const SoftmaxState& s, std::uint32_t tag) {
  tl.send(to, s.m, tag);
  tl.send(to, s.l, tag + 1);
  tl.send(to, s.o, tag + 2);
}

void recv_merge(tl::Ctx& tl, SoftmaxState& s, const PeCoord& from, std::uint32_t tag) {
  const auto scope = tl.scratch_scope();
  const tl::Tensor m = tl.recv(from, s.m.shape(), DType::fp32, tag);
  const tl::Tensor l = tl.recv(from, s.l.shape(), DType::fp32, tag + 1);
  const tl::Tensor o = tl.recv(from, s.o.shape(), DType::fp32, tag + 2);
  merge(tl, s, m, l, o);
}

}  // namespace kb::gqa
