// Each tl op's numerics in data mode against a plain fp64 reference, bf16 and fp32.
#include <gtest/gtest.h>

#include <limits>

#include "tests/kernels/tl_support.h"

namespace kb {
namespace {

using test::Machine;

const PeCoord kPe{SipId(0), CubeId(1), PeId(1)};

DPPolicy one_pe() { return DPPolicy::shard2d(1, 2, 1); }  // cube 1, both PEs; PE 1 holds the 2nd half

std::vector<double> matmul(const HostTensor& a, const HostTensor& b, bool trans_b) {
  const auto m = a.shape[0], k = a.shape[1], n = trans_b ? b.shape[0] : b.shape[1];
  std::vector<double> c(static_cast<std::size_t>(m * n), 0.0);
  for (int i = 0; i < m; ++i)
    for (int j = 0; j < n; ++j)
      for (int l = 0; l < k; ++l)
        c[i * n + j] += static_cast<double>(a.data[i * k + l]) *
                        (trans_b ? b.data[j * k + l] : b.data[l * n + j]);
  return c;
}

// Places `h` so that PE kPe holds all of it (rows duplicated for the other PE's half).
DeviceTensor place_on_pe(Machine& m, const std::string& name, const HostTensor& h, DType dt) {
  HostTensor twice = h;
  twice.shape[0] *= 2;
  twice.data.insert(twice.data.begin(), h.data.begin(), h.data.end());
  return m.rt.from_host(name, twice, dt, one_pe());
}

RowRange second_half(const HostTensor& h) {
  return {static_cast<std::uint64_t>(h.shape[0]), static_cast<std::uint64_t>(h.shape[0])};
}

std::vector<float> second_half_of(const HostTensor& h) {
  return {h.data.begin() + static_cast<long>(h.data.size() / 2), h.data.end()};
}

class GemmNumerics : public ::testing::TestWithParam<std::tuple<DType, bool, bool>> {};

TEST_P(GemmNumerics, MatchesFp64Reference) {
  const auto [dt, trans_b, streamed] = GetParam();
  Machine m;
  HostTensor a = test::random_host({48, 96}, 1), b = test::random_host(trans_b ? Shape{80, 96} : Shape{96, 80}, 2);
  if (dt == DType::bf16) {
    a = test::as_bf16(a);
    b = test::as_bf16(b);
  }
  const DeviceTensor da = place_on_pe(m, "a", a, dt), db = place_on_pe(m, "b", b, dt);
  const DeviceTensor dc = m.rt.empty("c", {96, 80}, DType::fp32, one_pe());
  m.rt.launch(SipId(0), "gemm", test::on_pe(kPe, [&](tl::Ctx& tl) {
    const tl::Tensor ta = tl.load(da, second_half(a));
    tl::CompositeOpts o;
    o.trans_b = trans_b;
    o.tile_rows = 36;  // does not divide 80 or 96: a ragged last tile
    const tl::Tensor c = streamed ? tl.composite(ta, tl.ref(db, second_half(b)), o)
                                  : tl.dot(ta, tl.load(db, second_half(b)), trans_b);
    tl.store(dc, {48, 48}, c);
  }));
  m.rt.run();
  const std::vector<double> ref = matmul(a, b, trans_b);
  EXPECT_LT(test::max_abs_diff(second_half_of(m.rt.read(dc)), ref), 1e-3);
}

INSTANTIATE_TEST_SUITE_P(Ops, GemmNumerics,
                         ::testing::Combine(::testing::Values(DType::fp32, DType::bf16), ::testing::Bool(),
                                            ::testing::Bool()));

class MathNumerics : public ::testing::TestWithParam<DType> {};

TEST_P(MathNumerics, ElementwiseReductionsTransposeCastMatchReference) {
  const DType dt = GetParam();
  Machine m;
  HostTensor x = test::random_host({16, 40}, 3), y = test::random_host({16, 40}, 4);
  HostTensor row = test::random_host({16, 1}, 5), col = test::random_host({1, 40}, 6);
  if (dt == DType::bf16) x = test::as_bf16(x), y = test::as_bf16(y), row = test::as_bf16(row), col = test::as_bf16(col);
  const DeviceTensor dx = place_on_pe(m, "x", x, dt), dy = place_on_pe(m, "y", y, dt);
  const DeviceTensor drow = place_on_pe(m, "row", row, dt), dcol = place_on_pe(m, "col", col, dt);
  std::map<std::string, DeviceTensor> out;
  for (const char* n : {"add", "sub", "mul", "div", "maximum", "exp", "rsqrt", "where", "scale", "fma", "causal_mask", "max1",
                        "sum1", "max_into", "max0", "sum0", "argmax1", "argmax0", "trans", "view", "rows"}) {
    const bool t = std::string(n) == "trans";
    const Shape s = std::string(n) == "max1" || std::string(n) == "sum1" || std::string(n) == "max_into" ||
                            std::string(n) == "argmax1"
                        ? Shape{32, 1}
                    : std::string(n) == "max0" || std::string(n) == "sum0" || std::string(n) == "argmax0" ? Shape{2, 40}
                    : t ? Shape{80, 16} : std::string(n) == "rows" ? Shape{10, 40} : Shape{32, 40};
    out[n] = m.rt.empty(n, s, DType::fp32, one_pe());
  }
  m.rt.launch(SipId(0), "math", test::on_pe(kPe, [&](tl::Ctx& tl) {
    const tl::Tensor tx = tl.load(dx, {16, 16}), ty = tl.load(dy, {16, 16});
    const tl::Tensor tr = tl.load(drow, {16, 16}), tc = tl.load(dcol, {1, 1});
    auto put = [&](const char* n, const tl::Tensor& v) {
      const RowRange r = tl.shard_rows(out[n]);
      tl.store(out[n], r, v);
    };
    put("add", tl.add(tx, tr));          // row broadcast
    put("sub", tl.sub(tx, tc));          // column broadcast
    put("mul", tl.mul(tx, ty));
    put("div", tl.div(tx, tr));
    put("maximum", tl.maximum(tx, ty));
    put("exp", tl.exp(tx));
    put("rsqrt", tl.rsqrt(tl.exp(tx)));   // of a positive value
    put("where", tl.where(tl.maximum(tx, tl.full({1, 1}, 0.0f)), tx, ty));  // x > 0 ? x : y
    put("scale", tl.mul(tx, 0.125f));
    put("fma", tl.fma(tx, ty, tr));      // x * y + row
    // Row r is query position 20 + r % 4, column c key 8 + c: keys after it are -inf.
    put("causal_mask", tl.causal_mask(tl.mul(tx, 1.0f), 20, 4, 8));
    const tl::Tensor into = tl.empty({16, 1}, DType::fp32, "into");
    tl.max(tx, 1, &into);
    put("max_into", into);
    put("max1", tl.max(tx, 1));
    put("sum1", tl.sum(tx, 1));
    put("max0", tl.max(tx, 0));
    put("sum0", tl.sum(tx, 0));
    put("argmax1", tl.argmax(tx, 1));
    put("argmax0", tl.argmax(tx, 0));
    put("trans", tl.trans(tx));
    put("view", tl.cast(tl.view(tl.view(tx, {40, 16}), {16, 40}), DType::fp32));
    put("rows", tl.cast(tl.rows(tx, 3, 5), DType::fp32));
  }));
  m.rt.run();
  auto got = [&](const char* n) { return second_half_of(m.rt.read(out[n])); };
  auto expect = [&](const char* n, auto f, std::size_t rows, std::size_t cols) {
    std::vector<double> ref(rows * cols);
    for (std::size_t r = 0; r < rows; ++r)
      for (std::size_t c = 0; c < cols; ++c) ref[r * cols + c] = f(r, c);
    EXPECT_LT(test::max_abs_diff(got(n), ref), 1e-5) << n;
  };
  auto X = [&](std::size_t r, std::size_t c) { return static_cast<double>(x.data[r * 40 + c]); };
  auto Y = [&](std::size_t r, std::size_t c) { return static_cast<double>(y.data[r * 40 + c]); };
  expect("add", [&](auto r, auto c) { return X(r, c) + row.data[r]; }, 16, 40);
  expect("sub", [&](auto r, auto c) { return X(r, c) - col.data[c]; }, 16, 40);
  expect("mul", [&](auto r, auto c) { return X(r, c) * Y(r, c); }, 16, 40);
  expect("div", [&](auto r, auto c) { return X(r, c) / row.data[r]; }, 16, 40);
  expect("maximum", [&](auto r, auto c) { return std::max(X(r, c), Y(r, c)); }, 16, 40);
  expect("exp", [&](auto r, auto c) { return std::exp(X(r, c)); }, 16, 40);
  expect("rsqrt", [&](auto r, auto c) { return 1 / std::sqrt(std::exp(X(r, c))); }, 16, 40);
  expect("where", [&](auto r, auto c) { return X(r, c) > 0 ? X(r, c) : Y(r, c); }, 16, 40);
  expect("scale", [&](auto r, auto c) { return X(r, c) * 0.125; }, 16, 40);
  expect("fma", [&](auto r, auto c) { return X(r, c) * Y(r, c) + row.data[r]; }, 16, 40);
  const std::vector<float> masked = got("causal_mask");
  for (std::size_t r = 0; r < 16; ++r)
    for (std::size_t c = 0; c < 40; ++c) {
      const bool future = 8 + c > 20 + r % 4;
      if (future) EXPECT_EQ(masked[r * 40 + c], -std::numeric_limits<float>::infinity()) << r << ", " << c;
      else EXPECT_EQ(masked[r * 40 + c], static_cast<float>(X(r, c))) << r << ", " << c;
    }
  expect("max_into", [&](auto r, auto) { double v = -1e30; for (int c = 0; c < 40; ++c) v = std::max(v, X(r, c)); return v; }, 16, 1);
  expect("max1", [&](auto r, auto) { double v = -1e30; for (int c = 0; c < 40; ++c) v = std::max(v, X(r, c)); return v; }, 16, 1);
  expect("sum1", [&](auto r, auto) { double v = 0; for (int c = 0; c < 40; ++c) v += X(r, c); return v; }, 16, 1);
  expect("max0", [&](auto, auto c) { double v = -1e30; for (int r = 0; r < 16; ++r) v = std::max(v, X(r, c)); return v; }, 1, 40);
  expect("sum0", [&](auto, auto c) { double v = 0; for (int r = 0; r < 16; ++r) v += X(r, c); return v; }, 1, 40);
  expect("argmax1", [&](auto r, auto) { int b = 0; for (int c = 1; c < 40; ++c) if (X(r, c) > X(r, b)) b = c; return double(b); }, 16, 1);
  expect("argmax0", [&](auto, auto c) { int b = 0; for (int r = 1; r < 16; ++r) if (X(r, c) > X(b, c)) b = r; return double(b); }, 1, 40);
  expect("trans", [&](auto r, auto c) { return X(c, r); }, 40, 16);
  expect("view", [&](auto r, auto c) { return X(r, c); }, 16, 40);
  expect("rows", [&](auto r, auto c) { return X(r + 3, c); }, 5, 40);
}

INSTANTIATE_TEST_SUITE_P(DTypes, MathNumerics, ::testing::Values(DType::fp32, DType::bf16));

TEST(TlNumerics, CastToBf16RoundsToNearestEven) {
  Machine m;
  // bf16 keeps 7 mantissa bits (ulp 2^-7 at 1). 1 + 2^-8 is a tie: it goes to the even
  // neighbour 1.0. 1 + 3*2^-8 is a tie between 1 + 2^-7 (odd) and 1 + 2^-6 (even): up.
  // Just above the first tie rounds up to 1 + 2^-7.
  HostTensor h;
  h.shape = {1, 4};
  h.data = {1.0f + std::ldexp(1.0f, -8), 1.0f + 3 * std::ldexp(1.0f, -8), 1.0f + std::ldexp(1.0f, -8) + std::ldexp(1.0f, -20), -2.5f};
  const DeviceTensor src = place_on_pe(m, "src", h, DType::fp32);
  const DeviceTensor dst = m.rt.empty("dst", {2, 4}, DType::bf16, one_pe());
  m.rt.launch(SipId(0), "cast", test::on_pe(kPe, [&](tl::Ctx& tl) {
    tl.store(dst, {1, 1}, tl.cast(tl.load(src, {1, 1}), DType::bf16));
  }));
  m.rt.run();
  const auto got = second_half_of(m.rt.read(dst));
  EXPECT_EQ(got[0], 1.0f);
  EXPECT_EQ(got[1], 1.0f + std::ldexp(1.0f, -6));
  EXPECT_EQ(got[2], 1.0f + std::ldexp(1.0f, -7));
  EXPECT_EQ(got[3], -2.5f);
}

// A composite whose first tiles were preloaded into its stage gives the bits of one that
// streamed them all, whether a part of b or all of it (a short last tile) was preloaded.
TEST(TlNumerics, APreloadedCompositeIsTheStreamedOne) {
  Machine m;
  const DPPolicy here = DPPolicy::replicate(1, 1, 0);
  const DeviceTensor a = m.rt.from_host("a", test::random_host({4, 200}, 11), DType::bf16, here);
  const DeviceTensor b = m.rt.from_host("b", test::random_host({200, 48}, 12), DType::bf16, here);
  std::vector<DeviceTensor> out;
  for (const char* n : {"streamed", "part", "all"}) out.push_back(m.rt.empty(n, {4, 48}, DType::fp32, here));
  m.rt.launch(SipId(0), "preload", test::on_pe(PeCoord{SipId(0), CubeId(0), PeId(0)}, [&](tl::Ctx& tl) {
    const tl::Tensor x = tl.load(a, {0, 4});
    const tl::Tensor w = tl.ref(b, {0, 200});
    for (std::uint32_t i = 0; i < 3; ++i) {
      const auto scope = tl.scratch_scope();
      const std::uint32_t preloaded = i == 0 ? 0 : i == 1 ? 96 : 200;  // tiles of 32 rows
      const tl::Tensor stage = tl.empty({std::max<std::int64_t>(preloaded, 96) + 64, 48}, DType::bf16, "stage");
      if (preloaded) tl.preload(w, preloaded, stage);
      tl::CompositeOpts o;
      o.tile_rows = 32;
      o.stage = &stage;
      o.preloaded_rows = preloaded;
      tl.store(out[i], {0, 4}, tl.composite(x, w, o));
    }
  }));
  m.rt.run();
  const std::vector<float> streamed = m.rt.read(out[0]).data;
  EXPECT_EQ(m.rt.read(out[1]).data, streamed);
  EXPECT_EQ(m.rt.read(out[2]).data, streamed);
}

TEST(TlNumerics, MessagesCarryTheirBytes) {
  Machine m;
  const HostTensor h = test::random_host({8, 32}, 9);
  const DeviceTensor src = m.rt.from_host("src", h, DType::fp32, DPPolicy::replicate(1, 1, 0));
  const DeviceTensor dst = m.rt.empty("dst", {8, 32}, DType::fp32, DPPolicy::replicate(1, 1, 3));
  m.rt.launch(SipId(0), "msg", [&](tl::Ctx& tl) {
    const PeCoord from{SipId(0), CubeId(0), PeId(0)}, to{SipId(0), CubeId(3), PeId(0)};
    if (tl.coord() == from) tl.send(to, tl.load(src, {0, 8}), 7);
    if (tl.coord() == to) tl.store(dst, {0, 8}, tl.recv(from, {8, 32}, DType::fp32, 7));
  });
  m.rt.run();
  EXPECT_EQ(m.rt.read(dst).data, h.data);
}

TEST(TlNumerics, SendsLeaveInProgramOrder) {
  // The first send is held in the scheduler until its load is in; the second, ready at
  // once, leaves behind it: the receiver matches one sender's messages in arrival order.
  Machine m;
  const HostTensor h = test::random_host({8, 32}, 5);
  const DeviceTensor src = m.rt.from_host("src", h, DType::fp32, DPPolicy::replicate(1, 1, 0));
  const DeviceTensor dst = m.rt.empty("dst", {16, 32}, DType::fp32, DPPolicy::replicate(1, 1, 3));
  m.rt.launch(SipId(0), "order", [&](tl::Ctx& tl) {
    const PeCoord from{SipId(0), CubeId(0), PeId(0)}, to{SipId(0), CubeId(3), PeId(0)};
    if (tl.coord() == from) {
      tl.send(to, tl.load(src, {0, 8}), 7);
      tl.send(to, tl.full({8, 32}, 2.0f), 7);
    }
    if (tl.coord() == to) {
      const tl::Tensor first = tl.recv_async(from, {8, 32}, DType::fp32, 7);
      const tl::Tensor second = tl.recv_async(from, {8, 32}, DType::fp32, 7);
      tl.store(dst, {0, 8}, first);
      tl.store(dst, {8, 8}, second);
    }
  });
  m.rt.run();
  std::vector<float> want = h.data;
  want.resize(16 * 32, 2.0f);
  EXPECT_EQ(m.rt.read(dst).data, want);
  const auto sends = m.rt.op_log().select("ipcq", "send");
  ASSERT_EQ(sends.size(), 2u);
  EXPECT_LT(sends[1]->issue, sends[0]->start) << "the second send was issued while the first was held";
  EXPECT_GE(sends[1]->start, sends[0]->start);
}

TEST(TlNumerics, ReceivesFillRowsOfOneBuffer) {
  // Two senders' messages land in two row ranges of one buffer, posted before either
  // arrives; a consumer of the whole buffer waits for both.
  Machine m;
  const HostTensor h = test::random_host({16, 32}, 9);
  const DeviceTensor src = m.rt.from_host("src", h, DType::fp32, DPPolicy::replicate(1, 1, 0));
  const DeviceTensor dst = m.rt.empty("dst", {16, 32}, DType::fp32, DPPolicy::replicate(1, 1, 3));
  m.rt.launch(SipId(0), "rows", [&](tl::Ctx& tl) {
    const PeCoord a{SipId(0), CubeId(0), PeId(0)}, b{SipId(0), CubeId(1), PeId(0)}, to{SipId(0), CubeId(3), PeId(0)};
    if (tl.coord() == a) tl.send(to, tl.load(src, {8, 8}), 4);
    if (tl.coord() == b) tl.send(to, tl.load(src, {0, 8}), 4);
    if (tl.coord() == to) {
      const tl::Tensor buf = tl.persistent({16, 32}, DType::fp32, "buf");
      const tl::Tensor top = tl.rows(buf, 0, 8), bottom = tl.rows(buf, 8, 8);
      tl.recv_async(b, {8, 32}, DType::fp32, 4, &top);
      tl.recv_async(a, {8, 32}, DType::fp32, 4, &bottom);
      tl.store(dst, {0, 16}, buf);
    }
  });
  m.rt.run();
  EXPECT_EQ(m.rt.read(dst).data, h.data);
}

// Receives from one sender with one tag are filled in the order they were posted, even
// when the program uses the later buffer first (and never uses the earlier one).
TEST(TlNumerics, ReceivesFillInPostingOrder) {
  Machine m;
  const HostTensor h = test::random_host({8, 32}, 11);
  const DeviceTensor src = m.rt.from_host("src", h, DType::fp32, DPPolicy::replicate(1, 1, 0));
  const DeviceTensor dst = m.rt.empty("dst", {4, 32}, DType::fp32, DPPolicy::replicate(1, 1, 3));
  m.rt.launch(SipId(0), "msg", [&](tl::Ctx& tl) {
    const PeCoord from{SipId(0), CubeId(0), PeId(0)}, to{SipId(0), CubeId(3), PeId(0)};
    if (tl.coord() == from) {
      const tl::Tensor rows = tl.load(src, {0, 8});
      tl.send(to, tl.rows(rows, 0, 4), 7);
      tl.send(to, tl.rows(rows, 4, 4), 7);
    }
    if (tl.coord() == to) {
      const tl::Tensor first = tl.recv_async(from, {4, 32}, DType::fp32, 7);
      const tl::Tensor second = tl.recv_async(from, {4, 32}, DType::fp32, 7);
      tl.store(dst, {0, 4}, second);
      (void)first;
    }
  });
  m.rt.run();
  const std::vector<float> rows_4_to_8(h.data.begin() + 4 * 32, h.data.end());
  EXPECT_EQ(m.rt.read(dst).data, rows_4_to_8);
}

}  // namespace
}  // namespace kb
