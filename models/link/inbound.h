#pragma once
// What the links deliver to one SIP: messages taken off a link at one of its ports, and
// messages a switch sends on to it. They are done in the SIP's own dispatch domain at
// their time, before its own events of that instant, in (time, link, direction, number)
// order: never in the order in which the simulations of other SIPs put them here, so a
// SIP's events do not depend on how its peers are simulated (alone, together, or in
// other processes).
#include <functional>
#include <map>
#include <tuple>

#include "models/common/dispatch.h"
#include "models/link/link_packet.h"

namespace kb {

class Inbound final : public ExternalSource {
 public:
  using Handler = std::function<void(LinkPacket&&)>;
  // Attaches to `timed` (the SIP's TimedDispatch); `handler` takes each packet at its time.
  Inbound(TimedDispatch& timed, Handler handler);
  Inbound(const Inbound&) = delete;
  Inbound& operator=(const Inbound&) = delete;

  // A packet due at p.at, no earlier than now.
  void put(LinkPacket&& p);
  bool empty() const { return waiting_.empty(); }

  std::uint64_t next_at() const override;
  void fire(std::uint64_t now) override;

 private:
  using Key = std::tuple<std::uint64_t, std::uint32_t, bool, std::uint64_t>;  // at, link, forward, seq
  TimedDispatch& timed_;
  Handler handler_;
  std::map<Key, LinkPacket> waiting_;
};

}  // namespace kb
