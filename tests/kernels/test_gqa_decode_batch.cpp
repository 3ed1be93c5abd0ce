// Batched decode over a paged KV cache: per-request parity with the fp64 reference, a
// batch of one against gqa_decode, and what the op log says about the pages.
#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <set>

#include "tests/kernels/gqa_support.h"
#include "tests/kernels/tl_support.h"
#include "workloads/gqa_decode/decode_run.h"
#include "workloads/gqa_decode_batch/batch_run.h"

namespace kb {
namespace {

using gqa::BatchConfig;
using test::Machine;

// One SIP, two KV heads of G 8 on groups of 8 cubes x 8 PEs (64 ranks).
BatchConfig ragged(DType dt, std::uint32_t t_q, std::vector<std::uint64_t> lens) {
  BatchConfig c;
  c.h_kv = 2;
  c.h_q = 16;
  c.t_q = t_q;
  c.dtype = dt;
  c.lens = std::move(lens);
  c.s = *std::max_element(c.lens.begin(), c.lens.end());
  return c;
}

using ParityParam = std::tuple<DType, std::uint32_t, bool>;  // dtype, T_q, every request through the 2-level reduce
class BatchParity : public ::testing::TestWithParam<ParityParam> {};

// Lengths of 2 (T_q 2 needs two positions), not multiples of the 16-row page, and one
// longer than all the others together; every request checked against fp64 on its own.
// With two_level, ranks without a request's pages reduce it with an empty state.
TEST_P(BatchParity, EveryRequestMatchesTheReference) {
  const auto [dt, t_q, two_level] = GetParam();
  Machine m("llama70b_4sip", true, {"system.sips=1"});
  BatchConfig c = ragged(dt, t_q, {t_q == 1 ? 1u : 2u, 100, 17, 64, 2500, 65, 3000});
  c.two_level = two_level;
  const gqa::BatchInputs in = gqa::BatchInputs::random(c, 5);
  const gqa::BatchResult r = gqa::run_decode_batch(m.rt, c, &in);
  ASSERT_TRUE(r.o.has_value());
  for (const float v : r.o->data) ASSERT_TRUE(std::isfinite(v));
  // Request by request, so that a wrong request cannot hide behind the others' errors.
  for (std::size_t q = 0; q < c.lens.size(); ++q) {
    BatchConfig one = c;
    one.lens = {c.lens[q]};
    std::uint64_t first = 0;
    for (std::size_t i = 0; i < q; ++i) first += c.lens[i];
    gqa::BatchInputs mine;
    const std::uint64_t q_elems = static_cast<std::uint64_t>(c.h_q) * c.t_q * c.d, all = in.k.shape[1];
    mine.q.shape = {1, c.h_q, c.t_q, c.d};
    mine.q.data.assign(in.q.data.begin() + static_cast<std::ptrdiff_t>(q * q_elems),
                       in.q.data.begin() + static_cast<std::ptrdiff_t>((q + 1) * q_elems));
    for (auto [from, to] : {std::pair{&in.k, &mine.k}, std::pair{&in.v, &mine.v}}) {
      to->shape = {c.h_kv, static_cast<std::int64_t>(c.lens[q]), c.d};
      for (std::uint32_t h = 0; h < c.h_kv; ++h) {
        const auto at = from->data.begin() + static_cast<std::ptrdiff_t>((h * all + first) * c.d);
        to->data.insert(to->data.end(), at, at + static_cast<std::ptrdiff_t>(c.lens[q] * c.d));
      }
    }
    HostTensor o;
    o.shape = mine.q.shape;
    o.data.assign(r.o->data.begin() + static_cast<std::ptrdiff_t>(q * q_elems),
                  r.o->data.begin() + static_cast<std::ptrdiff_t>((q + 1) * q_elems));
    const workloads::Numerics n = gqa::check_batch(one, mine, o);
    EXPECT_TRUE(n.pass) << "request " << q << " (length " << c.lens[q] << "): error " << n.error << ", tolerance "
                        << n.tolerance;
  }
  EXPECT_TRUE(gqa::check_batch(c, in, *r.o).pass);
}

INSTANTIATE_TEST_SUITE_P(Ragged, BatchParity,
                         ::testing::Combine(::testing::Values(DType::fp32, DType::bf16), ::testing::Values(1u, 2u),
                                            ::testing::Bool()));

// A batch of one request is decode: the same pages as decode's shards, the same sweep and
// the same 2-level reduce, so the same O bit for bit and the same latency.
TEST(BatchLevers, ABatchOfOneIsDecodeBitForBit) {
  Machine m("llama70b_4sip", true, {"system.sips=1"});
  BatchConfig c = ragged(DType::fp32, 1, {4096});
  const gqa::BatchInputs in = gqa::BatchInputs::random(c, 3);
  const gqa::BatchResult batch = gqa::run_decode_batch(m.rt, c, &in);
  gqa::DecodeConfig d;
  static_cast<gqa::AttentionShape&>(d) = c;
  d.cubes = 8;
  d.pes = 8;
  gqa::AttentionInputs dec{in.q, in.k, in.v};
  dec.q.shape = {c.h_q, c.t_q, c.d};
  const gqa::DecodeResult single = gqa::run_decode(m.rt, d, &dec);
  ASSERT_TRUE(batch.o && single.o);
  EXPECT_EQ(batch.cycles, single.cycles);
  ASSERT_EQ(batch.o->data.size(), single.o->data.size());
  for (std::size_t i = 0; i < batch.o->data.size(); ++i) ASSERT_EQ(batch.o->data[i], single.o->data[i]) << "element " << i;
}

// Every K and V byte of the batch is read once, each page by the PE whose channel holds
// it, and no PE reads rows of a request it holds no page of.
TEST(BatchLevers, EachPageIsReadOnceByItsOwnRank) {
  Machine m("llama70b_4sip", false, {"system.sips=1"});
  const BatchConfig c = ragged(DType::bf16, 1, {1, 100, 17, 64, 2500, 65, 3000});
  const gqa::BatchResult r = gqa::run_decode_batch(m.rt, c, nullptr);
  const std::uint64_t rows = 1 + 100 + 17 + 64 + 2500 + 65 + 3000;
  EXPECT_EQ(r.kv_bytes, 2ull * c.h_kv * rows * c.d * 2) << "K and V of both heads, each row once";
  const gqa::PagedKv kv = gqa::allocate_pages(c.lens, c.page_rows, 64);
  // The K and V bytes each PE read: exactly its own pages' rows (a read of another
  // rank's rows, or of a row twice, would change its count; tiles never cross a run of
  // one request's pages).
  std::map<std::pair<PeCoord, std::string>, std::uint64_t> read;
  for (const OpRecord& op : m.rt.op_log().records())
    if ((op.kind == "composite" || op.kind == "load") && (op.tensor.rfind("k.", 0) == 0 || op.tensor.rfind("v.", 0) == 0))
      read[{op.pe, op.tensor}] += op.bytes;
  std::size_t readers = 0;
  for (std::uint32_t rank = 0; rank < 64; ++rank) {
    std::uint64_t filled = 0;
    for (const gqa::Page& p : kv.ranks[rank]) filled += p.rows;
    for (const std::uint32_t head : {0u, 1u})
      for (const char* t : {"k.h", "v.h"}) {
        const PeCoord pe{SipId(0), CubeId(8 * head + rank / 8), PeId(rank % 8)};
        const auto it = read.find({pe, t + std::to_string(head)});
        EXPECT_EQ(it == read.end() ? 0 : it->second, filled * c.d * 2) << pe.str() << " " << t << head;
        readers += it != read.end();
      }
  }
  EXPECT_EQ(readers, read.size()) << "a PE of no rank read K or V";
}

}  // namespace
}  // namespace kb
