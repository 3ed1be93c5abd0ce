#pragma once
// The control register block of a vp::Accelerator: 32-bit little-endian registers,
// accessed one at a time (4 bytes, aligned, no byte enables). examples/vp/README.md
// describes the job flow; vp/job_descriptor.h the descriptor a doorbell queues.
#include <cstdint>

namespace kb::vp::reg {

constexpr std::uint64_t kId = 0x00;         // read: kIdValue
constexpr std::uint64_t kDescLo = 0x04;     // read/write: the next descriptor's address, low word
constexpr std::uint64_t kDescHi = 0x08;     //                                          high word
constexpr std::uint64_t kDoorbell = 0x0C;   // write kRing: queue the descriptor at kDescHi:kDescLo
constexpr std::uint64_t kQueued = 0x10;     // read: descriptors queued and not yet started
constexpr std::uint64_t kCompleted = 0x14;  // read: jobs ended (done or failed) since reset, mod 2^32
constexpr std::uint64_t kStatus = 0x18;     // read: a Status (the running job's, else the last one's)
constexpr std::uint64_t kError = 0x1C;      // read: the last ended job's ErrorCode (vp/job_descriptor.h)
constexpr std::uint64_t kCyclesLo = 0x20;   // read: PE-clock cycles of the last ended job, low word
constexpr std::uint64_t kCyclesHi = 0x24;   //                                              high word
constexpr std::uint64_t kIrqAck = 0x28;     // write kRing: lower irq
constexpr std::uint64_t kBlockBytes = 0x2C;

constexpr std::uint32_t kIdValue = 0x4B425650;  // "KBVP"
constexpr std::uint32_t kRing = 1;

enum Status : std::uint32_t { kIdle = 0, kRunning = 1, kDone = 2, kFailed = 3 };

}  // namespace kb::vp::reg
