#pragma once
// The text report of a run: what the workloads' report() lines share, and the lines
// every report ends with (numerics, utilisation, wall time, simulator speed).
#include <cstdio>
#include <string>

#include <nlohmann/json.hpp>

#include "workloads/result.h"

namespace kb::report {

// Report text, a printf-formatted line at a time.
class Lines {
 public:
  template <class... Args>
  void operator()(const char* fmt, Args... args) {
    char line[512];
    std::snprintf(line, sizeof line, fmt, args...);
    text_ += line;
  }
  const std::string& text() const { return text_; }

 private:
  std::string text_;
};

// "  shape  H_q 64, H_kv 8 (G 8), d 128, S 32768, T_q 1, causal, bf16" from the knobs.
void shape_line(Lines& add, const nlohmann::json& knobs);
// "[164, 4588)", or "-" for a span that never began.
std::string span_text(const nlohmann::json& span);
// "  simulated  5773 cycles = 5.773 us".
void simulated_line(Lines& add, const workloads::Result& r);
// The numerics, utilisation, wall-time and simulator lines.
std::string tail(const workloads::Result& r);
// This process's peak resident memory.
long peak_rss_kib();

}  // namespace kb::report
