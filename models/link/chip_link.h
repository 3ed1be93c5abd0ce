#pragma once
// One link between two SIPs, or between a SIP and the switch (system.links,
// docs/topology.md): two directions, each carrying one message at a time at the link's
// bandwidth (a Link: a message holds it for bytes / bandwidth, queued behind the ones
// before it) and delivering it `latency` after its last byte left.
#include <array>
#include <cstdint>
#include <string>

#include <systemc>

#include "base/name.h"
#include "base/sip_graph.h"
#include "models/common/link.h"

namespace kb {

class ChipLink : public sc_core::sc_module {
 public:
  ChipLink(const sc_core::sc_module_name& name, const Topology& topo, const SipLink& ends, const std::string& a_name,
           const std::string& b_name);

  const SipLink& ends() const { return ends_; }
  // `forward`: from the a end to the b end.
  Link& direction(bool forward) { return directions_[forward ? 0 : 1]; }
  const Link& direction(bool forward) const { return directions_[forward ? 0 : 1]; }
  // "sip0>sip1": the name of a direction in the op log and the traces.
  Name direction_name(bool forward) const { return names_[forward ? 0 : 1]; }
  // The number of the next message over a direction (only its sender's simulation asks).
  std::uint64_t next_seq(bool forward) { return seq_[forward ? 0 : 1]++; }
  void record_to(Waveform& wave);

 private:
  SipLink ends_;
  std::array<Link, 2> directions_;
  std::array<Name, 2> names_;
  std::array<std::uint64_t, 2> seq_{};
};

}  // namespace kb
