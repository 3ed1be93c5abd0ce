#pragma once
// The requests a serving run replays (docs/serve.md): read from a trace file, the Azure
// LLM inference trace's CSV (TIMESTAMP,ContextTokens,GeneratedTokens; the 2023 and 2024
// releases) or JSON lines ({"arrival_s", "prompt_tokens", "output_tokens"}), or drawn
// from a synthetic arrival process. Arrival times count from the first request.
#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

namespace kb::serve {

struct Request {
  std::uint32_t id = 0;  // its place in the trace, from 0
  double arrival_s = 0;
  std::uint64_t prompt_tokens = 0, output_tokens = 0;
};

// A bad trace: "FILE:LINE: what was wrong; what is allowed".
class TraceError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// The requests of a trace file, its form told by its first line (a JSON object or a CSV
// header). Every request has at least one prompt and one output token, and arrivals
// never go back in time.
std::vector<Request> read_trace(const std::string& path);

// A synthetic trace: "poisson:rate=R,n=N,prompt=A-B,output=C-D[,seed=S]" or
// "gamma:rate=R,cv=CV,n=N,prompt=A-B,output=C-D[,seed=S]": N requests arriving at R a
// second (gamma: inter-arrival times with that coefficient of variation, burstier above
// 1), prompt and output lengths uniform in their ranges, drawn from mt19937_64 (a
// sequence the C++ standard fixes) through formulas of this file, so every compiler and
// library gives the same trace. Throws TraceError naming the part that is wrong.
std::vector<Request> synthetic(const std::string& spec);

}  // namespace kb::serve
