#pragma once
// Running a model step through the program (a process of its own: one SystemC
// elaboration each) and reading its --json: what the whole-model tests compare.
#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "tests/sc_main/cli_support.h"

namespace kb::test {

// The run's --json, in a folder of the test's own (ctest runs tests side by side).
inline nlohmann::json run_json(const std::string& args) {
  const std::string file =
      temp_dir(testing::UnitTest::GetInstance()->current_test_info()->name()) + "/r.json";
  const Result r = run("run " + args + " --json " + file);
  EXPECT_EQ(r.code, 0) << r.out;
  std::ifstream in(file);
  return nlohmann::json::parse(in);
}

// The cycles of op `op` in a step's by_op.
inline double op_cycles(const nlohmann::json& r, const std::string& op) {
  for (const auto& o : r.at("by_op"))
    if (o.at("op") == op) return o.at("cycles").get<double>();
  ADD_FAILURE() << "no op " << op;
  return 0;
}

}  // namespace kb::test
