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
// read: the last ended job's ErrorCode (vp/job_descriptor.h), kept while the next job
// runs, so a driver reading it on an irq sees the job that raised it
constexpr std::uint64_t kError = 0x1C;
constexpr std::uint64_t kCyclesLo = 0x20;   // read: PE-clock cycles of the last ended job, low word
constexpr std::uint64_t kCyclesHi = 0x24;   //                                              high word
constexpr std::uint64_t kIrqAck = 0x28;     // write kRing: lower irq
// write kRing: arm a fault for driver tests: the next command the program of cube 0's
// PE 0 issues is refused, as if its kernel had failed there (the job ends with Fault)
constexpr std::uint64_t kInjectFault = 0x2C;
// write kRing: reset. The running job ends with Reset, queued descriptors are dropped,
// every PE's program stops, what is in flight drains (STATUS reads kResetting meanwhile,
// and the doorbell is refused), and a halted accelerator takes jobs again; STATUS then
// reads kIdle
constexpr std::uint64_t kReset = 0x30;
constexpr std::uint64_t kBlockBytes = 0x34;

constexpr std::uint32_t kIdValue = 0x4B425650;  // "KBVP"
constexpr std::uint32_t kRing = 1;

enum Status : std::uint32_t { kIdle = 0, kRunning = 1, kDone = 2, kFailed = 3, kResetting = 4 };

}  // namespace kb::vp::reg
