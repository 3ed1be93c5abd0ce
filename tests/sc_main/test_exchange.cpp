// The pipes between the parts of a --jobs run of coupled SIPs (sc_main/exchange.h): each
// round, every part gets every part's message in rank order, however large; a part whose
// peer stopped stops with PeerStopped instead of waiting for it.
#include <gtest/gtest.h>

#include <sys/wait.h>
#include <unistd.h>

#include <string>
#include <vector>

#include "sc_main/exchange.h"

namespace kb::cli {
namespace {

// A part's message of a round: larger than a pipe holds, so that the parts must read
// while they write.
std::string message(std::uint32_t rank, int round) {
  return std::string(200000 + 1000 * rank, static_cast<char>('a' + rank + 3 * round));
}

// Starts a process per part with its pipes, running `part(exchange)` for its exit code;
// returns their exit codes in rank order.
template <class Part>
std::vector<int> run_parts(std::uint32_t parts, Part part) {
  PipeMesh mesh(parts);
  std::vector<pid_t> pids;
  for (std::uint32_t r = 0; r < parts; ++r) {
    const pid_t pid = ::fork();
    if (pid == 0) {
      for (const auto& [from, to] : mesh.descriptors(r)) ::dup2(from, to);
      mesh.close();
      PipeExchange exchange(mesh.plan(r));
      int code = 0;
      try {
        code = part(exchange);
      } catch (const PeerStopped&) {
        code = kPeerStoppedExit;
      }
      ::_exit(code);
    }
    pids.push_back(pid);
  }
  mesh.close();
  std::vector<int> codes;
  for (const pid_t pid : pids) {
    int status = 0;
    ::waitpid(pid, &status, 0);
    codes.push_back(WIFEXITED(status) ? WEXITSTATUS(status) : 100);
  }
  return codes;
}

TEST(Exchange, EveryPartGetsEveryMessageInRankOrder) {
  const auto codes = run_parts(3, [](PipeExchange& x) {
    for (int round = 0; round < 4; ++round) {
      const std::vector<std::string> all = x.all_gather(message(x.rank(), round));
      if (all.size() != 3) return 1;
      for (std::uint32_t r = 0; r < 3; ++r)
        if (all[r] != message(r, round)) return 2;
    }
    return 0;
  });
  EXPECT_EQ(codes, (std::vector<int>{0, 0, 0}));
}

TEST(Exchange, APartWhosePeerStoppedStopsToo) {
  const auto codes = run_parts(3, [](PipeExchange& x) {
    if (x.rank() == 1) return 7;  // fails before its first round
    x.all_gather(message(x.rank(), 0));
    return 0;
  });
  EXPECT_EQ(codes, (std::vector<int>{kPeerStoppedExit, 7, kPeerStoppedExit}));
}

TEST(Exchange, ThePlanOfAPartParsesBackAndNothingElseDoes) {
  const PipePlan plan{2, 4, 17};
  const auto back = parse_pipe_plan(plan.text());
  ASSERT_TRUE(back);
  EXPECT_EQ(back->rank, 2u);
  EXPECT_EQ(back->parts, 4u);
  EXPECT_EQ(back->first, 17);
  for (const char* bad : {"", "2,4", "4,4,17", "2,4,17,1", "2,4,x", "2,4,1"}) EXPECT_FALSE(parse_pipe_plan(bad)) << bad;
}

}  // namespace
}  // namespace kb::cli
