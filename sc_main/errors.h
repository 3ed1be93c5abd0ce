#pragma once
// The command line's two kinds of failure, which main() maps to exit codes.
#include <stdexcept>

namespace kb::cli {

// A malformed command line: exit code 2.
struct UsageError : std::runtime_error {
  using std::runtime_error::runtime_error;
};
// Bad input found while running (a file, a value out of range for the machine): exit code 1.
struct InputError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

}  // namespace kb::cli
