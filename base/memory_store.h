#pragma once
// Sparse byte store backing an HBM channel in data mode: pages are allocated on first
// write, so a 1 GiB channel costs only what a run really writes.
#include <cstdint>
#include <memory>
#include <unordered_map>

namespace kb {

class MemoryStore {
 public:
  explicit MemoryStore(std::uint64_t capacity) : capacity_(capacity) {}
  std::uint64_t capacity() const { return capacity_; }
  // Callers check bounds; out-of-range access is a programming error (asserted).
  void write(std::uint64_t offset, const std::uint8_t* src, std::uint64_t bytes);
  void read(std::uint64_t offset, std::uint8_t* dst, std::uint64_t bytes) const;  // unwritten = 0
  std::uint64_t resident_bytes() const { return pages_.size() * kPageBytes; }
  // The page holding `offset` (allocated if need be), for direct memory access: its
  // first offset, its length (up to the capacity) and its bytes.
  struct Page {
    std::uint64_t offset, bytes;
    std::uint8_t* data;
  };
  Page page(std::uint64_t offset);

 private:
  static constexpr std::uint64_t kPageBytes = 64 * 1024;
  std::uint64_t capacity_;
  std::unordered_map<std::uint64_t, std::unique_ptr<std::uint8_t[]>> pages_;
};

}  // namespace kb
