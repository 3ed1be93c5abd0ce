#pragma once
// The context lengths of a decode batch, from the --batch text (docs/gqa_decode_batch.md):
//  - "32768,1024,4096": a comma list;
//  - "@FILE": one length per line, '#' starts a comment, blank lines skipped;
//  - "random:N:MIN-MAX[:SEED]": N lengths drawn uniformly from [MIN, MAX] (seed 1 when not
//    given), the same on every compiler (mt19937_64, whose sequence the standard fixes).
#include <cstdint>
#include <string>
#include <vector>

#include "workloads/workload.h"

namespace kb::gqa {

// The most requests a batch holds (far beyond a serving batch; it bounds the host's
// per-request tables before anything is drawn or read).
inline constexpr std::uint64_t kMaxRequests = 65536;

// Throws workloads::ConfigError naming {batch} (and FILE:LINE for a file) for a length of
// 0, an empty list, a malformed list, file or random spec, random's MIN > MAX, or more
// than kMaxRequests requests.
std::vector<std::uint64_t> parse_batch(const std::string& spec);

// batch (the forms above; each workload has its default) and page_rows: a batch of
// requests over a paged KV cache, as gqa_decode_batch and the model steps read it.
const workloads::KnobSet& batch_knobs();

}  // namespace kb::gqa
