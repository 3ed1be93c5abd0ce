#pragma once
// Host-side helpers for a platform's initiator: move a host tensor (fp32 values, row
// major) to or from the HBM places a TensorMap names, or a job descriptor to HBM, with blocking b_transport calls
// of at most `max_bytes` each through `socket` (any initiator socket of the base
// protocol, bound to the accelerator's hbm socket). Each call's delay is added to `delay` (loosely timed: the caller waits
// for it when it likes). Throws std::runtime_error naming the address if a transfer
// fails.
#include <cstdint>
#include <vector>

#include <systemc>
#include <tlm>

#include "vp/job.h"
#include "vp/registers.h"

namespace kb::vp {

void write_tensor(tlm::tlm_base_initiator_socket_b<>& socket, const TensorMap& map, const std::vector<float>& values,
                  sc_core::sc_time& delay, std::uint64_t max_bytes = 4096);
std::vector<float> read_tensor(tlm::tlm_base_initiator_socket_b<>& socket, const TensorMap& map, sc_core::sc_time& delay,
                               std::uint64_t max_bytes = 4096);

// A descriptor's 128 bytes to `address`, and its result words back.
void write_descriptor(tlm::tlm_base_initiator_socket_b<>& socket, std::uint64_t address, const JobDescriptor& d,
                      sc_core::sc_time& delay);
// A batched decode's length list (u64 count, then the lengths) to `address`.
void write_lens(tlm::tlm_base_initiator_socket_b<>& socket, std::uint64_t address, const std::vector<std::uint64_t>& lens,
                sc_core::sc_time& delay);
struct JobResult {
  std::uint32_t status = 0;  // a reg::Status
  ErrorCode error = ErrorCode::None;
  std::uint64_t cycles = 0;
};
JobResult read_result(tlm::tlm_base_initiator_socket_b<>& socket, std::uint64_t address, sc_core::sc_time& delay);

}  // namespace kb::vp
