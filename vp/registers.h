#pragma once
// The control register block of a vp::Accelerator: 32-bit little-endian registers,
// accessed one at a time (4 bytes, aligned, no byte enables).
#include <cstdint>

namespace kb::vp::reg {

constexpr std::uint64_t kId = 0x00;        // read: kIdValue
constexpr std::uint64_t kJob = 0x04;       // read/write: the job kControl starts
constexpr std::uint64_t kControl = 0x08;   // write kStart: start job kJob (refused while one runs)
constexpr std::uint64_t kStatus = 0x0C;    // read: a Status
constexpr std::uint64_t kCyclesLo = 0x10;  // read: PE-clock cycles of the last job, low word
constexpr std::uint64_t kCyclesHi = 0x14;  //                                       high word
constexpr std::uint64_t kBlockBytes = 0x18;

constexpr std::uint32_t kIdValue = 0x4B425650;  // "KBVP"
constexpr std::uint32_t kStart = 1;

enum Status : std::uint32_t { kIdle = 0, kRunning = 1, kDone = 2, kError = 3 };

}  // namespace kb::vp::reg
