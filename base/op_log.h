#pragma once
// The op log (docs/tl.md): one record per tl op, in issue order. Tests read it to verify
// the kernels' levers; it is written as JSON lines or CSV.
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "base/ids.h"
#include "base/mesh.h"

namespace kb {

struct OpRecord {
  std::uint64_t id = 0;
  std::string kernel;
  PeCoord pe;
  std::string engine;  // cpu, dma, gemm, math, ipcq
  std::string kind;    // the tl op: load, store, composite, dot, exp, send, recv, ...
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
  std::vector<std::pair<std::uint64_t, std::uint64_t>> critical;
};

class OpLog {
 public:
  std::uint64_t append(OpRecord r);  // returns the record's id
  OpRecord& at(std::uint64_t id) { return records_.at(id); }
  const std::vector<OpRecord>& records() const { return records_; }
  std::size_t size() const { return records_.size(); }
  void clear() { records_.clear(); }
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
  std::vector<OpRecord> records_;
};

}  // namespace kb
