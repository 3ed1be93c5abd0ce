// The traces a serving run replays: the Azure CSV and JSON lines forms, arrivals counted
// from the first request, every bad row named by FILE:LINE, and synthetic processes
// that give the same requests every time, at the rate and spread asked.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>

#include "serve/trace.h"

namespace kb::serve {
namespace {

std::string write(const std::string& name, const std::string& text) {
  const auto path = std::filesystem::path(testing::TempDir()) / ("kernbench_trace_" + name);
  std::ofstream(path, std::ios::binary) << text;
  return path.string();
}

// The error a bad trace gives (fails the test if it reads).
std::string error_of(const std::string& name, const std::string& text) {
  const std::string path = write(name, text);
  try {
    read_trace(path);
  } catch (const TraceError& e) {
    const std::string what = e.what();
    EXPECT_EQ(what.rfind(path + ":", 0), 0u) << what;
    return what.substr(path.size());
  }
  ADD_FAILURE() << "expected a TraceError";
  return "";
}

const char* kHeader = "TIMESTAMP,ContextTokens,GeneratedTokens\n";

}  // namespace

TEST(Trace, AzureCsvArrivalsCountFromTheFirstRequest) {
  const auto r = read_trace(write("azure.csv", std::string(kHeader) +
                                                   "2023-11-16 18:17:03.9799600,4808,10\n"
                                                   "2023-11-16 18:17:04.0319600,3180,8\n"
                                                   "2023-11-16 23:59:59.5000000,110,27\n"
                                                   "2023-11-17 00:00:00.2500000,7433,14\n"));
  ASSERT_EQ(r.size(), 4u);
  EXPECT_EQ(r[0].arrival_s, 0.0);
  EXPECT_NEAR(r[1].arrival_s, 0.052, 1e-9);
  EXPECT_NEAR(r[3].arrival_s - r[2].arrival_s, 0.75, 1e-9);  // across midnight
  EXPECT_EQ(r[2].id, 2u);
  EXPECT_EQ(r[2].prompt_tokens, 110u);
  EXPECT_EQ(r[2].output_tokens, 27u);
}

// The 2024 release writes its time zone; its columns may come in another order.
TEST(Trace, Azure2024TimestampsWithTheirOffsetRead) {
  const auto r = read_trace(write("azure2024.csv",
                                  "ContextTokens,TIMESTAMP,GeneratedTokens\n"
                                  "100,2024-05-10 00:00:00.009930+00:00,5\n"
                                  "200,2024-05-10 02:00:01.009930+02:00,6\n"));
  ASSERT_EQ(r.size(), 2u);
  EXPECT_NEAR(r[1].arrival_s, 1.0, 1e-9);
  EXPECT_EQ(r[1].prompt_tokens, 200u);
}

TEST(Trace, JsonLinesRead) {
  const auto r =
      read_trace(write("t.jsonl",
                       "{\"arrival_s\": 0.5, \"prompt_tokens\": 1024, \"output_tokens\": 128}\n\n"
                       "{\"arrival_s\": 2, \"prompt_tokens\": 16, \"output_tokens\": 1}\n"));
  ASSERT_EQ(r.size(), 2u);
  EXPECT_EQ(r[0].arrival_s, 0.0);
  EXPECT_EQ(r[1].arrival_s, 1.5);
  EXPECT_EQ(r[1].output_tokens, 1u);
}

TEST(Trace, BadRowsNameTheirLineAndWhatIsAllowed) {
  const std::string ok = "2023-11-16 18:17:03.9799600,4808,10\n";
  EXPECT_EQ(
      error_of("negative.csv", std::string(kHeader) + ok + "2023-11-16 18:17:04.0,-5,10\n"),
      ":3: ContextTokens '-5' is not allowed; allowed: a whole number of tokens of at least 1");
  EXPECT_EQ(
      error_of("text.csv", std::string(kHeader) + "2023-11-16 18:17:04.0,12,ten\n"),
      ":2: GeneratedTokens 'ten' is not allowed; allowed: a whole number of tokens of at least 1");
  EXPECT_EQ(
      error_of("zero.csv", std::string(kHeader) + "2023-11-16 18:17:04.0,0,3\n"),
      ":2: ContextTokens '0' is not allowed; allowed: a whole number of tokens of at least 1");
  const std::string back =
      error_of("back.csv", std::string(kHeader) + ok + "2023-11-16 18:17:02.0,5,5\n");
  EXPECT_EQ(back.rfind(":3: the arrival goes back in time", 0), 0u) << back;
  EXPECT_EQ(error_of("column.csv", "TIMESTAMP,ContextTokens\n" + ok),
            ":1: missing column 'GeneratedTokens'; an Azure trace's header names TIMESTAMP, "
            "ContextTokens and "
            "GeneratedTokens");
  EXPECT_EQ(error_of("cells.csv", std::string(kHeader) + "2023-11-16 18:17:04.0,12\n"),
            ":2: 2 cells; the header has 3");
  EXPECT_EQ(
      error_of("when.csv", std::string(kHeader) + "yesterday,12,3\n"),
      ":2: TIMESTAMP 'yesterday' is not allowed; allowed: YYYY-MM-DD HH:MM:SS[.fraction][+HH:MM]");
  EXPECT_EQ(error_of("field.jsonl", "{\"arrival_s\": 0, \"prompt_tokens\": 3}\n"),
            ":1: missing field 'output_tokens'");
  EXPECT_EQ(error_of("count.jsonl",
                     "{\"arrival_s\": 0, \"prompt_tokens\": 3, \"output_tokens\": 1}\n"
                     "{\"arrival_s\": 1, \"prompt_tokens\": -3, \"output_tokens\": 1}\n"),
            ":2: prompt_tokens -3 is not allowed; allowed: a whole number of at least 1");
  EXPECT_EQ(error_of("object.jsonl",
                     "{\"arrival_s\": 0, \"prompt_tokens\": 3, \"output_tokens\": 1}\n[1, 2]\n"),
            ":2: not a JSON object; a line is {\"arrival_s\": 0.5, \"prompt_tokens\": 1024, "
            "\"output_tokens\": 128}");
  EXPECT_EQ(error_of("empty.csv", "\n\n"), ": the trace is empty; it needs at least one request");
  EXPECT_EQ(error_of("header.csv", kHeader), ": the trace has no request; it needs at least one");
}

// A Poisson process's requests arrive at the rate asked; a gamma process with a larger CV
// is burstier; the same spec gives the same requests, lengths within their ranges.
TEST(Trace, SyntheticProcessesHaveTheirRateAndSpread) {
  const auto p = synthetic("poisson:rate=4,n=4000,prompt=128-4096,output=16-256,seed=3");
  ASSERT_EQ(p.size(), 4000u);
  EXPECT_EQ(p[0].arrival_s, 0.0);
  EXPECT_NEAR(p.back().arrival_s / 3999, 0.25, 0.25 * 0.05);  // mean gap 1 / rate, within 5%
  auto cv = [](const std::vector<Request>& r) {
    double sum = 0, sq = 0;
    for (std::size_t i = 1; i < r.size(); ++i) {
      const double gap = r[i].arrival_s - r[i - 1].arrival_s;
      sum += gap;
      sq += gap * gap;
    }
    const double n = static_cast<double>(r.size() - 1), mean = sum / n;
    return std::sqrt(sq / n - mean * mean) / mean;
  };
  EXPECT_NEAR(cv(p), 1.0, 0.06);
  const auto g = synthetic("gamma:rate=4,cv=3,n=4000,prompt=128-4096,output=16-256,seed=3");
  EXPECT_NEAR(g.back().arrival_s / 3999, 0.25, 0.25 * 0.2);
  EXPECT_GT(cv(g), 2.4);
  for (const Request& r : p) {
    EXPECT_GE(r.prompt_tokens, 128u);
    EXPECT_LE(r.prompt_tokens, 4096u);
    EXPECT_GE(r.output_tokens, 16u);
    EXPECT_LE(r.output_tokens, 256u);
  }
  const auto again = synthetic("poisson:rate=4,n=4000,prompt=128-4096,output=16-256,seed=3");
  for (std::size_t i = 0; i < p.size(); ++i) {
    EXPECT_EQ(again[i].arrival_s, p[i].arrival_s);
    EXPECT_EQ(again[i].prompt_tokens, p[i].prompt_tokens);
  }
  EXPECT_NE(synthetic("poisson:rate=4,n=10,prompt=128-4096,output=16-256,seed=4")[1].arrival_s,
            p[1].arrival_s);
}

TEST(Trace, BadSyntheticSpecsSayWhatIsAllowed) {
  for (const std::string spec :
       {"poisson:rate=0,n=4,prompt=1-2,output=1-2", "poisson:n=4,prompt=1-2,output=1-2",
        "poisson:rate=1,n=4,prompt=5-2,output=1-2", "poisson:rate=1,n=2.5,prompt=1-2,output=1-2",
        "gamma:rate=1,n=4,prompt=1-2,output=1-2", "poisson:rate=1,n=4,prompt=1-2,output=1-2,x=1"}) {
    try {
      synthetic(spec);
      ADD_FAILURE() << spec;
    } catch (const TraceError& e) {
      EXPECT_NE(std::string(e.what()).find("allowed: poisson:rate=R,n=N,prompt=A-B,output=C-D"),
                std::string::npos)
          << e.what();
    }
  }
}

}  // namespace kb::serve
