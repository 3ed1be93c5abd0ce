#pragma once
// A transfer resource (NOC link, fabric port, HBM channel wire): it serialises one
// transfer at a time at its bandwidth. Reservation is the contention model: a transfer
// starts when every resource on its path is free, and holds each for its serialisation.
#include <boost/container/static_vector.hpp>
#include <cstdint>
#include <initializer_list>
#include <string>
#include <systemc>
#include <tlm>

#include "base/topology.h"
#include "models/common/activity.h"
#include "models/common/waveform.h"

namespace kb {

// Time on a wire of `params` for `bytes`: ceil(bytes / bandwidth) cycles.
sc_core::sc_time serialisation(const LinkParams& params, sc_core::sc_time cycle,
                               std::uint64_t bytes);

class Link {
 public:
  Link(std::string name, const LinkParams& params, sc_core::sc_time cycle);

  const std::string& name() const { return name_; }
  // Time on the wire for `bytes`: ceil(bytes / bandwidth) cycles.
  sc_core::sc_time serialisation(std::uint64_t bytes) const;
  sc_core::sc_time latency() const { return latency_; }
  sc_core::sc_time free_at() const { return free_; }

  // Holds the link for `bytes` from `start` (callers pick start >= free_at()).
  void hold(sc_core::sc_time start, std::uint64_t bytes);

  // Records the link's busy intervals into `wave` (if its filter takes the link).
  void record_to(Waveform& wave);
  // Counts the bytes it carries into `meter` as `act`.
  void count_into(ActivityMeter& meter, Act act) {
    meter_ = &meter;
    act_ = act;
  }

  std::uint64_t bytes() const { return bytes_; }
  std::uint64_t transfers() const { return transfers_; }
  sc_core::sc_time busy() const { return busy_; }

 private:
  std::string name_;
  LinkParams params_;
  sc_core::sc_time cycle_, latency_;
  sc_core::sc_time free_ = sc_core::SC_ZERO_TIME;
  std::uint64_t bytes_ = 0, transfers_ = 0;
  sc_core::sc_time busy_ = sc_core::SC_ZERO_TIME;
  Waveform* wave_ = nullptr;
  int busy_signal_ = -1;
  ActivityMeter* meter_ = nullptr;
  Act act_ = Act::Fabric;
};

// The links one forwarding step holds (at most a source and a destination port); held
// inline because a path is built for every burst.
using LinkPath = boost::container::static_vector<Link*, 2>;

// Reserves every link of a path for the same transfer: start = the earliest time, no
// earlier than `earliest`, at which all of them are free. Returns that start. A transfer
// of no bytes holds nothing and starts at `earliest`.
sc_core::sc_time reserve_path(const LinkPath& links, sc_core::sc_time earliest, std::uint64_t bytes);

// Bytes a payload carries in each direction: write data travels with the request,
// read data with the response.
std::uint64_t request_bytes(const tlm::tlm_generic_payload& gp);
std::uint64_t response_bytes(const tlm::tlm_generic_payload& gp);

}  // namespace kb
