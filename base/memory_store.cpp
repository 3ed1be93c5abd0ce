#include "base/memory_store.h"

#include <algorithm>
#include <cassert>
#include <cstring>

namespace kb {

void MemoryStore::write(std::uint64_t offset, const std::uint8_t* src, std::uint64_t bytes) {
  assert(offset + bytes <= capacity_);
  while (bytes > 0) {
    const std::uint64_t page = offset / kPageBytes, in_page = offset % kPageBytes;
    const std::uint64_t n = std::min(bytes, kPageBytes - in_page);
    auto& p = pages_[page];
    if (!p) p = std::make_unique<std::uint8_t[]>(kPageBytes);  // value-initialised: zeros
    std::memcpy(p.get() + in_page, src, n);
    offset += n;
    src += n;
    bytes -= n;
  }
}

MemoryStore::Page MemoryStore::page(std::uint64_t offset) {
  assert(offset < capacity_);
  const std::uint64_t index = offset / kPageBytes;
  auto& p = pages_[index];
  if (!p) p = std::make_unique<std::uint8_t[]>(kPageBytes);
  const std::uint64_t first = index * kPageBytes;
  return {first, std::min(kPageBytes, capacity_ - first), p.get()};
}

void MemoryStore::read(std::uint64_t offset, std::uint8_t* dst, std::uint64_t bytes) const {
  assert(offset + bytes <= capacity_);
  while (bytes > 0) {
    const std::uint64_t page = offset / kPageBytes, in_page = offset % kPageBytes;
    const std::uint64_t n = std::min(bytes, kPageBytes - in_page);
    const auto it = pages_.find(page);
    if (it == pages_.end()) std::memset(dst, 0, n);
    else std::memcpy(dst, it->second.get() + in_page, n);
    offset += n;
    dst += n;
    bytes -= n;
  }
}

}  // namespace kb
