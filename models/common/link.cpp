#include "models/common/link.h"

#include <algorithm>

namespace kb {

sc_core::sc_time serialisation(const LinkParams& params, sc_core::sc_time cycle,
                               std::uint64_t bytes) {
  const std::uint64_t cycles = (bytes + params.bytes_per_cycle - 1) / params.bytes_per_cycle;
  return cycle * static_cast<double>(cycles);
}

Link::Link(std::string name, const LinkParams& params, sc_core::sc_time cycle)
    : name_(std::move(name)),
      params_(params),
      cycle_(cycle),
      latency_(cycle * static_cast<double>(params.latency_cycles)) {}

sc_core::sc_time Link::serialisation(std::uint64_t bytes) const {
  return kb::serialisation(params_, cycle_, bytes);
}

void Link::hold(sc_core::sc_time start, std::uint64_t bytes) {
  const sc_core::sc_time ser = serialisation(bytes);
  free_ = start + ser;
  busy_ += ser;
  bytes_ += bytes;
  ++transfers_;
  if (meter_ != nullptr && bytes > 0) meter_->add(act_, bytes, start);
  if (wave_ != nullptr && ser > sc_core::SC_ZERO_TIME) {
    wave_->set(busy_signal_, start, 1);
    wave_->set(busy_signal_, free_, 0);
  }
}

void Link::record_to(Waveform& wave) {
  busy_signal_ = wave.add(name_, "busy", 1);
  if (busy_signal_ >= 0) wave_ = &wave;
}

sc_core::sc_time reserve_path(const LinkPath& links, sc_core::sc_time earliest, std::uint64_t bytes) {
  // A transfer without data (a read's request, a write's response) travels on the control
  // wires, as AXI's address and response channels and a NoC's response network run
  // beside the data: it waits behind no data.
  if (bytes == 0) return earliest;
  sc_core::sc_time start = earliest;
  for (const Link* l : links) start = std::max(start, l->free_at());
  for (Link* l : links) l->hold(start, bytes);
  return start;
}

std::uint64_t request_bytes(const tlm::tlm_generic_payload& gp) {
  return gp.is_write() ? gp.get_data_length() : 0;
}

std::uint64_t response_bytes(const tlm::tlm_generic_payload& gp) {
  return gp.is_read() ? gp.get_data_length() : 0;
}

}  // namespace kb
