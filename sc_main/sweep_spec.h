#pragma once
// A sweep spec (docs/sweeps.md): a design-space study as a YAML file of `kernbench run`
// flags, fixed (`run`) and swept (`grid`: a cross product; `zip`: lists that vary
// together; `where`: conditions a point must meet), optionally in named `parts` that each
// sweep their own grid. Loading validates the whole spec before anything runs: every
// key, every value, and every point's run against its topology, each problem named at
// its file:line:column.
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace kb::cli {

// One point of a sweep: a `kernbench run` command line and the values that made it.
struct SweepPoint {
  std::string part;                // its part's name ("" for a spec without parts)
  nlohmann::ordered_json values;   // each swept key's value, as the spec writes it
  nlohmann::ordered_json numbers;  // those values that are quantities, as numbers (magnitude)
  std::vector<std::string> args;   // `run ...`, without the output flags

  // "decode seq-len=32768 set.cube.hbm.bandwidth=32B/cycle": the part and the values.
  std::string key() const;
};

struct SweepSpec {
  std::string file, name;
  std::vector<SweepPoint> points;

  // Reads and validates a spec, with `more` run flags added to every point (bench's
  // --topology); throws SpecError listing every problem found.
  static SweepSpec load(const std::string& file, const std::vector<std::string>& more = {});
};

// Every problem of a spec, each "FILE:LINE:COLUMN: what".
class SpecError : public std::runtime_error {
 public:
  explicit SpecError(std::vector<std::string> errors);
  const std::vector<std::string>& errors() const { return errors_; }

 private:
  std::vector<std::string> errors_;
};

// The number a value stands for, in its unit's base (bytes, bytes per cycle, cycles,
// hertz), or nothing for a value that is not a quantity ("zigzag").
std::optional<double> magnitude(const std::string& text);

}  // namespace kb::cli
