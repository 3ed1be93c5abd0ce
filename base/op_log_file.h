#pragma once
// An op-log file written as a run goes (--op-log): it holds no record. Each PE's closed
// records collect, encoded, in a small buffer that spills to a scratch file beside the
// output; finish() writes the file PE by PE, each PE's records in issue order and
// numbered from 0, with their critical spans. Those are the bytes OpLog::to_jsonl /
// to_csv give for the same run kept whole (OpLog::group_by_pe).
#include <cstdint>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include "base/interrupt.h"
#include "base/op_log.h"

namespace kb {

class OpLogFile {
 public:
  explicit OpLogFile(std::string path);  // a path ending in .csv: CSV, otherwise JSON lines
  ~OpLogFile();                          // removes its scratch file
  OpLogFile(const OpLogFile&) = delete;
  OpLogFile& operator=(const OpLogFile&) = delete;
  void add(const OpRecord& r);           // an OpLog listener
  // Writes the file whole or not at all; `critical` holds the spans by original record id.
  void finish(const std::map<std::uint64_t, CriticalSpans>& critical);

 private:
  struct PeRecords {
    std::string pending;                                  // encoded, not yet spilled
    std::vector<std::pair<std::uint64_t, std::size_t>> spilled;  // (offset, bytes) in the scratch file
  };
  void spill(PeRecords& pe);

  std::string path_;
  bool csv_;
  std::string scratch_path_;
  interrupt::RemovedOnInterrupt scratch_removed_;
  std::fstream scratch_;
  std::uint64_t scratch_size_ = 0;
  std::map<PeCoord, PeRecords> pes_;
};

// Merges op-log files of one format, each grouped PE by PE in PE order (the parts of a
// split run, no PE in two of them), into one at `path` in PE order, numbering the records
// from 0 (CSV: one header). Reads one record of each part at a time.
void merge_op_logs(const std::string& path, const std::vector<std::string>& parts);

}  // namespace kb
