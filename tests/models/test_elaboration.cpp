// Elaboration of the full default machine: 4 SIPs x 16 cubes x 8 PEs.
#include <gtest/gtest.h>

#include <chrono>
#include <fstream>
#include <regex>
#include <set>
#include <type_traits>

#include <sys/resource.h>

#include "models/sip/system.h"
#include "tests/support.h"

namespace kb {

TEST(Elaboration, DefaultTopologyBuilds512Pes) {
  const Topology topo = test::topology("llama70b_4sip");
  const auto t0 = std::chrono::steady_clock::now();
  System sys("system", topo);
  sc_core::sc_start(sc_core::SC_ZERO_TIME);  // completes elaboration: every socket bound
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  std::printf("elaboration of %u PEs: %.3f s wall, peak RSS %.1f MiB\n", topo.total_pes(), seconds,
              static_cast<double>(u.ru_maxrss) / 1024);
  RecordProperty("elaboration_seconds", std::to_string(seconds));
  RecordProperty("peak_rss_kib", std::to_string(u.ru_maxrss));

  std::size_t pes = 0;
  sys.for_each_pe([&](Pe& pe) {
    EXPECT_EQ(sys.pe(pe.coord()).coord(), pe.coord());
    ++pes;
  });
  EXPECT_EQ(pes, 512u);
  EXPECT_EQ(sys.sip_count(), 4u);
  EXPECT_EQ(sys.sip(SipId(3)).noc.size(), 16u);
  EXPECT_STREQ(sys.pe(PeCoord{SipId(2), CubeId(13), PeId(6)}).dma.name(), "system.sip2.cube13.pe6.dma");
  EXPECT_STREQ(sys.hbm(PeCoord{SipId(1), CubeId(4), PeId(0)}).name(), "system.sip1.cube4.hbm0");
  // Corner routers have two neighbours, inner ones four.
  const Noc& noc = sys.sip(SipId(0)).noc;
  EXPECT_FALSE(noc.router(CubeId(0)).has(Direction::North));
  EXPECT_TRUE(noc.router(CubeId(0)).has(Direction::East));
  EXPECT_TRUE(noc.router(CubeId(5)).has(Direction::North) && noc.router(CubeId(5)).has(Direction::West));
}

// docs/architecture.md names the AtRouter forwarding blocks; they are exactly the
// modules that derive from AtRouter (PeScheduler, a plain module, is not one).
TEST(Elaboration, TheArchitectureDocNamesTheAtRoutersThereAre) {
  static_assert(std::is_base_of_v<AtRouter, CubeFabric>);
  static_assert(std::is_base_of_v<AtRouter, NocRouter>);
  static_assert(std::is_base_of_v<AtRouter, HostBridge>);
  static_assert(!std::is_base_of_v<AtRouter, PeScheduler>);
  std::ifstream doc(test::source_path("docs/architecture.md"));
  const std::string text((std::istreambuf_iterator<char>(doc)), std::istreambuf_iterator<char>());
  std::smatch m;
  ASSERT_TRUE(std::regex_search(text, m, std::regex("\\(`AtRouter`: ([A-Za-z, ]+)\\)")));
  std::set<std::string> named;
  const std::string list = m[1];
  const std::regex word("[A-Za-z]+");
  for (std::sregex_iterator it(list.begin(), list.end(), word), end; it != end; ++it)
    named.insert(it->str());
  EXPECT_EQ(named, (std::set<std::string>{"CubeFabric", "HostBridge", "NocRouter"}));
}

}  // namespace kb
