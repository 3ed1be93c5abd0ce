#include "serve/scheduler.h"

#include <algorithm>
#include <deque>
#include <stdexcept>

namespace kb::serve {

namespace {

std::uint64_t pages_for(std::uint64_t tokens, std::uint32_t page_tokens) {
  return (tokens + page_tokens - 1) / page_tokens;
}

// A request as the scheduler sees it.
struct Live {
  RequestResult result;
  std::uint64_t target =
      0;  // tokens its prefill computes: the prompt, and after a preemption the tokens produced
  std::uint64_t prefilled = 0;  // of target
  std::uint64_t pages = 0;      // KV pages it holds
  bool first_done = false;
  std::uint64_t prompt() const { return result.request.prompt_tokens; }
  bool decoding() const { return prefilled == target; }
  std::uint64_t context() const {
    return prompt() + result.tokens_out;
  }  // a decode's context, its new token's KV included
  bool finished() const { return result.tokens_out == result.request.output_tokens; }
};

class Server {
 public:
  Server(const std::vector<Request>& requests, const SchedulerConfig& c, const StepTimer& timer)
      : c_(c), timer_(timer), free_(c.kv_pages) {
    for (const Request& r : requests) {
      const std::uint64_t most =
          r.prompt_tokens + r.output_tokens - 1;  // the longest a recompute prefills
      if (pages_for(most, c.page_tokens) > c.kv_pages)
        throw std::invalid_argument(
            "request " + std::to_string(r.id) + " (" + std::to_string(r.prompt_tokens) +
            " prompt and " + std::to_string(r.output_tokens) + " output tokens) needs " +
            std::to_string(pages_for(most, c.page_tokens)) + " KV pages of " +
            std::to_string(c.page_tokens) + " tokens; the cache has " + std::to_string(c.kv_pages));
      if (c.policy != Policy::Sarathi && most > c.max_batch_tokens)
        throw std::invalid_argument(
            "request " + std::to_string(r.id) + " may prefill " + std::to_string(most) +
            " tokens in one step, more than the step's budget of " +
            std::to_string(c.max_batch_tokens) + " (" + policy_name(c.policy) +
            " does not chunk prefills; sarathi does)");
      live_.push_back({});
      live_.back().result.request = r;
      live_.back().target = r.prompt_tokens;
    }
  }

  ServeRun run() {
    double now = 0;
    std::size_t next = 0;  // the next request to arrive
    std::size_t done = 0;
    while (done < live_.size()) {
      for (; next < live_.size() && live_[next].result.request.arrival_s <= now; ++next)
        waiting_.push_back(next);
      const StepPlan plan = plan_step();
      if (plan.empty()) {
        if (next == live_.size())
          throw std::logic_error("the scheduler can run nothing and no request is to come");
        now = live_[next].result.request.arrival_s;
        continue;
      }
      const double seconds = timer_(plan);
      run_.steps.push_back({now, seconds, static_cast<std::uint32_t>(plan.decodes.size()),
                            plan.prefill_tokens(), static_cast<std::uint32_t>(plan.prefills.size()),
                            c_.kv_pages - free_});
      now += seconds;
      done += apply(plan, now);
    }
    for (const Live& l : live_) run_.requests.push_back(l.result);
    return std::move(run_);
  }

 private:
  // Frees a running request's pages and puts it back at the head of the queue, to
  // recompute its prompt and what it produced.
  void preempt(std::size_t i) {
    Live& l = live_[i];
    free_ += l.pages;
    l.pages = 0;
    l.target = l.prompt() + l.result.tokens_out;
    l.prefilled = 0;
    ++l.result.preemptions;
    running_.erase(std::find(running_.begin(), running_.end(), i));
    waiting_.push_front(i);
  }

  // The running decodes, each with the page its new token needs (a later request
  // preempted for it when none is free).
  void decodes(StepPlan& plan) {
    for (std::size_t k = 0; k < running_.size();) {
      Live& l = live_[running_[k]];
      if (!l.decoding()) {
        ++k;
        continue;
      }
      const std::uint64_t need = pages_for(l.context(), c_.page_tokens);
      while (l.pages < need && free_ == 0) preempt(running_.back());
      if (k >= running_.size() || &live_[running_[k]] != &l) break;  // it was the one preempted
      free_ -= need - l.pages;
      l.pages = need;
      plan.decodes.push_back({l.result.request.id, l.context()});
      ++k;
    }
  }

  // Admits the head of the queue with pages for its whole prefill, if they are free
  // and the batch has room.
  bool admit(std::size_t seqs) {
    if (waiting_.empty() || seqs >= c_.max_seqs) return false;
    Live& l = live_[waiting_.front()];
    const std::uint64_t need = pages_for(l.target, c_.page_tokens);
    if (need > free_) return false;
    free_ -= need;
    l.pages = need;
    running_.push_back(waiting_.front());
    waiting_.pop_front();
    return true;
  }

  StepPlan plan_step() {
    StepPlan plan;
    std::uint64_t budget = c_.max_batch_tokens;
    if (c_.policy == Policy::Vllm) {
      // Whole prompts of new requests while they fit; decodes only in a step without them.
      while (!waiting_.empty() && live_[waiting_.front()].target <= budget &&
             admit(running_.size())) {
        Live& l = live_[running_.back()];
        plan.prefills.push_back({l.result.request.id, l.target, 0});
        budget -= l.target;
      }
      if (plan.prefills.empty()) decodes(plan);
      return plan;
    }
    decodes(plan);
    budget -= std::min<std::uint64_t>(budget, plan.decodes.size());
    if (c_.policy == Policy::Sarathi)
      for (const std::size_t i : running_) {  // the partly prefilled, in admission order
        Live& l = live_[i];
        if (l.decoding() || l.prefilled == 0 || budget == 0) continue;
        const std::uint64_t n = std::min({c_.chunk, l.target - l.prefilled, budget});
        plan.prefills.push_back({l.result.request.id, n, l.prefilled});
        budget -= n;
      }
    while (budget > 0 && !waiting_.empty()) {
      const std::uint64_t target = live_[waiting_.front()].target;
      const std::uint64_t n =
          c_.policy == Policy::Sarathi ? std::min({c_.chunk, target, budget}) : target;
      if (n > budget || !admit(running_.size())) break;
      plan.prefills.push_back({live_[running_.back()].result.request.id, n, 0});
      budget -= n;
    }
    return plan;
  }

  // The step's effect at its end `now`: prefills advance (the one that ends a prompt
  // gives a token), decodes give a token each. Returns the requests it finished.
  std::size_t apply(const StepPlan& plan, double now) {
    std::size_t finished = 0;
    auto produce = [&](Live& l) {
      ++l.result.tokens_out;
      if (!l.first_done) l.result.first_token_s = now;
      l.first_done = true;
      if (!l.finished()) return;
      l.result.finish_s = now;
      free_ += l.pages;
      l.pages = 0;
      running_.erase(std::find(running_.begin(), running_.end(), index_of(l)));
      ++finished;
    };
    for (const StepPlan::Prefill& p : plan.prefills) {
      Live& l = live_[p.request];
      l.prefilled += p.tokens;
      if (l.decoding()) produce(l);
    }
    for (const StepPlan::Decode& d : plan.decodes) produce(live_[d.request]);
    return finished;
  }

  std::size_t index_of(const Live& l) const { return static_cast<std::size_t>(&l - live_.data()); }

  SchedulerConfig c_;
  const StepTimer& timer_;
  std::uint64_t free_;
  std::vector<Live> live_;            // by request id
  std::deque<std::size_t> waiting_;   // arrived, not admitted (the preempted first)
  std::vector<std::size_t> running_;  // admitted, in admission order
  ServeRun run_;
};

}  // namespace

Policy policy_of(const std::string& name) {
  for (const Policy p : {Policy::Vllm, Policy::Sarathi, Policy::Orca})
    if (name == policy_name(p)) return p;
  throw std::invalid_argument("scheduler '" + name + "': allowed values: vllm, sarathi, orca");
}

const char* policy_name(Policy p) {
  switch (p) {
    case Policy::Vllm:
      return "vllm";
    case Policy::Sarathi:
      return "sarathi";
    case Policy::Orca:
      return "orca";
  }
  return "vllm";
}

std::uint64_t StepPlan::prefill_tokens() const {
  std::uint64_t n = 0;
  for (const Prefill& p : prefills) n += p.tokens;
  return n;
}

double RequestResult::tpot() const {
  return tokens_out > 1 ? (finish_s - first_token_s) / static_cast<double>(tokens_out - 1) : 0.0;
}

ServeRun replay(const std::vector<Request>& requests, const SchedulerConfig& config,
                const StepTimer& timer) {
  if (config.max_batch_tokens == 0 || config.max_seqs == 0 || config.chunk == 0 ||
      config.kv_pages == 0 || config.page_tokens == 0)
    throw std::invalid_argument(
        "the token budget, the batch, the chunk, the KV pages and a page's tokens must each be "
        "at least 1");
  for (std::size_t i = 0; i < requests.size(); ++i)
    if (requests[i].id != i)
      throw std::invalid_argument("requests must be numbered 0, 1, ... in trace order");
  return Server(requests, config, timer).run();
}

}  // namespace kb::serve
