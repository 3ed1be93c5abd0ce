#include "workloads/gqa_decode_batch/batch_spec.h"

#include <fstream>
#include <limits>
#include <random>

#include "workloads/workload.h"

namespace kb::gqa {
namespace {

using workloads::ConfigError;

// A whole decimal number of at least 1; `where` names it in the error.
std::uint64_t length(const std::string& text, const std::string& where) {
  std::uint64_t v = 0;
  bool digits = !text.empty();
  for (const char c : text) {
    if (c < '0' || c > '9' || v > (std::numeric_limits<std::uint64_t>::max() - 9) / 10) {
      digits = false;
      break;
    }
    v = v * 10 + static_cast<std::uint64_t>(c - '0');
  }
  if (!digits) throw ConfigError(where + " '" + ConfigError::literal(text) + "': a length is a whole number of at least 1", true);
  if (v == 0) throw ConfigError(where + " 0: a request needs a context of at least 1 position", true);
  return v;
}

std::string trim(const std::string& s) {
  const auto b = s.find_first_not_of(" \t\r"), e = s.find_last_not_of(" \t\r");
  return b == std::string::npos ? std::string() : s.substr(b, e - b + 1);
}

std::vector<std::uint64_t> from_file(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw ConfigError("{batch} '@" + ConfigError::literal(path) + "': cannot read the file");
  std::vector<std::uint64_t> out;
  std::string line;
  for (std::size_t n = 1; std::getline(in, line); ++n) {
    const std::string text = trim(line.substr(0, line.find('#')));
    if (!text.empty()) out.push_back(length(text, ConfigError::literal(path) + ":" + std::to_string(n) + ": {batch} length"));
  }
  if (out.empty()) throw ConfigError("{batch} '@" + ConfigError::literal(path) + "': no lengths in the file", true);
  return out;
}

std::vector<std::uint64_t> random_batch(const std::string& spec) {
  // random:N:MIN-MAX[:SEED]
  const std::string form = "{batch} '" + ConfigError::literal(spec) + "': random:N:MIN-MAX[:SEED]";
  std::vector<std::string> parts;
  for (std::size_t at = 7;;) {
    const std::size_t colon = spec.find(':', at);
    parts.push_back(spec.substr(at, colon == std::string::npos ? std::string::npos : colon - at));
    if (colon == std::string::npos) break;
    at = colon + 1;
  }
  const std::size_t dash = parts.size() >= 2 ? parts[1].find('-') : std::string::npos;
  if ((parts.size() != 2 && parts.size() != 3) || dash == std::string::npos) throw ConfigError(form + " expected", true);
  const std::uint64_t n = length(parts[0], form + ": N"), lo = length(parts[1].substr(0, dash), form + ": MIN"),
                      hi = length(parts[1].substr(dash + 1), form + ": MAX");
  if (lo > hi) throw ConfigError(form + ": MIN " + std::to_string(lo) + " is over MAX " + std::to_string(hi), true);
  if (n > kMaxRequests)
    throw ConfigError(form + ": N " + std::to_string(n) + " is over the " + std::to_string(kMaxRequests) +
                          " requests a batch may hold",
                      true);
  std::uint64_t seed = 1;
  if (parts.size() == 3 && !parts[2].empty()) {
    seed = 0;
    for (const char c : parts[2]) {
      if (c < '0' || c > '9') throw ConfigError(form + ": SEED '" + ConfigError::literal(parts[2]) + "' is not a whole number", true);
      if (seed > (std::numeric_limits<std::uint64_t>::max() - 9) / 10)
        throw ConfigError(form + ": SEED '" + ConfigError::literal(parts[2]) + "' is over 2^64 - 1", true);
      seed = seed * 10 + static_cast<std::uint64_t>(c - '0');
    }
  }
  std::mt19937_64 gen(seed);
  std::vector<std::uint64_t> out(n);
  // The remainder of a 64-bit draw: its bias, at most (MAX - MIN + 1) / 2^64, is nil here.
  for (auto& len : out) len = lo + gen() % (hi - lo + 1);
  return out;
}

std::vector<std::uint64_t> from_list(const std::string& spec) {
  if (trim(spec).empty()) throw ConfigError("{batch} is empty: give lengths, @FILE or random:N:MIN-MAX[:SEED]", true);
  std::vector<std::uint64_t> out;
  for (std::size_t at = 0;;) {
    const std::size_t comma = spec.find(',', at);
    const std::string item = trim(spec.substr(at, comma == std::string::npos ? std::string::npos : comma - at));
    out.push_back(length(item, "{batch} item " + std::to_string(out.size() + 1)));
    if (comma == std::string::npos) break;
    at = comma + 1;
  }
  return out;
}

}  // namespace

std::vector<std::uint64_t> parse_batch(const std::string& spec) {
  if (spec.rfind("random:", 0) == 0) return random_batch(spec);
  std::vector<std::uint64_t> out = spec.rfind("@", 0) == 0 ? from_file(spec.substr(1)) : from_list(spec);
  if (out.size() > kMaxRequests)
    throw ConfigError("{batch}: " + std::to_string(out.size()) + " requests; a batch holds at most " +
                          std::to_string(kMaxRequests),
                      true);
  return out;
}

const workloads::KnobSet& batch_knobs() {
  static const workloads::KnobSet set{
      "batch",
      {{"batch", "",
        "the requests' context lengths: L1,L2,..., @FILE (one a line, # comments) or random:N:MIN-MAX[:SEED] "
        "(gqa_decode_batch's default random:64:1024-32768:7; decoder_layer's and model_step's 8192)"},
       {"page_rows", "16", "KV rows per page of the paged KV cache"}}};
  return set;
}

}  // namespace kb::gqa
