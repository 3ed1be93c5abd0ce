#pragma once
// A message on its way between SIPs: what a link port takes from its mesh, carries over
// the links and hands to the destination SIP's mesh. Plain data, so that it can also
// cross between the processes of a parallel simulation.
#include <cstdint>
#include <vector>

#include "base/bytes.h"
#include "base/critical_path.h"
#include "models/common/message.h"

namespace kb {

struct LinkPacket {
  // What the receiving SIP does with it at `at`: take it off a link at a port (Arrive),
  // or, at a switch, send it on over the link to this SIP (SwitchEgress).
  enum class Stage : std::uint8_t { Arrive, SwitchEgress };
  // Its place in the receiving SIP's order of one instant: over which link direction it
  // came, as which of that direction's messages (each direction numbers its own).
  std::uint64_t at = 0;  // sc_time value
  std::uint32_t link = 0;
  bool forward = true;  // crossed from the link's a end to its b end
  std::uint64_t seq = 0;
  Stage stage = Stage::Arrive;

  std::uint32_t dst_sip = 0, dst_cube = 0, dst_pe = 0;
  std::uint32_t src_sip = 0, src_cube = 0, src_pe = 0, tag = 0;
  std::uint64_t bytes = 0;
  bool timing_only = true;
  std::vector<std::uint8_t> data;  // data mode: its bytes
  std::vector<std::uint32_t> route;  // cubes whose routers sent it over a mesh link (RouteRecord)
  std::vector<LinkCrossing> crossings;
  PathAccount account;  // its critical-path account (docs/critical_path.md)
};

// Appends p to `out`, and reads one back (for the processes of a parallel simulation).
void encode(const LinkPacket& p, ByteWriter& out);
LinkPacket decode_packet(ByteReader& in);

}  // namespace kb
