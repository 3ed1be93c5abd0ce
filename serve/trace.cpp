#include "serve/trace.h"

#include <chrono>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <random>
#include <sstream>

namespace kb::serve {

namespace {

std::string trimmed(const std::string& s) {
  const auto b = s.find_first_not_of(" \t\r");
  if (b == std::string::npos) return "";
  return s.substr(b, s.find_last_not_of(" \t\r") - b + 1);
}

std::vector<std::string> split(const std::string& line, char sep) {
  std::vector<std::string> out;
  std::stringstream in(line);
  for (std::string cell; std::getline(in, cell, sep);) out.push_back(trimmed(cell));
  if (!line.empty() && line.back() == sep) out.emplace_back();
  return out;
}

// A whole number of tokens, at least 1.
std::optional<std::uint64_t> tokens(const std::string& text) {
  if (text.empty() || text.size() > 12 || text.find_first_not_of("0123456789") != std::string::npos)
    return std::nullopt;
  const std::uint64_t v = std::stoull(text);
  return v >= 1 ? std::optional<std::uint64_t>(v) : std::nullopt;
}

// A time as whole seconds and a fraction: seconds since 1970 in one double would keep
// only a quarter of a microsecond.
struct Moment {
  std::int64_t whole = 0;
  double fraction = 0;
  double minus(const Moment& o) const {
    return static_cast<double>(whole - o.whole) + (fraction - o.fraction);
  }
};

// "2023-11-16 18:17:03.9799600" or "2024-05-10 00:00:00.009930+00:00": since 1970 (the
// offset, when given, taken away).
std::optional<Moment> timestamp(const std::string& text) {
  int y = 0, mo = 0, d = 0, h = 0, mi = 0, used = 0;
  if (std::sscanf(text.c_str(), "%4d-%2d-%2d %2d:%2d:%n", &y, &mo, &d, &h, &mi, &used) != 5 ||
      used == 0)
    return std::nullopt;
  std::size_t i = static_cast<std::size_t>(used), digits = i;
  while (digits < text.size() &&
         (std::isdigit(static_cast<unsigned char>(text[digits])) || text[digits] == '.'))
    ++digits;
  if (digits == i) return std::nullopt;
  const double seconds = std::strtod(text.substr(i, digits - i).c_str(), nullptr);
  std::int64_t offset = 0;
  if (digits < text.size()) {
    int oh = 0, om = 0;
    const char sign = text[digits];
    if ((sign != '+' && sign != '-') ||
        std::sscanf(text.c_str() + digits + 1, "%2d:%2d", &oh, &om) != 2)
      return std::nullopt;
    offset = (sign == '+' ? 1 : -1) * (oh * 3600 + om * 60);
  }
  const std::chrono::year_month_day date{std::chrono::year(y),
                                         std::chrono::month(static_cast<unsigned>(mo)),
                                         std::chrono::day(static_cast<unsigned>(d))};
  if (!date.ok() || h > 23 || mi > 59 || seconds >= 61) return std::nullopt;
  const std::int64_t days = std::chrono::sys_days(date).time_since_epoch().count();
  const double whole = std::floor(seconds);
  return Moment{days * 86400 + h * 3600 + mi * 60 + static_cast<std::int64_t>(whole) - offset,
                seconds - whole};
}

class Reader {
 public:
  explicit Reader(std::string path) : path_(std::move(path)) {}
  [[noreturn]] void fail(std::size_t line, const std::string& what) const {
    throw TraceError(path_ + ":" + std::to_string(line) + ": " + what);
  }
  // Appends a request, arrivals counted from the first one's.
  void add(std::size_t line, const Moment& at, std::uint64_t prompt, std::uint64_t output) {
    if (out_.empty()) first_ = at;
    const double since = at.minus(first_);
    if (!out_.empty() && since < out_.back().arrival_s)
      fail(line, "the arrival goes back in time (" + std::to_string(since) +
                     " s after the first request, " + "before the previous request's " +
                     std::to_string(out_.back().arrival_s) +
                     " s); a trace lists its requests in arrival order");
    out_.push_back({static_cast<std::uint32_t>(out_.size()), since, prompt, output});
  }
  std::vector<Request> take() { return std::move(out_); }

 private:
  std::string path_;
  std::vector<Request> out_;
  Moment first_;
};

std::uint64_t count_cell(const Reader& r, std::size_t line, const std::string& column,
                         const std::string& text) {
  const auto v = tokens(text);
  if (!v)
    r.fail(line, column + " '" + text +
                     "' is not allowed; allowed: a whole number of tokens of at least 1");
  return *v;
}

std::vector<Request> read_csv(std::istream& in, const std::string& path,
                              const std::string& header) {
  Reader r(path);
  const std::vector<std::string> names = split(header, ',');
  std::map<std::string, std::size_t> at;
  for (std::size_t i = 0; i < names.size(); ++i) at[names[i]] = i;
  for (const char* need : {"TIMESTAMP", "ContextTokens", "GeneratedTokens"})
    if (!at.count(need))
      r.fail(1,
             std::string("missing column '") + need +
                 "'; an Azure trace's header names TIMESTAMP, ContextTokens and GeneratedTokens");
  std::size_t line_no = 1;
  for (std::string line; std::getline(in, line);) {
    ++line_no;
    if (trimmed(line).empty()) continue;
    const std::vector<std::string> cells = split(line, ',');
    if (cells.size() != names.size())
      r.fail(line_no, std::to_string(cells.size()) + " cells; the header has " +
                          std::to_string(names.size()));
    const std::string& when = cells[at["TIMESTAMP"]];
    const auto t = timestamp(when);
    if (!t)
      r.fail(line_no, "TIMESTAMP '" + when +
                          "' is not allowed; allowed: YYYY-MM-DD HH:MM:SS[.fraction][+HH:MM]");
    r.add(line_no, *t, count_cell(r, line_no, "ContextTokens", cells[at["ContextTokens"]]),
          count_cell(r, line_no, "GeneratedTokens", cells[at["GeneratedTokens"]]));
  }
  return r.take();
}

std::vector<Request> read_jsonl(std::istream& in, const std::string& path, std::string first) {
  Reader r(path);
  std::size_t line_no = 0;
  for (std::string line = std::move(first);;) {
    ++line_no;
    if (!trimmed(line).empty()) {
      const nlohmann::json j = nlohmann::json::parse(line, nullptr, false);
      if (j.is_discarded() || !j.is_object())
        r.fail(line_no,
               "not a JSON object; a line is {\"arrival_s\": 0.5, \"prompt_tokens\": 1024, "
               "\"output_tokens\": 128}");
      for (const char* need : {"arrival_s", "prompt_tokens", "output_tokens"})
        if (!j.contains(need)) r.fail(line_no, std::string("missing field '") + need + "'");
      const nlohmann::json& t = j["arrival_s"];
      if (!t.is_number() || !std::isfinite(t.get<double>()) || t.get<double>() < 0)
        r.fail(line_no, "arrival_s " + t.dump() +
                            " is not allowed; allowed: seconds, a number of at least 0");
      auto count = [&](const char* field) {
        const nlohmann::json& v = j[field];
        if (!v.is_number_unsigned() || v.get<std::uint64_t>() < 1)
          r.fail(line_no, std::string(field) + " " + v.dump() +
                              " is not allowed; allowed: a whole number of at least 1");
        return v.get<std::uint64_t>();
      };
      r.add(line_no, Moment{0, t.get<double>()}, count("prompt_tokens"), count("output_tokens"));
    }
    if (!std::getline(in, line)) break;
  }
  return r.take();
}

// The random numbers of a synthetic trace, from formulas of this file on mt19937_64's
// raw output (the <random> distributions differ between standard libraries).
class Draw {
 public:
  explicit Draw(std::uint64_t seed) : gen_(seed) {}
  double uniform() { return static_cast<double>(gen_() >> 11) * 0x1.0p-53; }  // [0, 1)
  double exponential(double rate) { return -std::log1p(-uniform()) / rate; }
  double normal() {  // Box-Muller, one value a call
    const double u = 1.0 - uniform(), v = uniform();
    return std::sqrt(-2.0 * std::log(u)) * std::cos(6.283185307179586 * v);
  }
  // Marsaglia and Tsang's method, shape k; scale 1.
  double gamma(double k) {
    if (k < 1) return gamma(k + 1) * std::pow(1.0 - uniform(), 1.0 / k);
    const double d = k - 1.0 / 3, c = 1 / std::sqrt(9 * d);
    for (;;) {
      double x = 0, v = 0;
      do {
        x = normal();
        v = 1 + c * x;
      } while (v <= 0);
      v = v * v * v;
      const double u = 1.0 - uniform();
      if (std::log(u) < 0.5 * x * x + d - d * v + d * std::log(v)) return d * v;
    }
  }
  std::uint64_t between(std::uint64_t lo, std::uint64_t hi) {
    return lo + std::min<std::uint64_t>(hi - lo, static_cast<std::uint64_t>(
                                                     uniform() * static_cast<double>(hi - lo + 1)));
  }

 private:
  std::mt19937_64 gen_;
};

bool is_synthetic(const std::string& text) {
  return text.rfind("poisson:", 0) == 0 || text.rfind("gamma:", 0) == 0;
}

}  // namespace

std::vector<Request> read_trace(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw TraceError(path + ": cannot open the trace file");
  std::string first;
  while (std::getline(in, first) && trimmed(first).empty()) {
  }
  if (trimmed(first).empty())
    throw TraceError(path + ": the trace is empty; it needs at least one request");
  if (first.find('\0') != std::string::npos)
    throw TraceError(path + ": not a text file (contains NUL bytes)");
  std::vector<Request> out =
      trimmed(first).front() == '{' ? read_jsonl(in, path, first) : read_csv(in, path, first);
  if (out.empty()) throw TraceError(path + ": the trace has no request; it needs at least one");
  return out;
}

std::vector<Request> synthetic(const std::string& spec) {
  const auto colon = spec.find(':');
  const std::string kind = spec.substr(0, colon);
  auto bad = [&](const std::string& what) -> TraceError {
    return TraceError("trace '" + spec + "': " + what +
                      "; allowed: poisson:rate=R,n=N,prompt=A-B,output=C-D[,seed=S] or "
                      "gamma:rate=R,cv=CV,n=N,prompt=A-B,output=C-D[,seed=S]");
  };
  if (!is_synthetic(spec)) throw bad("not a synthetic process");
  std::map<std::string, std::string> kv;
  for (const std::string& part : split(spec.substr(colon + 1), ',')) {
    const auto eq = part.find('=');
    if (eq == std::string::npos || !kv.emplace(part.substr(0, eq), part.substr(eq + 1)).second)
      throw bad("'" + part + "' is not a key=value given once");
  }
  auto number = [&](const std::string& key, double lo, double hi) {
    const auto it = kv.find(key);
    if (it == kv.end()) throw bad("missing " + key);
    char* end = nullptr;
    const double v = std::strtod(it->second.c_str(), &end);
    if (end == it->second.c_str() || *end != '\0' || !(v >= lo && v <= hi))
      throw bad(key + "=" + it->second + " is not a number from " + std::to_string(lo) + " to " +
                std::to_string(hi));
    kv.erase(it);
    return v;
  };
  auto range = [&](const std::string& key) {
    const auto it = kv.find(key);
    if (it == kv.end()) throw bad("missing " + key);
    const auto dash = it->second.find('-');
    const auto lo = tokens(it->second.substr(0, dash)),
               hi = dash == std::string::npos ? lo : tokens(it->second.substr(dash + 1));
    if (!lo || !hi || *lo > *hi)
      throw bad(key + "=" + it->second + " is not a range A-B of tokens, 1 <= A <= B");
    kv.erase(it);
    return std::pair{*lo, *hi};
  };
  const double rate = number("rate", 1e-6, 1e6);
  const double cv = kind == "gamma" ? number("cv", 0.01, 100) : 1.0;
  const double count = number("n", 1, 1e6);
  if (count != std::floor(count))
    throw bad("n=" + std::to_string(count) + " is not a whole number of requests");
  const auto n = static_cast<std::uint32_t>(count);
  const auto prompt = range("prompt"), output = range("output");
  const auto seed = kv.count("seed") ? static_cast<std::uint64_t>(number("seed", 0, 1e15)) : 1;
  if (!kv.empty()) throw bad("unknown key '" + kv.begin()->first + "'");
  Draw draw(seed);
  const double shape =
      1 / (cv * cv);  // a gamma of shape k and scale 1 / (rate k) has mean 1 / rate, CV 1 / sqrt(k)
  std::vector<Request> out;
  double at = 0;
  for (std::uint32_t i = 0; i < n; ++i) {
    if (i > 0) at += kind == "gamma" ? draw.gamma(shape) / (rate * shape) : draw.exponential(rate);
    const std::uint64_t p = draw.between(prompt.first, prompt.second);
    out.push_back({i, at, p, draw.between(output.first, output.second)});
  }
  return out;
}

}  // namespace kb::serve
