#pragma once
// The op log (docs/tl.md): one record per tl op, in issue order. Tests read it to verify
// the kernels' levers; it is written as JSON lines or CSV.
#include <cstdint>
#include <functional>
#include <list>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "base/ids.h"
#include "base/mesh.h"
#include "base/name.h"
#include "base/recycling_map.h"

namespace kb {

// Spans [begin, end) of a critical path, in cycles.
using CriticalSpans = std::vector<std::pair<std::uint64_t, std::uint64_t>>;

struct OpRecord {
  std::uint64_t id = 0;
  Name kernel;
  PeCoord pe;
  Name engine;  // cpu, dma, gemm, math, ipcq
  Name kind;    // the tl op: load, store, composite, dot, exp, send, recv, ...
  std::uint64_t issue = 0, start = 0, end = 0;  // cycles of the PE clock
  std::uint64_t bytes = 0;  // bytes moved (DMA, messages) or touched
  std::uint64_t flops = 0;
  std::optional<PeCoord> peer;  // the other PE of a message
  std::uint32_t tag = 0;
  std::string tensor;  // name of the tensor the op reads or writes
  std::string shape;   // [rows, cols] of what it moves or writes; M x N x K for a GEMM
  std::uint32_t hops = 0;  // mesh hops of a message (0: same cube)
  // The spans [begin, end) of its device's critical path spent in this op, from when
  // the path entered it to when it entered the next (docs/critical_path.md).
  CriticalSpans critical;
};

// One record as a line of the op-log file, in two parts: the fields between the id and
// the critical spans (what a record is), and the line they make with an id and spans.
// OpLog::to_jsonl / to_csv and a file written as the run goes (OpLogFile) share them.
std::string jsonl_body(const OpRecord& r);
std::string jsonl_line(std::uint64_t id, const std::string& body, const CriticalSpans& critical);
std::string csv_body(const OpRecord& r);
std::string csv_line(std::uint64_t id, const std::string& body, const CriticalSpans& critical);
inline constexpr const char* kOpLogCsvHeader =
    "id,kernel,pe,engine,kind,issue,start,end,bytes,flops,peer,tag,hops,tensor,shape,critical\n";

class OpLog {
 public:
  // A record is open from its op's issue until its times are final (close). A log that
  // keeps its records (the default: tests, traces and the op-log file read them) holds
  // every one; one that does not hands each to the listeners as it closes and drops it,
  // so a run's memory does not grow with its ops.
  void keep(bool on) { keep_ = on; }
  bool keeps() const { return keep_; }
  std::uint64_t append(OpRecord&& r);  // opens a record; returns its id
  std::uint64_t append(const OpRecord& r) { return append(OpRecord(r)); }
  std::uint64_t append_closed(OpRecord&& r);  // a record final when made
  OpRecord& at(std::uint64_t id);           // an open record, or a kept one
  void close(std::uint64_t id);
  // Makes the last change to an open record (its times) and closes it, finding it once.
  void close(std::uint64_t id, const std::function<void(OpRecord&)>& last);
  // Closes, in id order, the records still open (a run stopped before they finished).
  void close_open();

  // Called with every record as it closes, while the returned handle lives (a workload's
  // running aggregates over its run).
  using Listener = std::function<void(const OpRecord&)>;
  class Listening {
   public:
    Listening(OpLog& log, std::list<Listener>::iterator it) : log_(&log), it_(it) {}
    Listening(Listening&& other) noexcept : log_(std::exchange(other.log_, nullptr)), it_(other.it_) {}
    Listening& operator=(Listening&&) = delete;
    ~Listening() {
      if (log_) log_->listeners_.erase(it_);
    }

   private:
    OpLog* log_;
    std::list<Listener>::iterator it_;
  };
  [[nodiscard]] Listening listen(Listener listener);

  const std::vector<OpRecord>& records() const { return records_; }  // the kept records
  std::uint64_t size() const { return next_; }                       // records appended
  void clear();
  // Orders the records from `first` on PE by PE (SIP, cube, PE), each PE's in its own
  // issue order, and renumbers their ids. How SystemC interleaves PEs that run at the
  // same instant depends on everything else simulated, but a PE's own sequence does not:
  // a run split over processes by SIP (run --jobs) concatenates to the same log.
  void group_by_pe(std::size_t first);
  // Appends records read back from to_jsonl() text, renumbering their ids.
  void append_jsonl(const std::string& text);

  // Queries the tests use.
  std::uint64_t bytes(const std::string& engine, const std::string& kind = "") const;
  std::uint64_t bytes_of_tensor(const std::string& tensor) const;
  std::size_t count(const std::string& kind) const;
  std::vector<const OpRecord*> select(const std::string& engine, const std::string& kind = "") const;
  // Busy intervals of one engine of one PE, merged where they overlap.
  std::vector<std::pair<std::uint64_t, std::uint64_t>> busy(const PeCoord& pe,
                                                            const std::string& engine) const;
  std::uint64_t last_end() const;
  // Messages sent over each link, by XY routing on `mesh`: mesh links are named
  // "cubeA->cubeB", a cube's fabric "cubeA.fabric".
  std::map<std::string, std::uint64_t> messages_per_link(const Mesh& mesh) const;

  std::string to_jsonl() const;
  std::string to_csv() const;
  // A 64-bit FNV-1a hash of the JSON-lines text: equal logs, equal hashes.
  std::uint64_t hash() const;

 private:
  bool keep_ = true;
  std::uint64_t next_ = 0;
  std::vector<OpRecord> records_;                      // kept
  RecyclingMap<std::uint64_t, OpRecord> open_;  // open, when not kept
  std::list<Listener> listeners_;
};

}  // namespace kb
