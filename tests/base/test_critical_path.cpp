// The critical-path account (base/critical_path.h): a chain takes the account of what
// it waited for last, adds its own time under its cause, and remembers the ops it went
// through; in cycles, the causes sum to the rounded total.
#include <gtest/gtest.h>

#include "base/critical_path.h"
#include "platform/critical_path.h"

namespace kb {
namespace {

TEST(PathAccount, AdvanceAddsTheTimeSinceTheLastPointToOneCause) {
  PathAccount a = PathAccount::starting(100);
  a.advance(150, Cause::Cpu);
  a.advance(150, Cause::Gemm);  // no time passed: nothing added
  a.advance(140, Cause::Gemm);  // never backwards
  a.advance(400, Cause::Hbm);
  EXPECT_EQ(a.at, 400u);
  EXPECT_EQ(a.spent[static_cast<std::size_t>(Cause::Cpu)], 50u);
  EXPECT_EQ(a.spent[static_cast<std::size_t>(Cause::Gemm)], 0u);
  EXPECT_EQ(a.spent[static_cast<std::size_t>(Cause::Hbm)], 250u);
  EXPECT_EQ(a.total(), 300u);
}

TEST(PathAccount, JoinKeepsWhatCameLastAndTheHeldOneOnATie) {
  PathAccount mine = PathAccount::starting(0), other = PathAccount::starting(0);
  mine.advance(100, Cause::Cpu);
  other.advance(100, Cause::Noc);
  mine.join(other);
  EXPECT_EQ(mine.spent[static_cast<std::size_t>(Cause::Cpu)], 100u) << "a tie keeps the held account";
  other.advance(120, Cause::Noc);
  mine.join(other);
  EXPECT_EQ(mine.at, 120u);
  EXPECT_EQ(mine.spent[static_cast<std::size_t>(Cause::Noc)], 120u);
  EXPECT_EQ(mine.spent[static_cast<std::size_t>(Cause::Cpu)], 0u);
}

TEST(PathAccount, EnterRecordsEachOpOnceWithWhereTheChainCameFrom) {
  PathAccount a = PathAccount::starting(0);
  a.enter(7);
  a.advance(10, Cause::Dma);
  a.enter(7);  // still in op 7
  const std::uint64_t first = a.step;
  a.enter(9);
  EXPECT_EQ(a.op, 9u);
  const PathStep& s = path_steps()[a.step];
  EXPECT_EQ(s.op, 9u);
  EXPECT_EQ(s.at, 10u);
  EXPECT_EQ(s.before, first);
  EXPECT_EQ(path_steps()[first].op, 7u);
  EXPECT_EQ(path_steps()[first].before, kNoStep);
}

TEST(CriticalPath, CyclesSumToTheRoundedTotalLargestFirst) {
  PathAccount a = PathAccount::starting(0);
  a.advance(1500, Cause::Noc);   // 1.5 cycles of 1000 ticks
  a.advance(3000, Cause::Hbm);   // 1.5
  a.advance(4000, Cause::Cpu);   // 1
  const CriticalPath p = critical_path(a, 1000);
  EXPECT_EQ(p.total(), 4u);
  // The spare cycle goes to the first of the equal remainders in cause order (hbm).
  EXPECT_EQ(p.cycles, (std::vector<std::pair<std::string, std::uint64_t>>{{"hbm", 2}, {"noc", 1}, {"cpu", 1}}));
  EXPECT_EQ(p.of("hbm"), 2u);
  EXPECT_EQ(p.of("gemm"), 0u);
}

// The run's path is its slowest unit's; of units ending together, the one ending on the
// lower PE, whatever order they were simulated in (a split run's merge picks the same).
TEST(CriticalPath, OfUnitsEndingTogetherTheOneEndingOnTheLowerPeIsKept) {
  auto unit = [](std::uint64_t end, Cause cause, std::uint32_t cube) {
    PathEnd e{PathAccount::starting(0), PeCoord{SipId(0), CubeId(cube), PeId(0)}};
    e.account.advance(end, cause);
    return e;
  };
  const PathEnd group0 = unit(500, Cause::Gemm, 4), group1 = unit(500, Cause::Hbm, 2), slow = unit(501, Cause::Noc, 7);
  std::optional<PathEnd> kept;
  keep_slowest(kept, group0);
  keep_slowest(kept, group1);
  EXPECT_EQ(kept->pe, group1.pe);
  keep_slowest(kept, group0);
  EXPECT_EQ(kept->pe, group1.pe);
  keep_slowest(kept, slow);
  EXPECT_EQ(kept->pe, slow.pe);
}

}  // namespace
}  // namespace kb
