// PE engines: commands travel PeCpu -> PeScheduler -> engine as TLM transactions and
// take exactly their formula; different engines overlap, one engine serialises.
#include <gtest/gtest.h>

#include "models/sip/system.h"
#include "tests/support.h"

namespace kb {
namespace {

Command gemm(std::uint32_t m, std::uint32_t n, std::uint32_t k) {
  Command c;
  c.kind = Command::Kind::Gemm;
  c.m = m;
  c.n = n;
  c.k = k;
  return c;
}

Command math(MathOp op, std::uint64_t elements, std::uint32_t reduce_width = 0) {
  Command c;
  c.kind = Command::Kind::Math;
  c.op = op;
  c.elements = elements;
  c.reduce_width = reduce_width;
  return c;
}

struct OnePe {
  Topology topo = test::topology("small_1sip_2x2x2");
  System sys{"system", topo};
  Pe& pe = sys.pe(PeCoord{SipId(0), CubeId(0), PeId(0)});
  std::vector<const Command*> cmds;

  // Issues all commands at t=0 without waiting, then runs to the end.
  void issue_all(const std::vector<Command>& list) {
    pe.cpu.load([this, list](PeCpu& cpu) {
      for (const Command& c : list) cmds.push_back(&cpu.issue(c));
    });
    sc_core::sc_start();
    ASSERT_TRUE(pe.cpu.finished());
  }
  std::uint64_t end(std::size_t i) const { return test::cycles(cmds.at(i)->finished, topo); }
};

}  // namespace

TEST(PeEngines, GemmTakesItsFormula) {
  OnePe r;
  r.issue_all({gemm(128, 128, 128)});
  // ceil(128/16) * ceil(128/64) * 128 + 16 + 64 = 2128 (PeGemm, docs/architecture.md)
  EXPECT_EQ(r.end(0), 2128u);
  EXPECT_EQ(r.pe.gemm.cycles_for(17, 65, 10), 2u * 2 * 10 + 80);
}

TEST(PeEngines, MathTakesItsFormula) {
  OnePe r;
  r.issue_all({math(MathOp::Exp, 128 * 128), math(MathOp::Add, 1000), math(MathOp::RowMax, 128 * 128, 128)});
  EXPECT_EQ(r.end(0), 128u * 4);                       // ceil(E/L) * cost(exp)
  EXPECT_EQ(r.end(1), r.end(0) + 8);                   // ceil(1000/128) * 1
  EXPECT_EQ(r.end(2), r.end(1) + 128 + 7);             // 128 rows of 128: one row group, log2 128
}

TEST(PeEngines, DifferentEnginesOverlapOneEngineSerialises) {
  OnePe r;
  Command load;
  load.kind = Command::Kind::DmaRead;
  load.address = r.sys.sip(SipId(0)).address_map().hbm(0, 0, 0);
  load.bytes = 64 * 1024;  // 120 + 1024 cycles
  r.issue_all({gemm(128, 128, 128), load, gemm(128, 128, 128), math(MathOp::Exp, 128 * 128)});
  EXPECT_EQ(r.end(0), 2128u);
  EXPECT_EQ(r.end(1), 1144u);             // concurrent with the GEMM
  EXPECT_EQ(r.end(2), 2u * 2128);         // waits for the first GEMM
  EXPECT_EQ(r.end(3), 512u);              // MATH runs beside both
  EXPECT_EQ(r.pe.gemm.commands_done(), 2u);
  EXPECT_EQ(test::cycles(r.pe.gemm.busy(), r.topo), 2u * 2128);
}

TEST(PeEngines, AHeldCommandWhoseWaitEndsNowGoesBeforeOneHeldNow) {
  // H waits in the scheduler for a GEMM that ends at cycle 2128. At that cycle, after
  // the GEMM engine has served it but before its response is back at the scheduler, the
  // program issues X, held too (it waits for a command served long ago). H was held
  // first and is ready first: both go to the MATH engine, H first.
  OnePe r;
  const Command* h = nullptr;
  const Command* x = nullptr;
  r.pe.cpu.load([&](PeCpu& cpu) {
    const CommandHandle early(cpu.issue(math(MathOp::Add, 128)));  // served at cycle 1
    const CommandHandle gemm_cmd(cpu.issue(gemm(128, 128, 128)));  // served at cycle 2128
    Command held = math(MathOp::Exp, 128 * 128);
    held.waits_for.emplace_back(*gemm_cmd);
    h = &cpu.issue(std::move(held));
    const CommandHandle h_handle(*h);
    cpu.spend(2128);
    Command now = math(MathOp::Add, 1000);
    now.waits_for.push_back(early);
    x = &cpu.issue(std::move(now));
    const CommandHandle x_handle(*x);
    cpu.wait_all();
    EXPECT_EQ(test::cycles(h->started, r.topo), 2128u) << "H starts as its GEMM ends";
    EXPECT_EQ(test::cycles(x->started, r.topo), 2128u + 128 * 4) << "X after H on the MATH engine";
  });
  sc_core::sc_start();
  ASSERT_TRUE(r.pe.cpu.finished());
  ASSERT_NE(x, nullptr);
}

}  // namespace kb
