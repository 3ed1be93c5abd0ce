#pragma once
// Serving as vLLM does it (docs/serve.md): requests arrive, wait, are admitted while the
// paged KV cache has room, and run in steps of continuous batching; a step's time comes
// from a StepTimer (the machine's simulated or fitted model steps). Three policies:
//   vllm     a step prefills whole prompts of waiting requests (as many as the token
//            budget and the batch allow), or, when none can be admitted, decodes every
//            running request: prefills first, never mixed;
//   sarathi  every running decode, then prefill chunks of at most `chunk` tokens (the
//            partly prefilled requests first, then new ones) up to the token budget:
//            chunked prefill mixed with decodes (Sarathi-Serve);
//   orca     every running decode and whole prompts of new requests, mixed, up to the
//            token budget (iteration-level scheduling).
// When a decode needs a KV page and none is free, the latest-arrived running request is
// preempted: its pages are freed and it waits again at the head of the queue, to
// recompute its prompt and the tokens it has produced (vLLM's recompute). A request
// produces exactly its output tokens: the step that ends its prompt gives the first,
// each decode step one more.
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "serve/trace.h"

namespace kb::serve {

enum class Policy : std::uint8_t { Vllm, Sarathi, Orca };
Policy policy_of(const std::string& name);  // throws std::invalid_argument naming the allowed ones
const char* policy_name(Policy p);

struct SchedulerConfig {
  Policy policy = Policy::Vllm;
  std::uint64_t max_batch_tokens =
      8192;                        // tokens a step computes: a decode 1, a prefill chunk its length
  std::uint32_t max_seqs = 256;    // requests a step runs (the machine's largest decode batch)
  std::uint64_t chunk = 512;       // sarathi: a prefill chunk's most tokens
  std::uint64_t kv_pages = 0;      // pages of the paged KV cache
  std::uint32_t page_tokens = 16;  // tokens a page holds
};

// What one step runs: each decode's request and context (its new token included), each
// prefill chunk's request, tokens and the prefix already cached before it.
struct StepPlan {
  struct Decode {
    std::uint32_t request = 0;
    std::uint64_t context = 0;
  };
  struct Prefill {
    std::uint32_t request = 0;
    std::uint64_t tokens = 0, cached = 0;
  };
  std::vector<Decode> decodes;
  std::vector<Prefill> prefills;
  std::uint64_t prefill_tokens() const;
  bool empty() const { return decodes.empty() && prefills.empty(); }
};

// A step's time in seconds (the machine's model step for the plan).
using StepTimer = std::function<double(const StepPlan&)>;

struct RequestResult {
  Request request;
  double first_token_s = 0, finish_s = 0;
  std::uint32_t preemptions = 0;
  std::uint64_t tokens_out = 0;  // produced: always the request's output tokens
  double ttft() const { return first_token_s - request.arrival_s; }
  double tpot() const;  // between its tokens after the first (0 for a single token)
  double end_to_end() const { return finish_s - request.arrival_s; }
};

struct StepRow {
  double start_s = 0, seconds = 0;
  std::uint32_t decodes = 0;
  std::uint64_t prefill_tokens = 0;
  std::uint32_t prefills = 0;
  std::uint64_t kv_pages_used = 0;
};

struct ServeRun {
  std::vector<RequestResult> requests;  // in trace order
  std::vector<StepRow> steps;
};

// Replays `requests` (in arrival order) under `config`, each step timed by `timer`.
// Throws std::invalid_argument for a request that could never run (its prompt and
// output need more pages than the cache has, or a prompt beyond the token budget under
// a policy that does not chunk).
ServeRun replay(const std::vector<Request>& requests, const SchedulerConfig& config,
                const StepTimer& timer);

}  // namespace kb::serve
