#include <gtest/gtest.h>

#include <fstream>
#include <regex>

#include "base/sip_graph.h"
#include "base/topology.h"
#include "models/common/clock.h"
#include "tests/support.h"

namespace kb {
namespace {

std::string read_default() {
  std::ifstream in(test::source_path("topologies/llama70b_4sip.yaml"));
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

// The errors a bad document produces (fails the test if it parses).
std::vector<std::string> errors_of(const std::string& yaml, const std::vector<std::string>& sets = {}) {
  try {
    Topology::parse(yaml, "t.yaml", sets);
  } catch (const TopologyError& e) {
    return e.errors();
  }
  ADD_FAILURE() << "expected a TopologyError";
  return {};
}

std::string replace(std::string text, const std::string& from, const std::string& to) {
  const auto at = text.find(from);
  EXPECT_NE(at, std::string::npos) << from;
  return text.replace(at, from.size(), to);
}

}  // namespace

TEST(Topology, DefaultFileHasTheDesignNumbers) {
  const Topology t = test::topology("llama70b_4sip");
  EXPECT_EQ(t.name, "llama70b_4sip");
  EXPECT_EQ(t.system.sips, 4u);
  EXPECT_EQ(t.sip.mesh_x, 4u);
  EXPECT_EQ(t.sip.mesh_y, 4u);
  EXPECT_EQ(t.cube.pes, 8u);
  EXPECT_DOUBLE_EQ(t.pe.clock_hz, 1e9);
  EXPECT_EQ(t.pe.tcm_bytes, 1u << 20);
  EXPECT_EQ(t.cube.hbm.bytes_per_cycle, 64u);
  EXPECT_EQ(t.cube.hbm.latency_cycles, 120u);
  EXPECT_EQ(t.cube.hbm.capacity, 1ull << 30);
  EXPECT_EQ(t.pe.dma.burst_bytes, 2048u);
  EXPECT_EQ(t.pe.dma.outstanding, 8u);
  EXPECT_EQ(t.pe.gemm.rows, 16u);
  EXPECT_EQ(t.pe.gemm.cols, 64u);
  EXPECT_EQ(t.pe.math.lanes, 128u);
  EXPECT_EQ(t.pe.math.cycles.at("exp"), 4u);
  EXPECT_EQ(t.pe.math.cycles.at("add"), 1u);
  EXPECT_EQ(t.cube.fabric.bytes_per_cycle, 32u);
  EXPECT_EQ(t.cube.fabric.latency_cycles, 16u);
  EXPECT_EQ(t.sip.noc.bytes_per_cycle, 64u);
  EXPECT_EQ(t.sip.noc.latency_cycles, 4u);
  EXPECT_EQ(t.sip.job_queue, 16u);
  EXPECT_EQ(t.pe.cpu.issue_cycles.at("composite"), 8u);
  for (const auto& op : Topology::cpu_ops()) EXPECT_GT(t.pe.cpu.issue_cycles.at(op), 0u) << op;
}

TEST(Topology, AggregatesOfTheDefaultMachine) {
  const Topology t = test::topology("llama70b_4sip");
  EXPECT_EQ(t.total_pes(), 512u);
  EXPECT_EQ(t.pes_per_sip(), 128u);
  EXPECT_DOUBLE_EQ(t.hbm_bytes_per_second_per_sip(), 128.0 * 64 * 1e9);  // ~8 TB/s
  EXPECT_DOUBLE_EQ(t.gemm_flops_per_second_per_sip(), 2.0 * 128 * 1024 * 1e9);  // ~262 TFLOP/s
  EXPECT_EQ(cycle_time(t), sc_core::sc_time(1, sc_core::SC_NS));
  const std::string shown = format_topology(t);
  EXPECT_NE(shown.find("512 total"), std::string::npos) << shown;
  EXPECT_NE(shown.find("8.192 TB/s per SIP"), std::string::npos) << shown;
  EXPECT_NE(shown.find("262.1 TFLOP/s per SIP"), std::string::npos) << shown;
}

TEST(Topology, SmallTestTopologiesLoad) {
  const Topology small = test::topology("small_1sip_2x2x2");
  EXPECT_EQ(small.total_pes(), 8u);
  const Topology tiny = test::topology("tiny_2sip_4x1x1");
  EXPECT_EQ(tiny.system.sips, 2u);
  EXPECT_EQ(tiny.cubes_per_sip(), 4u);
  EXPECT_EQ(tiny.pe.dma.outstanding, 2u);
}

TEST(Topology, SetOverridesAnyValue) {
  const Topology t = test::topology("llama70b_4sip", {"pe.tcm=2MiB", "sip.noc.hop_latency=7cycles",
                                                      "pe.math.cycles.exp=9"});
  EXPECT_EQ(t.pe.tcm_bytes, 2u << 20);
  EXPECT_EQ(t.sip.noc.latency_cycles, 7u);
  EXPECT_EQ(t.pe.math.cycles.at("exp"), 9u);
}

TEST(Topology, UnknownKeyIsAnErrorListingTheValidKeys) {
  const auto errs = errors_of(replace(read_default(), "  tcm: 1MiB", "  tcm: 1MiB\n  tcn: 2"));
  ASSERT_EQ(errs.size(), 1u);
  EXPECT_TRUE(std::regex_search(errs[0], std::regex(R"(^t\.yaml:\d+:3: pe\.tcn: unknown key 'tcn')")))
      << errs[0];
  EXPECT_NE(errs[0].find("valid keys here: clock, tcm, dma, gemm, math, cpu"), std::string::npos)
      << errs[0];
}

TEST(Topology, BadValueNamesFileLineColumnValueAndWhatIsAllowed) {
  const std::string yaml = replace(read_default(), "burst: 2KiB", "burst: 2KB/s");
  const auto errs = errors_of(yaml);
  ASSERT_EQ(errs.size(), 1u);
  // burst is on line 30 of the default file, its value at column 12.
  EXPECT_EQ(errs[0],
            "t.yaml:30:12: pe.dma.burst: value '2KB/s' is not allowed; allowed: a size in bytes "
            "from 16 to 1048576 (e.g. 2KiB, 1MiB or 4096)");
}

TEST(Topology, ZeroNegativeAndAbsurdValuesAreRefused) {
  EXPECT_EQ(errors_of(replace(read_default(), "sips: 4", "sips: 0")).size(), 1u);
  EXPECT_EQ(errors_of(replace(read_default(), "sips: 4", "sips: -2")).size(), 1u);
  const auto mesh = errors_of(replace(read_default(), "{x: 4, y: 4}", "{x: 1000000000, y: 1000000000}"));
  ASSERT_EQ(mesh.size(), 2u);
  EXPECT_NE(mesh[0].find("sip.mesh.x: value '1000000000' is not allowed; allowed: a whole number from 1 to 16"),
            std::string::npos) << mesh[0];
  EXPECT_EQ(errors_of(replace(read_default(), "latency: 120cycles", "latency: 0cycles")).size(), 1u);
  EXPECT_EQ(errors_of(replace(read_default(), "exp: 4", "exp: 0")).size(), 1u);  // cost 0 not allowed
}

TEST(Topology, MissingKeysAreEachReported) {
  const auto errs = errors_of("name: x\nsystem: {sips: 1}\n");
  ASSERT_EQ(errs.size(), 4u);
  EXPECT_NE(errs[0].find("sip: required key 'sip' is missing"), std::string::npos) << errs[0];
  EXPECT_NE(errs[1].find("cube: required key 'cube' is missing"), std::string::npos);
  EXPECT_NE(errs[2].find("pe: required key 'pe' is missing"), std::string::npos);
  EXPECT_NE(errs[3].find("energy: required key 'energy' is missing"), std::string::npos);
}

// The energy section's prices carry their units (docs/energy.md); --set overrides any.
TEST(Topology, EnergyPricesReadWithTheirUnits) {
  const Topology t = test::topology("llama70b_4sip");
  EXPECT_EQ(t.energy.hbm_read, 31.2);
  EXPECT_EQ(t.energy.tcm_write, 3.125);
  EXPECT_EQ(t.energy.noc, 4.0);
  EXPECT_EQ(t.energy.gemm_mac, 0.5);
  EXPECT_EQ(t.energy.math.at("exp"), 3.7);
  EXPECT_EQ(t.energy.math.size(), Topology::math_ops().size());
  EXPECT_EQ(t.energy.cpu_op, 17.5);
  EXPECT_EQ(t.energy.static_pe, 0.05);  // 50mW
  EXPECT_EQ(t.energy.static_sip, 10.0);
  const Topology set =
      test::topology("llama70b_4sip", {"energy.hbm.read=62.4pJ/B", "energy.link=0.01nJ/B",
                                       "energy.static.cube=2500mW", "energy.math.exp=0pJ/op"});
  EXPECT_EQ(set.energy.hbm_read, 62.4);
  EXPECT_EQ(set.energy.hbm_write, 31.2);
  EXPECT_EQ(set.energy.link, 10.0);
  EXPECT_EQ(set.energy.static_cube, 2.5);
  EXPECT_EQ(set.energy.math.at("exp"), 0.0);
  EXPECT_NE(format_topology(t).find("energy   HBM read 31.2, write 31.2 pJ/B"), std::string::npos)
      << format_topology(t);
}

TEST(Topology, BadEnergyPricesNameTheirPlaceAndWhatIsAllowed) {
  const std::string text = read_default();
  const auto negative = errors_of(replace(text, "read: 31.2pJ/B", "read: -31.2pJ/B"));
  ASSERT_EQ(negative.size(), 1u);
  EXPECT_TRUE(std::regex_search(
      negative[0],
      std::regex(
          R"(^t\.yaml:\d+:\d+: energy\.hbm\.read: value '-31\.2pJ/B' is not allowed; allowed: a non-negative number in J/B)")))
      << negative[0];
  const auto unitless = errors_of(replace(text, "gemm: 0.5pJ/MAC", "gemm: 0.5"));
  ASSERT_EQ(unitless.size(), 1u);
  EXPECT_NE(unitless[0].find(
                "energy.gemm: value '0.5' is not allowed; allowed: a non-negative number in J/MAC"),
            std::string::npos)
      << unitless[0];
  const auto wrong_unit = errors_of(replace(text, "cpu: 17.5pJ/op", "cpu: 17.5pJ/B"));
  ASSERT_EQ(wrong_unit.size(), 1u);
  EXPECT_NE(wrong_unit[0].find("energy.cpu:"), std::string::npos) << wrong_unit[0];
  const auto unknown = errors_of(replace(text, "  link: 40pJ/B", "  link: 40pJ/B\n  dram: 1pJ/B"));
  ASSERT_EQ(unknown.size(), 1u);
  EXPECT_TRUE(std::regex_search(unknown[0],
                                std::regex(R"(^t\.yaml:\d+:3: energy\.dram: unknown key 'dram')")))
      << unknown[0];
  const auto watts = errors_of(text, {"energy.static.sip=10J"});
  ASSERT_EQ(watts.size(), 1u);
  EXPECT_NE(
      watts[0].find(
          "energy.static.sip: value '10J' is not allowed; allowed: a non-negative number in W"),
      std::string::npos)
      << watts[0];
  const auto math = errors_of(replace(text, "exp: 3.7pJ/op, ", ""));
  ASSERT_EQ(math.size(), 1u);
  EXPECT_NE(math[0].find("energy.math.exp: required key 'exp' is missing"), std::string::npos)
      << math[0];
}

TEST(Topology, MissingMathOpIsReported) {
  const auto errs = errors_of(replace(read_default(), "exp: 4, ", ""));
  ASSERT_EQ(errs.size(), 1u);
  EXPECT_NE(errs[0].find("pe.math.cycles.exp: required key 'exp' is missing"), std::string::npos)
      << errs[0];
}

TEST(Topology, MalformedYamlGivesLineAndColumn) {
  const auto errs = errors_of("name: [x\nsip: 3\n");
  ASSERT_EQ(errs.size(), 1u);
  EXPECT_TRUE(std::regex_search(errs[0], std::regex(R"(^t\.yaml:\d+:\d+: malformed YAML)"))) << errs[0];
}

TEST(Topology, EmptyAndScalarDocumentsAreRefused) {
  for (const char* doc : {"", "42", "- a\n- b\n"}) {
    const auto errs = errors_of(doc);
    ASSERT_EQ(errs.size(), 1u) << doc;
    EXPECT_NE(errs[0].find("a topology must be a YAML map"), std::string::npos) << errs[0];
  }
}

TEST(Topology, TruncatedFileIsRefused) {
  const std::string full = read_default();
  const auto errs = errors_of(full.substr(0, full.find("pe:")));
  ASSERT_EQ(errs.size(), 2u);
  EXPECT_NE(errs[0].find("pe: required key 'pe' is missing"), std::string::npos) << errs[0];
  EXPECT_NE(errs[1].find("energy: required key 'energy' is missing"), std::string::npos) << errs[1];
}

TEST(Topology, BinaryAndMissingFilesAreRefused) {
  const std::string bin = testing::TempDir() + "/binary.yaml";
  {
    std::ofstream out(bin, std::ios::binary);
    const char bytes[] = {'\x7f', 'E', 'L', 'F', '\0', '\x01', '\x02'};
    out.write(bytes, sizeof bytes);
  }
  try {
    Topology::load(bin);
    FAIL() << "binary file accepted";
  } catch (const TopologyError& e) {
    EXPECT_NE(std::string(e.what()).find("not a text file"), std::string::npos) << e.what();
  }
  try {
    Topology::load("/nonexistent/x.yaml");
    FAIL() << "missing file accepted";
  } catch (const TopologyError& e) {
    EXPECT_EQ(std::string(e.what()), "/nonexistent/x.yaml: cannot open topology file");
  }
}

// The library names a bad override "override KEY=VALUE"; a program shows its own word.
TEST(Topology, BadOverridesNameTheOverride) {
  const std::string yaml = read_default();
  auto errs = errors_of(yaml, {"sip.mesh.q=3"});
  ASSERT_EQ(errs.size(), 1u);
  EXPECT_EQ(errs[0], "override sip.mesh.q=3: no key 'q' under 'sip.mesh'; valid keys there: x, y");
  errs = errors_of(yaml, {"cube.hbm.latency=0"});
  ASSERT_EQ(errs.size(), 1u);
  EXPECT_EQ(errs[0].rfind("override cube.hbm.latency=0: cube.hbm.latency: value '0' is not allowed", 0), 0u)
      << errs[0];
  errs = errors_of(yaml, {"no_equals_sign"});
  ASSERT_EQ(errs.size(), 1u);
  EXPECT_EQ(errs[0], "override no_equals_sign: expected key.path=value");
  try {
    Topology::parse(yaml, "t.yaml", {"no_equals_sign"});
  } catch (const TopologyError& e) {
    EXPECT_STREQ(e.what(), "override no_equals_sign: expected key.path=value");
    EXPECT_EQ(e.errors_as("--set "), (std::vector<std::string>{"--set no_equals_sign: expected key.path=value"}));
  }
}

TEST(Topology, TheDefaultLinksJoinEveryPairOfSips) {
  const Topology t = test::topology("llama70b_4sip");
  const auto& l = t.system.links;
  EXPECT_EQ(l.kind, Topology::SystemSpec::Links::Kind::FullyConnected);
  EXPECT_EQ(l.link.bytes_per_cycle, 150u);  // 150 GB/s at 1 GHz
  EXPECT_EQ(l.link.latency_cycles, 500u);   // 500 ns at 1 GHz
  EXPECT_EQ(l.ports, (std::vector<std::uint32_t>{5, 6, 9, 10}));
  const SipGraph g(t);
  ASSERT_EQ(g.links().size(), 6u);
  for (std::uint32_t a = 0; a < 4; ++a)
    for (std::uint32_t b = 0; b < 4; ++b) EXPECT_EQ(g.hops(a, b), a == b ? 0u : 1u);
  const std::string shown = format_topology(t);
  EXPECT_NE(shown.find("links    fully_connected, 6 link(s)"), std::string::npos) << shown;
  EXPECT_NE(shown.find("450.0 GB/s out of a SIP (3 link(s) x 150.0 GB/s)"), std::string::npos) << shown;
  // `ports: quarters` follows the mesh: a cube per quarter, or fewer on a small mesh.
  EXPECT_EQ(test::topology("llama70b_4sip", {"sip.mesh.x=2", "sip.mesh.y=2"}).system.links.ports,
            (std::vector<std::uint32_t>{0, 1, 2, 3}));
  EXPECT_EQ(test::topology("llama70b_4sip", {"sip.mesh.x=1", "sip.mesh.y=1"}).system.links.ports,
            (std::vector<std::uint32_t>{0}));
  EXPECT_EQ(test::topology("llama70b_4sip", {"sip.mesh.x=5", "sip.mesh.y=1"}).system.links.ports,
            (std::vector<std::uint32_t>{2, 3}));
  // A message leaves at the port nearest its cube: (0,0) -> cube 5, (3,3) -> cube 10.
  EXPECT_EQ(nearest_port(t, CubeId(0)), CubeId(5));
  EXPECT_EQ(nearest_port(t, CubeId(15)), CubeId(10));
  EXPECT_EQ(nearest_port(t, CubeId(3)), CubeId(6));
  EXPECT_EQ(nearest_port(t, CubeId(12)), CubeId(9));
}

TEST(Topology, LinkUnitsConvertAtTheClockAndEveryKindRoutes) {
  // 2 GHz: 150 GB/s is 75 B/cycle, 500 ns 1000 cycles; cycles are taken as they are.
  Topology t = test::topology("llama70b_4sip", {"pe.clock=2GHz"});
  EXPECT_EQ(t.system.links.link.bytes_per_cycle, 75u);
  EXPECT_EQ(t.system.links.link.latency_cycles, 1000u);
  t = test::topology("llama70b_4sip", {"system.links.bandwidth=64B/cycle", "system.links.latency=300cycles"});
  EXPECT_EQ(t.system.links.link.bytes_per_cycle, 64u);
  EXPECT_EQ(t.system.links.link.latency_cycles, 300u);
  // A ring of 4: opposite SIPs are 2 links apart, through the lower-numbered neighbour.
  const SipGraph ring(test::topology("llama70b_4sip", {"system.links.topology=ring"}));
  ASSERT_EQ(ring.links().size(), 4u);
  EXPECT_EQ(ring.hops(0, 2), 2u);
  EXPECT_EQ(ring.hops(1, 3), 2u);
  const auto step = ring.next(0, 2);
  ASSERT_TRUE(step);
  EXPECT_EQ(ring.link_name(step->link), "sip0-sip1");
  // A switch: every SIP one link to it, every pair two links apart.
  const SipGraph sw(test::topology("llama70b_4sip", {"system.links.topology=switch"}));
  ASSERT_EQ(sw.links().size(), 4u);
  EXPECT_EQ(sw.link_name(2), "sip2-switch");
  EXPECT_EQ(sw.hops(1, 3), 2u);
  // Pairs: a chain 0-1-2-3.
  const SipGraph chain(
      test::topology("llama70b_4sip", {"system.links.topology=pairs", "system.links.pairs=[[0,1],[1,2],[2,3]]"}));
  EXPECT_EQ(chain.hops(0, 3), 3u);
}

TEST(Topology, BadLinksNameTheirPlaceAndWhatIsAllowed) {
  const std::string yaml = read_default();
  auto one = [&](const std::vector<std::string>& sets) {
    const auto errs = errors_of(yaml, sets);
    EXPECT_EQ(errs.size(), 1u);
    return errs.empty() ? std::string() : errs[0];
  };
  EXPECT_NE(one({"system.links.ports=[5,16]"}).find("system.links.ports: cube 16 does not exist; a SIP of this "
                                                    "topology has cubes 0 to 15"),
            std::string::npos);
  EXPECT_NE(one({"system.links.ports=[5,5]"}).find("cube 5 is listed twice"), std::string::npos);
  const std::string zero = one({"system.links.bandwidth=0GB/s"});
  EXPECT_NE(zero.find("system.links.bandwidth: value '0GB/s' is not allowed; allowed: each way, from 1 B to 1 MiB"),
            std::string::npos) << zero;
  EXPECT_NE(one({"system.links.latency=0ns"}).find("system.links.latency: value '0ns' is not allowed"),
            std::string::npos);
  EXPECT_NE(one({"system.links.topology=mesh"}).find("allowed: fully_connected, ring, switch, pairs"),
            std::string::npos);
  const std::string lacks = one({"system.links.topology=pairs", "system.links.pairs=[[0,1],[1,4]]"});
  EXPECT_NE(lacks.find("system.links.pairs: a link to SIP 4, which the system lacks; it has SIPs 0 to 3"),
            std::string::npos) << lacks;
  const std::string cut = one({"system.links.topology=pairs", "system.links.pairs=[[0,1],[2,3]]"});
  EXPECT_NE(cut.find("system.links: SIP 2, 3 are not reachable from SIP 0 over the links"), std::string::npos) << cut;
  EXPECT_NE(one({"system.links.topology=pairs", "system.links.pairs=[[0,1],[1,0],[1,2],[2,3]]"}).find("joined twice"),
            std::string::npos);
  // In the file: the error names the line and column of the bad value.
  const auto errs = errors_of(replace(yaml, "ports: quarters", "ports: [5, 6, 99]"));
  ASSERT_EQ(errs.size(), 1u);
  EXPECT_EQ(errs[0].rfind("t.yaml:10:19: system.links.ports: cube 99 does not exist", 0), 0u) << errs[0];
}

TEST(Topology, CrossFieldRulesAreChecked) {
  const auto errs = errors_of(read_default(), {"pe.dma.burst=1MiB", "pe.tcm=64KiB"});
  ASSERT_EQ(errs.size(), 1u);
  EXPECT_NE(errs[0].find("pe.dma.burst (1MiB) must not exceed pe.tcm (64KiB)"), std::string::npos)
      << errs[0];
}

}  // namespace kb
