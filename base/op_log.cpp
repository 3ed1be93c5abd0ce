#include "base/op_log.h"

#include <algorithm>
#include <cstdio>
#include <sstream>
#include <stdexcept>

#include <nlohmann/json.hpp>

namespace kb {

std::uint64_t OpLog::append(OpRecord&& r) {
  r.id = next_++;
  if (keep_) records_.push_back(std::move(r));
  else open_.insert(r.id, std::move(r));
  return next_ - 1;
}

std::uint64_t OpLog::append_closed(OpRecord&& r) {
  if (keep_) {
    const std::uint64_t id = append(std::move(r));
    close(id);
    return id;
  }
  r.id = next_++;  // closed at once: the listeners see it, nothing keeps it
  for (const Listener& l : listeners_) l(r);
  return r.id;
}

OpRecord& OpLog::at(std::uint64_t id) { return keep_ ? records_.at(id) : open_.at(id); }

void OpLog::close(std::uint64_t id) {
  close(id, [](OpRecord&) {});
}

void OpLog::close(std::uint64_t id, const std::function<void(OpRecord&)>& last) {
  if (keep_) {
    OpRecord& r = records_.at(id);
    last(r);
    for (const Listener& l : listeners_) l(r);
    return;
  }
  const auto it = open_.find(id);
  if (it == open_.end()) return;
  last(it->second);
  for (const Listener& l : listeners_) l(it->second);
  open_.erase(it);
}

void OpLog::close_open() {
  std::vector<std::uint64_t> ids;
  for (const auto& [id, r] : open_) ids.push_back(id);
  std::sort(ids.begin(), ids.end());
  for (const std::uint64_t id : ids) close(id);
}

OpLog::Listening OpLog::listen(Listener listener) {
  listeners_.push_back(std::move(listener));
  return Listening(*this, std::prev(listeners_.end()));
}

void OpLog::clear() {
  records_.clear();
  open_.clear();
  next_ = 0;
}

void OpLog::group_by_pe(std::size_t first) {
  // Sort positions, then move the records along the permutation's cycles: a large log
  // is never copied whole (a stable_sort of the records would double its memory).
  if (!keep_) return;
  const std::size_t n = records_.size() - first;
  std::vector<std::size_t> order(n);
  for (std::size_t i = 0; i < n; ++i) order[i] = first + i;
  std::stable_sort(order.begin(), order.end(),
                   [&](std::size_t a, std::size_t b) { return records_[a].pe < records_[b].pe; });
  std::vector<bool> placed(n, false);
  for (std::size_t i = 0; i < n; ++i) {
    if (placed[i]) continue;
    OpRecord held = std::move(records_[first + i]);
    std::size_t at = i;
    while (order[at] != first + i) {  // position `at` takes the record from order[at]
      records_[first + at] = std::move(records_[order[at]]);
      placed[at] = true;
      at = order[at] - first;
    }
    records_[first + at] = std::move(held);
    placed[at] = true;
  }
  for (std::size_t i = first; i < records_.size(); ++i) records_[i].id = i;
}

void OpLog::append_jsonl(const std::string& text) {
  std::istringstream in(text);
  auto coord = [](const std::string& s) {  // "sipS.cubeC.peP"
    const std::optional<PeCoord> pe = PeCoord::parse(s);
    if (!pe) throw std::invalid_argument("op log: bad PE '" + s + "'");
    return *pe;
  };
  for (std::string line; std::getline(in, line);) {
    const auto j = nlohmann::json::parse(line);
    OpRecord r;
    r.kernel = Name::intern(j.at("kernel").get<std::string>());
    r.pe = coord(j.at("pe"));
    r.engine = Name::intern(j.at("engine").get<std::string>());
    r.kind = Name::intern(j.at("kind").get<std::string>());
    r.issue = j.at("issue");
    r.start = j.at("start");
    r.end = j.at("end");
    r.bytes = j.at("bytes");
    r.flops = j.at("flops");
    if (const std::string peer = j.at("peer"); !peer.empty()) r.peer = coord(peer);
    r.tag = j.at("tag");
    r.hops = j.at("hops");
    r.tensor = j.at("tensor");
    r.shape = j.at("shape");
    r.critical = j.at("critical").get<CriticalSpans>();
    append(std::move(r));
  }
}

std::uint64_t OpLog::bytes(const std::string& engine, const std::string& kind) const {
  std::uint64_t n = 0;
  for (const auto& r : records_)
    if (r.engine == engine && (kind.empty() || r.kind == kind)) n += r.bytes;
  return n;
}

std::uint64_t OpLog::bytes_of_tensor(const std::string& tensor) const {
  std::uint64_t n = 0;
  for (const auto& r : records_)
    if (r.tensor == tensor && r.engine == "dma") n += r.bytes;
  return n;
}

std::size_t OpLog::count(const std::string& kind) const {
  return static_cast<std::size_t>(
      std::count_if(records_.begin(), records_.end(), [&](const OpRecord& r) { return r.kind == kind; }));
}

std::vector<const OpRecord*> OpLog::select(const std::string& engine, const std::string& kind) const {
  std::vector<const OpRecord*> out;
  for (const auto& r : records_)
    if (r.engine == engine && (kind.empty() || r.kind == kind)) out.push_back(&r);
  return out;
}

std::vector<std::pair<std::uint64_t, std::uint64_t>> OpLog::busy(const PeCoord& pe,
                                                                 const std::string& engine) const {
  std::vector<std::pair<std::uint64_t, std::uint64_t>> spans;
  for (const auto& r : records_)
    if (r.pe == pe && r.engine == engine && r.end > r.start) spans.emplace_back(r.start, r.end);
  std::sort(spans.begin(), spans.end());
  std::vector<std::pair<std::uint64_t, std::uint64_t>> merged;
  for (const auto& s : spans) {
    if (!merged.empty() && s.first <= merged.back().second)
      merged.back().second = std::max(merged.back().second, s.second);
    else merged.push_back(s);
  }
  return merged;
}

std::uint64_t OpLog::last_end() const {
  std::uint64_t t = 0;
  for (const auto& r : records_) t = std::max(t, r.end);
  return t;
}

std::map<std::string, std::uint64_t> OpLog::messages_per_link(const Mesh& mesh) const {
  std::map<std::string, std::uint64_t> links;
  for (const auto& r : records_) {
    if (r.kind != "send" || !r.peer) continue;
    const CubeId src = r.pe.cube, dst = r.peer->cube;
    if (src == dst) ++links["cube" + std::to_string(src.value) + ".fabric"];
    for (const CubeId at : mesh.xy_path(src, dst)) {
      const CubeId next = *mesh.neighbour(at, *mesh.xy_step(at, dst));
      ++links["cube" + std::to_string(at.value) + "->cube" + std::to_string(next.value)];
    }
  }
  return links;
}

namespace {

std::string pe_text(const PeCoord& p) { return p.str(); }

// A CSV field (RFC 4180): quoted, with quotes doubled, when it holds a comma, a quote
// or a line break ("[64, 64]" does).
std::string csv_field(std::string_view text) {
  if (text.find_first_of(",\"\r\n") == std::string_view::npos) return std::string(text);
  std::string out = "\"";
  for (const char c : text) {
    if (c == '"') out += '"';
    out += c;
  }
  return out + '"';
}

// "100-164 300-420": the spans of a record on the critical path.
std::string spans_text(const CriticalSpans& spans) {
  std::string out;
  for (const auto& [begin, end] : spans) {
    if (!out.empty()) out += ' ';
    out += std::to_string(begin) + '-' + std::to_string(end);
  }
  return out;
}

}  // namespace

std::string jsonl_body(const OpRecord& r) {
  const nlohmann::ordered_json j = {{"kernel", r.kernel}, {"pe", pe_text(r.pe)},
                                    {"engine", r.engine}, {"kind", r.kind},
                                    {"issue", r.issue},   {"start", r.start},
                                    {"end", r.end},       {"bytes", r.bytes},
                                    {"flops", r.flops},   {"peer", r.peer ? pe_text(*r.peer) : ""},
                                    {"tag", r.tag},       {"hops", r.hops},
                                    {"tensor", r.tensor}, {"shape", r.shape}};
  const std::string text = j.dump();
  return text.substr(1, text.size() - 2);  // the members, without the braces
}

std::string jsonl_line(std::uint64_t id, const std::string& body, const CriticalSpans& critical) {
  return "{\"id\":" + std::to_string(id) + "," + body + ",\"critical\":" + nlohmann::json(critical).dump() + "}\n";
}

std::string csv_body(const OpRecord& r) {
  std::ostringstream o;
  o << csv_field(r.kernel) << ',' << pe_text(r.pe) << ',' << csv_field(r.engine) << ',' << csv_field(r.kind) << ','
    << r.issue << ',' << r.start << ',' << r.end << ',' << r.bytes << ',' << r.flops << ','
    << (r.peer ? pe_text(*r.peer) : "") << ',' << r.tag << ',' << r.hops << ',' << csv_field(r.tensor) << ','
    << csv_field(r.shape);
  return o.str();
}

std::string csv_line(std::uint64_t id, const std::string& body, const CriticalSpans& critical) {
  return std::to_string(id) + ',' + body + ',' + spans_text(critical) + '\n';
}

std::string OpLog::to_jsonl() const {
  std::string out;
  for (const auto& r : records_) out += jsonl_line(r.id, jsonl_body(r), r.critical);
  return out;
}

std::string OpLog::to_csv() const {
  std::string out = kOpLogCsvHeader;
  for (const auto& r : records_) out += csv_line(r.id, csv_body(r), r.critical);
  return out;
}

std::uint64_t OpLog::hash() const {
  std::uint64_t h = 1469598103934665603ull;
  for (const unsigned char c : to_jsonl()) {
    h ^= c;
    h *= 1099511628211ull;
  }
  return h;
}

}  // namespace kb
