#include "platform/split_run.h"

#include <algorithm>
#include <stdexcept>

#include "base/bytes.h"
#include "models/common/sim_time.h"

namespace kb {

SplitRun::SplitRun(System& system, PartExchange& exchange)
    : system_(system), exchange_(exchange), local_(system.built()), rank_of_sip_(system.sip_count(), kNobody) {
  ByteWriter mine;
  for (const SipId s : local_) mine.put(s.value);
  const std::vector<std::string> all = exchange_.all_gather(mine.bytes());
  for (std::uint32_t rank = 0; rank < all.size(); ++rank) {
    ByteReader in(all[rank]);
    while (!in.done()) rank_of_sip_.at(in.get<std::uint32_t>()) = rank;
  }
  for (std::uint32_t s = 0; s < rank_of_sip_.size(); ++s)
    if (rank_of_sip_[s] == kNobody)
      throw std::logic_error("a split run in which no process builds sip" + std::to_string(s));
  if (system_.links().empty()) throw std::logic_error("a split run of SIPs that no link couples");
  // Every link has the topology's one latency (system.links.latency).
  lookahead_ = system_.links().front()->direction(true).latency().value();
  system_.set_courier([this](std::uint32_t sip, LinkPacket&& p) {
    if (rank_of_sip_[sip] == exchange_.rank()) system_.deliver_here(sip, std::move(p));
    else outbox_.emplace_back(sip, std::move(p));
  });
}

SplitRun::~SplitRun() { system_.deliver_all_here(); }

SplitRun::Round SplitRun::round(bool timed_out) {
  std::uint64_t next = kNever;
  if (sc_core::sc_pending_activity()) next = (sim_time() + sc_core::sc_time_to_pending_activity()).value();
  for (const SipId s : local_)  // messages taken in, not yet seen by the kernel
    next = std::min(next, system_.sip(s).links()->inbound().next_at());
  ByteWriter mine;
  mine.put(next);
  mine.put(timed_out);
  for (const auto& [sip, p] : outbox_) {
    mine.put(sip);
    encode(p, mine);
  }
  outbox_.clear();
  const std::vector<std::string> all = exchange_.all_gather(mine.bytes());
  Round r{kNever, false};
  for (std::uint32_t rank = 0; rank < all.size(); ++rank) {
    ByteReader in(all[rank]);
    r.next = std::min(r.next, in.get<std::uint64_t>());
    r.stop = in.get<bool>() || r.stop;
    while (!in.done()) {
      const auto sip = in.get<std::uint32_t>();
      LinkPacket p = decode_packet(in);
      r.next = std::min(r.next, p.at);
      if (rank_of_sip_.at(sip) != exchange_.rank()) continue;
      imports_.emplace_back(rank, p.account.step);
      p.account.imported(imports_.size() - 1);
      system_.deliver_here(sip, std::move(p));
    }
  }
  return r;
}

void SplitRun::window(std::uint64_t end) {
  sc_core::sc_start(sc_core::sc_time::from_value(end) - sim_time());
}

void SplitRun::finish_spans(std::map<std::uint64_t, CriticalSpans>& spans, std::vector<AwayWalk> away,
                            const sc_core::sc_time& origin, const sc_core::sc_time& cycle) {
  for (;;) {
    ByteWriter mine;
    for (const AwayWalk& w : away) {
      const auto& [rank, step] = imports_.at(w.import);
      mine.put(rank);
      mine.put(step);
      mine.put(w.until);
    }
    away.clear();
    const std::vector<std::string> all = exchange_.all_gather(mine.bytes());
    bool any = false;
    for (const std::string& text : all) {
      ByteReader in(text);
      while (!in.done()) {
        any = true;
        const auto rank = in.get<std::uint32_t>();
        const auto step = in.get<std::uint64_t>();
        const auto until = in.get<std::uint64_t>();
        if (rank == exchange_.rank()) critical_spans_from(spans, step, until, origin, cycle, &away);
      }
    }
    if (!any) return;
  }
}

}  // namespace kb
