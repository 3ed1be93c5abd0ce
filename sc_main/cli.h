#pragma once
// The `kernbench` command line: parses arguments and runs the chosen command.
namespace kb::cli {

// Exit codes: 0 success, 1 a run or check failed / bad input, 2 usage error.
int main(int argc, char** argv);

}  // namespace kb::cli
