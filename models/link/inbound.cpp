#include "models/link/inbound.h"

namespace kb {

Inbound::Inbound(TimedDispatch& timed, Handler handler) : timed_(timed), handler_(std::move(handler)) {
  timed_.attach(this);
}

void Inbound::put(LinkPacket&& p) {
  const Key key{p.at, p.link, p.forward, p.seq};
  const bool earliest = waiting_.empty() || key < waiting_.begin()->first;
  waiting_.emplace(key, std::move(p));
  if (earliest) timed_.external_moved();
}

std::uint64_t Inbound::next_at() const { return waiting_.empty() ? ~std::uint64_t{0} : std::get<0>(waiting_.begin()->first); }

void Inbound::fire(std::uint64_t now) {
  // A handler puts only later packets (every link takes time), never one due now.
  while (!waiting_.empty() && std::get<0>(waiting_.begin()->first) == now) {
    LinkPacket p = std::move(waiting_.begin()->second);
    waiting_.erase(waiting_.begin());
    handler_(std::move(p));
  }
}

}  // namespace kb
