#include "base/op_log_file.h"

#include <algorithm>
#include <memory>
#include <cstdio>
#include <cstring>
#include <stdexcept>
#include <tuple>

#include <unistd.h>

#include "base/output_file.h"

namespace kb {

namespace {
// A PE's buffer spills to the scratch file beyond this: the memory held is this much per
// PE, whatever the run's length.
constexpr std::size_t kSpillBytes = 16 * 1024;

template <typename T>
void put(std::string& out, T value) {
  out.append(reinterpret_cast<const char*>(&value), sizeof value);
}
template <typename T>
T get(const std::string& in, std::size_t at) {
  T value;
  std::memcpy(&value, in.data() + at, sizeof value);
  return value;
}
}  // namespace

OpLogFile::OpLogFile(std::string path)
    : path_(std::move(path)),
      csv_(path_.ends_with(".csv")),
      scratch_path_(path_ + ".records." + std::to_string(::getpid())),
      scratch_removed_(scratch_path_),
      scratch_(scratch_path_, std::ios::binary | std::ios::in | std::ios::out | std::ios::trunc) {
  if (!scratch_) throw std::runtime_error(path_ + ": cannot write output file: " + std::strerror(errno));
}

OpLogFile::~OpLogFile() {
  scratch_.close();
  std::remove(scratch_path_.c_str());
}

void OpLogFile::add(const OpRecord& r) {
  PeRecords& pe = pes_[r.pe];
  const std::string body = csv_ ? csv_body(r) : jsonl_body(r);
  put(pe.pending, r.id);
  put(pe.pending, static_cast<std::uint32_t>(body.size()));
  pe.pending += body;
  if (pe.pending.size() >= kSpillBytes) spill(pe);
}

void OpLogFile::spill(PeRecords& pe) {
  scratch_.seekp(static_cast<std::streamoff>(scratch_size_));
  scratch_.write(pe.pending.data(), static_cast<std::streamsize>(pe.pending.size()));
  if (!scratch_) throw std::runtime_error(path_ + ": write failed: " + std::strerror(errno));
  pe.spilled.emplace_back(scratch_size_, pe.pending.size());
  scratch_size_ += pe.pending.size();
  pe.pending.clear();
}

void OpLogFile::finish(const std::map<std::uint64_t, CriticalSpans>& critical) {
  const CriticalSpans none;
  write_file_atomically(path_, [&](std::ostream& out) {
    if (csv_) out << kOpLogCsvHeader;
    std::uint64_t next = 0;
    std::string text;
    std::vector<std::tuple<std::uint64_t, std::size_t, std::uint32_t>> records;  // id, body at, bytes
    for (auto& [coord, pe] : pes_) {
      text.clear();
      for (const auto& [offset, bytes] : pe.spilled) {
        const std::size_t at = text.size();
        text.resize(at + bytes);
        scratch_.seekg(static_cast<std::streamoff>(offset));
        scratch_.read(text.data() + at, static_cast<std::streamsize>(bytes));
        if (!scratch_) throw std::runtime_error(path_ + ": cannot read back its records: " + std::strerror(errno));
      }
      text += pe.pending;
      records.clear();
      for (std::size_t at = 0; at < text.size();) {
        const auto id = get<std::uint64_t>(text, at);
        const auto bytes = get<std::uint32_t>(text, at + sizeof id);
        at += sizeof id + sizeof bytes;
        records.emplace_back(id, at, bytes);
        at += bytes;
      }
      std::sort(records.begin(), records.end());  // a PE's records close out of issue order
      for (const auto& [id, at, bytes] : records) {
        const auto spans = critical.find(id);
        const std::string body = text.substr(at, bytes);
        const CriticalSpans& c = spans == critical.end() ? none : spans->second;
        out << (csv_ ? csv_line(next++, body, c) : jsonl_line(next++, body, c));
      }
    }
  });
}

namespace {

// One part's records, one at a time: its text (a CSV record may span lines) and PE.
class PartReader {
 public:
  PartReader(const std::string& path, bool csv) : in_(path, std::ios::binary), csv_(csv) {
    if (!in_) throw std::runtime_error(path + ": cannot read the part's op log");
    std::string header;
    if (csv_) std::getline(in_, header);
    next();
  }
  bool done() const { return done_; }
  const PeCoord& pe() const { return pe_; }
  // The record without its id: what follows the id's digits.
  std::string rest() const { return record_.substr(record_.find(',', csv_ ? 0 : 6)); }
  void next() {
    record_.clear();
    bool quoted = false;
    for (std::string line; std::getline(in_, line);) {
      record_ += line;
      record_ += '\n';
      if (csv_) quoted ^= std::count(line.begin(), line.end(), '"') % 2 == 1;
      if (!quoted) break;
    }
    done_ = record_.empty();
    if (!done_) pe_ = parse_pe();
  }

 private:
  PeCoord parse_pe() const {
    std::size_t at = 0, end = 0;
    if (csv_) {  // the third field; the second (kernel) may be quoted
      at = record_.find(',') + 1;
      if (record_[at] == '"') {
        for (++at; !(record_[at] == '"' && record_[at + 1] != '"'); at += record_[at] == '"' ? 2 : 1) {}
        ++at;
      } else {
        at = record_.find(',', at);
      }
      ++at;
      end = record_.find(',', at);
    } else {
      at = record_.find("\"pe\":\"") + 6;
      end = record_.find('"', at);
    }
    const std::optional<PeCoord> pe = PeCoord::parse(record_.substr(at, end - at));
    if (!pe) throw std::runtime_error("op log part: a record without a PE: " + record_.substr(0, 80));
    return *pe;
  }

  std::ifstream in_;
  bool csv_;
  std::string record_;
  PeCoord pe_;
  bool done_ = false;
};

}  // namespace

void merge_op_logs(const std::string& path, const std::vector<std::string>& parts) {
  const bool csv = path.ends_with(".csv");
  std::vector<std::unique_ptr<PartReader>> readers;
  for (const std::string& part : parts) readers.push_back(std::make_unique<PartReader>(part, csv));
  write_file_atomically(path, [&](std::ostream& out) {
    if (csv) out << kOpLogCsvHeader;
    const std::string head = csv ? "" : "{\"id\":";
    std::uint64_t next = 0;
    for (;;) {
      PartReader* first = nullptr;  // the part whose PE comes first
      for (const auto& r : readers)
        if (!r->done() && (!first || r->pe() < first->pe())) first = r.get();
      if (!first) break;
      const PeCoord pe = first->pe();
      for (; !first->done() && first->pe() == pe; first->next()) out << head << next++ << first->rest();
    }
  });
}

}  // namespace kb
