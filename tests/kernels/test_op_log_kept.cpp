// A run that keeps no op log (what `kernbench run` does without traces) reports what a
// run that keeps every record reports: the workloads' figures come from the records as
// they close. Its memory does not grow with its ops: the log holds no record and each
// PE's CPU reuses the slots of its finished commands.
#include <gtest/gtest.h>

#include <algorithm>

#include "tests/kernels/tl_support.h"
#include "workloads/gqa_decode/decode_run.h"
#include "workloads/gqa_prefill/prefill_run.h"

namespace kb {
namespace {

using test::Machine;
using Kept = RunOptions::OpLogKept;

Machine one_sip(Kept kept) { return Machine("llama70b_4sip", false, {"system.sips=1"}, kept); }

gqa::DecodeConfig decode_config() {
  gqa::DecodeConfig c;
  c.h_kv = 2;
  c.h_q = 16;
  c.s = 16384;
  return c;
}

TEST(OpLogKept, DecodeReportsTheSameWhetherItsRecordsAreKeptOrNot) {
  Machine kept = one_sip(Kept::Records), none = one_sip(Kept::Nothing);
  const gqa::DecodeResult a = gqa::run_decode(kept.rt, decode_config(), nullptr);
  const gqa::DecodeResult b = gqa::run_decode(none.rt, decode_config(), nullptr);
  EXPECT_EQ(a.cycles, b.cycles);
  EXPECT_GT(b.kv_bytes, 0u);
  EXPECT_EQ(a.kv_bytes, b.kv_bytes);
  EXPECT_EQ(a.issued_ops, b.issued_ops);
  for (const auto& [x, y] : {std::pair{a.breakdown.sweep, b.breakdown.sweep}, {a.breakdown.level1, b.breakdown.level1},
                             {a.breakdown.level2, b.breakdown.level2}, {a.breakdown.store, b.breakdown.store}}) {
    EXPECT_EQ(x.begin, y.begin);
    EXPECT_EQ(x.end, y.end);
  }
  EXPECT_EQ(kept.rt.critical_path().cycles, none.rt.critical_path().cycles);
  EXPECT_EQ(none.rt.op_log().size(), kept.rt.op_log().records().size());
  EXPECT_TRUE(none.rt.op_log().records().empty());
  EXPECT_TRUE(none.rt.critical_spans().empty());
}

TEST(OpLogKept, PrefillReportsTheSame) {
  gqa::PrefillConfig c;
  c.h_kv = 2;
  c.h_q = 16;
  c.s = 4096;
  Machine kept = one_sip(Kept::Records), none = one_sip(Kept::Nothing);
  const gqa::PrefillResult a = gqa::run_prefill(kept.rt, c, nullptr);
  const gqa::PrefillResult b = gqa::run_prefill(none.rt, c, nullptr);
  EXPECT_EQ(a.cycles, b.cycles);
  EXPECT_GT(b.ring_transfers, 0u);
  EXPECT_EQ(a.ring_transfers, b.ring_transfers);
  EXPECT_EQ(a.ring_bytes, b.ring_bytes);
  EXPECT_EQ(a.ring_link_bytes, b.ring_link_bytes);
  EXPECT_EQ(a.gemm_flops, b.gemm_flops);
  EXPECT_EQ(kept.rt.critical_path().cycles, none.rt.critical_path().cycles);
  EXPECT_TRUE(none.rt.op_log().records().empty());
}

// The most commands any PE's CPU held at once, and the most it issued, in a prefill of S
// on `m` (machines are made before any simulation starts).
std::pair<std::size_t, std::uint64_t> prefill_slots(Machine& m, std::uint64_t s) {
  gqa::PrefillConfig c;
  c.h_kv = 2;
  c.h_q = 16;
  c.s = s;
  std::map<PeCoord, std::uint64_t> issued;
  const OpLog::Listening listening = m.rt.op_log().listen([&](const OpRecord& r) {
    if (r.engine != "cpu" && r.engine != "phase" && r.kind != "recv") ++issued[r.pe];  // an engine command each
  });
  gqa::run_prefill(m.rt, c, nullptr);
  std::size_t slots = 0;
  std::uint64_t most = 0;
  for (const auto& [pe, n] : issued) {
    slots = std::max(slots, m.sys.pe(pe).cpu.command_slots());
    most = std::max(most, n);
  }
  return {slots, most};
}

TEST(OpLogKept, ACpusCommandSlotsDoNotGrowWithTheCommandsItIssues) {
  Machine a = one_sip(Kept::Nothing), b = one_sip(Kept::Nothing);
  const auto [slots_short, issued_short] = prefill_slots(a, 2048);
  const auto [slots_long, issued_long] = prefill_slots(b, 4096);
  EXPECT_GT(issued_long, 2 * issued_short);  // 202 then 472 commands on the busiest PE
  // The slots follow the commands in flight at once (67 then 72, as timing moves them),
  // not those issued: a kept history would add a slot per command, 270 here.
  EXPECT_LT(slots_long, slots_short + (issued_long - issued_short) / 20)
      << "slots " << slots_short << " then " << slots_long << ", issued " << issued_short << " then " << issued_long;
  EXPECT_LT(slots_long, issued_long / 4);
}

}  // namespace
}  // namespace kb
