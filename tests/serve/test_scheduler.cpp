// The serving schedulers over a step time of a known form: every request produces
// exactly its output tokens, the KV pages never overflow (a preempted request recomputes
// and still finishes), each policy batches as documented, and a lone request's TTFT and
// TPOT are its steps' times.
#include <gtest/gtest.h>

#include <numeric>

#include "serve/scheduler.h"

namespace kb::serve {
namespace {

// A step: 2 ms, 20 us a decode, 1 us a prefill token.
double linear(const StepPlan& p) {
  return 2e-3 + 20e-6 * static_cast<double>(p.decodes.size()) +
         1e-6 * static_cast<double>(p.prefill_tokens());
}

SchedulerConfig config(Policy p, std::uint64_t pages = 4096) {
  SchedulerConfig c;
  c.policy = p;
  c.max_batch_tokens = 4096;
  c.max_seqs = 32;
  c.chunk = 512;
  c.kv_pages = pages;
  c.page_tokens = 16;
  return c;
}

const std::vector<Request>& trace() {
  static const std::vector<Request> t =
      synthetic("poisson:rate=40,n=300,prompt=16-3000,output=1-200,seed=5");
  return t;
}

void expect_conserved(const ServeRun& run, const std::vector<Request>& in) {
  ASSERT_EQ(run.requests.size(), in.size());
  std::uint64_t firsts = 0, decodes = 0, wanted = 0;
  for (std::size_t i = 0; i < in.size(); ++i) {
    const RequestResult& r = run.requests[i];
    EXPECT_EQ(r.request.id, i);
    EXPECT_EQ(r.tokens_out, in[i].output_tokens) << i;
    EXPECT_GT(r.first_token_s, r.request.arrival_s) << i;
    EXPECT_GE(r.finish_s, r.first_token_s) << i;
    wanted += in[i].output_tokens;
    firsts += 1 + r.preemptions;  // a prefill that ends gives a token: the first, and one after
                                  // each recompute
  }
  for (const StepRow& s : run.steps) decodes += s.decodes;
  EXPECT_EQ(decodes + firsts, wanted) << "every token came from one step";
}

}  // namespace

TEST(Scheduler, EveryPolicyProducesExactlyTheOutputTokens) {
  for (const Policy p : {Policy::Vllm, Policy::Sarathi, Policy::Orca}) {
    SCOPED_TRACE(policy_name(p));
    const ServeRun run = replay(trace(), config(p), linear);
    expect_conserved(run, trace());
    for (std::size_t i = 1; i < run.steps.size(); ++i)
      EXPECT_GE(run.steps[i].start_s, run.steps[i - 1].start_s + run.steps[i - 1].seconds);
  }
}

// A cache too small for the load: requests are preempted, recompute and still finish, and
// no step holds more pages than there are.
TEST(Scheduler, PreemptedRequestsRecomputeAndFinish) {
  for (const Policy p : {Policy::Vllm, Policy::Sarathi, Policy::Orca}) {
    SCOPED_TRACE(policy_name(p));
    const SchedulerConfig c = config(p, 400);
    const ServeRun run = replay(trace(), c, linear);
    expect_conserved(run, trace());
    std::uint32_t preemptions = 0;
    for (const RequestResult& r : run.requests) preemptions += r.preemptions;
    EXPECT_GT(preemptions, 0u);
    for (const StepRow& s : run.steps) EXPECT_LE(s.kv_pages_used, c.kv_pages);
  }
}

TEST(Scheduler, EachPolicyBatchesAsDocumented) {
  const ServeRun vllm = replay(trace(), config(Policy::Vllm), linear);
  for (const StepRow& s : vllm.steps)
    EXPECT_TRUE(s.decodes == 0 || s.prefills == 0) << "vllm never mixes";
  auto mixed = [](const ServeRun& r) {
    return std::count_if(r.steps.begin(), r.steps.end(),
                         [](const StepRow& s) { return s.decodes > 0 && s.prefills > 0; });
  };
  std::vector<StepPlan> plans;
  const StepTimer record = [&](const StepPlan& p) {
    plans.push_back(p);
    return linear(p);
  };
  const ServeRun sarathi = replay(trace(), config(Policy::Sarathi), record);
  EXPECT_GT(mixed(sarathi), 0);
  for (const StepPlan& p : plans) {
    EXPECT_LE(p.decodes.size() + p.prefill_tokens(), 4096u);
    EXPECT_LE(p.decodes.size() + p.prefills.size(), 32u);
    for (const StepPlan::Prefill& c : p.prefills)
      EXPECT_LE(c.tokens, 512u) << "sarathi chunks prefills";
  }
  const ServeRun orca = replay(trace(), config(Policy::Orca), linear);
  EXPECT_GT(mixed(orca), 0);
  // Chunked prefill keeps the decodes going: sarathi's worst gap between a request's
  // tokens is shorter than vllm's, whose prefill steps stall every decode.
  auto worst_tpot = [](const ServeRun& r) {
    double worst = 0;
    for (const RequestResult& q : r.requests) worst = std::max(worst, q.tpot());
    return worst;
  };
  EXPECT_LT(worst_tpot(sarathi), worst_tpot(vllm));
}

// One request alone: its first token comes at the end of its prefill step, then one
// decode step a token, each of the step model's time.
TEST(Scheduler, ALoneRequestsTtftAndTpotAreItsStepsTimes) {
  const std::vector<Request> one = {{0, 0.0, 1000, 5}};
  for (const Policy p : {Policy::Vllm, Policy::Orca}) {
    const ServeRun run = replay(one, config(p), linear);
    ASSERT_EQ(run.steps.size(), 5u);
    EXPECT_DOUBLE_EQ(run.requests[0].ttft(), 2e-3 + 1000e-6);
    EXPECT_DOUBLE_EQ(run.requests[0].tpot(), 2e-3 + 20e-6);
    EXPECT_EQ(run.steps[1].kv_pages_used, (1001u + 15) / 16);  // the prompt and the first new token
  }
  const ServeRun chunked = replay(one, config(Policy::Sarathi), linear);
  ASSERT_EQ(chunked.steps.size(), 2u + 4);  // 512 + 488 tokens, then 4 decodes
  EXPECT_EQ(chunked.steps[1].prefill_tokens, 488u);
  EXPECT_DOUBLE_EQ(chunked.requests[0].ttft(), 2 * 2e-3 + 1000e-6);
}

TEST(Scheduler, TheSameInputsGiveTheSameRun) {
  const ServeRun a = replay(trace(), config(Policy::Sarathi, 600), linear),
                 b = replay(trace(), config(Policy::Sarathi, 600), linear);
  ASSERT_EQ(a.steps.size(), b.steps.size());
  for (std::size_t i = 0; i < a.steps.size(); ++i) {
    EXPECT_EQ(a.steps[i].start_s, b.steps[i].start_s);
    EXPECT_EQ(a.steps[i].kv_pages_used, b.steps[i].kv_pages_used);
  }
  for (std::size_t i = 0; i < a.requests.size(); ++i)
    EXPECT_EQ(a.requests[i].finish_s, b.requests[i].finish_s);
}

TEST(Scheduler, RequestsThatCanNeverRunAreRefusedSayingWhy) {
  const std::vector<Request> big = {{0, 0.0, 5000, 10}};
  try {
    replay(big, config(Policy::Vllm), linear);
    ADD_FAILURE();
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(
        std::string(e.what()).find(
            "more than the step's budget of 4096 (vllm does not chunk prefills; sarathi does)"),
        std::string::npos)
        << e.what();
  }
  EXPECT_EQ(replay(big, config(Policy::Sarathi), linear).requests[0].tokens_out, 10u);
  try {
    replay(big, config(Policy::Sarathi, 100), linear);
    ADD_FAILURE();
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("needs 314 KV pages of 16 tokens; the cache has 100"),
              std::string::npos)
        << e.what();
  }
  EXPECT_THROW(policy_of("fifo"), std::invalid_argument);
}

}  // namespace kb::serve
