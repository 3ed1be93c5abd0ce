// Energy from every modelled event (docs/energy.md): each cause is its counts times its
// prices, a price moves its own cause alone, the closed forms of a stream and a GEMM hold
// to the bit, and the power trace adds up to the energy.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "kernels/tl/ctx.h"
#include "platform/energy.h"
#include "tests/kernels/tl_support.h"
#include "tests/sc_main/cli_support.h"

namespace kb::test {
namespace {

using Json = nlohmann::json;

// The run's --json, in a folder of the test's own (ctest runs tests side by side).
Json run_json(const std::string& args) {
  const std::string file =
      temp_dir(testing::UnitTest::GetInstance()->current_test_info()->name()) + "/r.json";
  const Result r = run("run " + args + " --json " + file);
  EXPECT_EQ(r.code, 0) << r.out;
  std::ifstream in(file);
  return Json::parse(in);
}

// A layer of the tiny model over two SIPs: every cause has events (the all-reduces cross
// the links, the cube's PEs stream their siblings' weights over the fabric).
const std::string kLayer = "--kernel decoder_layer --model tiny --devices 0,1 --batch 64";

// The --set overrides that double every price of a cause.
std::vector<std::string> doubled(const std::string& cause, const Topology& t) {
  auto pj = [](double v, const char* unit) {
    std::ostringstream s;
    s.precision(17);
    s << 2 * v << unit;
    return s.str();
  };
  const Topology::EnergySpec& e = t.energy;
  if (cause == "hbm")
    return {"energy.hbm.read=" + pj(e.hbm_read, "pJ/B"),
            "energy.hbm.write=" + pj(e.hbm_write, "pJ/B")};
  if (cause == "tcm")
    return {"energy.tcm.read=" + pj(e.tcm_read, "pJ/B"),
            "energy.tcm.write=" + pj(e.tcm_write, "pJ/B")};
  if (cause == "fabric") return {"energy.fabric=" + pj(e.fabric, "pJ/B")};
  if (cause == "noc") return {"energy.noc=" + pj(e.noc, "pJ/B")};
  if (cause == "link") return {"energy.link=" + pj(e.link, "pJ/B")};
  if (cause == "gemm") return {"energy.gemm=" + pj(e.gemm_mac, "pJ/MAC")};
  if (cause == "cpu") return {"energy.cpu=" + pj(e.cpu_op, "pJ/op")};
  if (cause == "static")
    return {"energy.static.pe=" + pj(e.static_pe, "W"),
            "energy.static.cube=" + pj(e.static_cube, "W"),
            "energy.static.sip=" + pj(e.static_sip, "W")};
  std::vector<std::string> math;
  for (const auto& [op, v] : e.math) math.push_back("energy.math." + op + "=" + pj(v, "pJ/op"));
  return math;
}

}  // namespace

// The physics probe: doubling one cause's prices doubles that cause's energy and leaves
// every other cause, the latency and the counts unchanged, bit for bit.
TEST(Energy, DoublingACausesPricesDoublesItAndNothingElse) {
  const Topology t = topology("llama70b_4sip");
  const Json base = run_json(kLayer);
  const Json& by = base.at("energy").at("by_cause");
  for (const char* cause : kEnergyCauseNames) {
    ASSERT_GT(by.at(cause).get<double>(), 0)
        << cause << ": the probe needs every cause to have events";
    std::string args = kLayer;
    for (const std::string& s : doubled(cause, t)) args += " --set " + s;
    const Json moved = run_json(args);
    EXPECT_EQ(moved.at("simulated_cycles"), base.at("simulated_cycles")) << cause;
    EXPECT_EQ(moved.at("activity"), base.at("activity")) << cause;
    for (const char* other : kEnergyCauseNames) {
      const double was = by.at(other).get<double>(),
                   now = moved.at("energy").at("by_cause").at(other).get<double>();
      if (std::string(other) == cause) {
        EXPECT_EQ(now, 2 * was) << cause;
      } else {
        EXPECT_EQ(now, was) << other << " moved with " << cause << "'s prices";
      }
    }
  }
}

// The causes add up to the total as the JSON lists them, and the average power is the
// energy over the time.
TEST(Energy, TheCausesAddUpToTheTotal) {
  const Json r = run_json(kLayer);
  const Json& e = r.at("energy");
  double sum = 0;
  for (const auto& [cause, joules] : e.at("by_cause").items()) sum += joules.get<double>();
  EXPECT_EQ(sum, e.at("total_joules").get<double>());
  EXPECT_EQ(e.at("seconds"), r.at("simulated_seconds"));
  EXPECT_DOUBLE_EQ(e.at("average_watts").get<double>(), sum / e.at("seconds").get<double>());
}

// A stream of HBM reads into the TCM is its bytes at the HBM's and the TCM's prices plus
// static power for its time, exactly; nothing else has a cost.
TEST(Energy, AStreamIsItsBytesTimesThePricesPlusStaticPower) {
  const Topology t = topology("llama70b_4sip");
  const Json r = run_json("--kernel hbm_stream --bytes 64KiB");
  const Json& counts = r.at("activity");
  std::uint64_t read = 0, written = 0;
  for (const Json& sip : counts) {
    read += sip.at("counts").at("hbm_read_bytes").get<std::uint64_t>();
    written += sip.at("counts").at("tcm_write_bytes").get<std::uint64_t>();
    for (const auto& [name, n] : sip.at("counts").items())
      if (name != "hbm_read_bytes" && name != "tcm_write_bytes") {
        EXPECT_EQ(n, 0u) << name;
      }
  }
  EXPECT_EQ(read, 512u * 64 * 1024);
  EXPECT_EQ(written, read);
  const Json& by = r.at("energy").at("by_cause");
  EXPECT_EQ(by.at("hbm").get<double>(), static_cast<double>(read) * t.energy.hbm_read * 1e-12);
  EXPECT_EQ(by.at("tcm").get<double>(), static_cast<double>(written) * t.energy.tcm_write * 1e-12);
  EXPECT_EQ(by.at("static").get<double>(),
            static_watts(t, 4) * r.at("simulated_seconds").get<double>());
  for (const char* idle : {"fabric", "noc", "link", "gemm", "math", "cpu"})
    EXPECT_EQ(by.at(idle), 0.0) << idle;
  // With the TCM free, the energy is the bytes at the HBM's price plus static power x time.
  const Json free_tcm = run_json("--kernel hbm_stream --bytes 64KiB --set energy.tcm.write=0pJ/B");
  EXPECT_EQ(free_tcm.at("energy").at("total_joules").get<double>(),
            static_cast<double>(read) * t.energy.hbm_read * 1e-12 +
                static_watts(t, 4) * free_tcm.at("simulated_seconds").get<double>());
}

// A GEMM's energy is its MACs at the MAC's price, and it reads its operands from the TCM
// and writes its product there once.
TEST(Energy, AGemmIsItsMacsTimesThePrice) {
  Machine m("small_1sip_2x2x2", false);
  m.rt.launch(SipId(0), "gemm", [](tl::Ctx& tl) {
    if (tl.cube().value != 0 || tl.pe().value != 0) return;
    const tl::Tensor a = tl.empty({32, 64}, DType::bf16, "a"),
                     b = tl.empty({64, 128}, DType::bf16, "b");
    tl.dot(a, b);
  });
  m.rt.run();
  const std::vector<SipActivity> act = activity_of(m.sys, {SipId(0)});
  ASSERT_EQ(act.size(), 1u);
  const ActCounts& c = act[0].totals;
  EXPECT_EQ(c[act_index(Act::Mac)], 32u * 64 * 128);
  EXPECT_EQ(c[act_index(Act::TcmRead)], (32u * 64 + 64u * 128) * 2);
  EXPECT_EQ(c[act_index(Act::TcmWrite)], 32u * 128 * 4);
  EXPECT_EQ(c[act_index(Act::HbmRead)], 0u);
  const Energy e = account(act, m.topo, 1, 1e-6);
  EXPECT_EQ(e.by_cause[5], 32.0 * 64 * 128 * m.topo.energy.gemm_mac * 1e-12);  // gemm
}

// Timing and data mode count the same events, so give the same energy.
TEST(Energy, TimingAndDataModeGiveTheSameEnergy) {
  const Json timing = run_json(kLayer), data = run_json(kLayer + " --data");
  EXPECT_EQ(timing.at("activity"), data.at("activity"));
  EXPECT_EQ(timing.at("energy"), data.at("energy"));
}

// The power trace: a row a SIP and window, a column of watts a cause; its energy, watts
// times each window's time, is the run's; the timeline gets the same as counter tracks.
TEST(Energy, ThePowerTraceAddsUpToTheEnergy) {
  const std::string dir = temp_dir("power_trace");
  const Result r = run("run " + kLayer + " --power-window 256 --power-trace " + dir +
                       "/p.csv --json " + dir + "/r.json --timeline " + dir + "/t.json");
  ASSERT_EQ(r.code, 0) << r.out;
  std::ifstream json_in(dir + "/r.json");
  const Json result = Json::parse(json_in);
  const double clock =
      result.at("simulated_cycles").get<double>() / result.at("simulated_seconds").get<double>();
  std::ifstream in(dir + "/p.csv");
  std::string line;
  std::getline(in, line);
  EXPECT_EQ(line,
            "sip,start_cycle,end_cycle,hbm_W,tcm_W,fabric_W,noc_W,link_W,gemm_W,math_W,cpu_W,"
            "static_W,total_W");
  double joules = 0;
  std::map<int, std::uint64_t> covered;  // cycles of windows a SIP
  int rows = 0;
  while (std::getline(in, line)) {
    std::istringstream cells(line);
    std::vector<double> v;
    for (std::string cell; std::getline(cells, cell, ',');) v.push_back(std::stod(cell));
    ASSERT_EQ(v.size(), 13u) << line;
    double sum = 0;
    for (std::size_t c = 3; c < 12; ++c) sum += v[c];
    EXPECT_NEAR(v[12], sum, 1e-9 * sum);
    const double seconds = (v[2] - v[1]) / clock;
    joules += v[12] * seconds;
    EXPECT_LE(v[2] - v[1], 256);
    covered[static_cast<int>(v[0])] += static_cast<std::uint64_t>(v[2] - v[1]);
    ++rows;
  }
  EXPECT_GT(rows, 2 * 4);
  EXPECT_EQ(covered.size(), 2u);
  for (const auto& [sip, cycles] : covered)
    EXPECT_EQ(cycles, result.at("simulated_cycles").get<std::uint64_t>()) << sip;
  const double total = result.at("energy").at("total_joules").get<double>();
  EXPECT_NEAR(joules, total, 1e-9 * total);
  std::ifstream timeline(dir + "/t.json");
  std::stringstream text;
  text << timeline.rdbuf();
  EXPECT_NE(text.str().find("\"name\":\"power (W)\""), std::string::npos);
}

// A power trace that cannot be written is refused before the run (a window of 0 is one
// of tests/sc_main/test_bad_input.cpp's cases).
TEST(Energy, AnUnwritablePowerTraceIsRefused) {
  const Result nowhere = run("run --kernel hbm_stream --power-trace /no/such/folder/p.csv");
  EXPECT_NE(nowhere.code, 0);
  EXPECT_NE(nowhere.out.find("--power-trace"), std::string::npos) << nowhere.out;
  EXPECT_FALSE(std::filesystem::exists("/no/such/folder/p.csv"));
}

}  // namespace kb::test
