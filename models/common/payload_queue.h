#pragma once
// A payload event queue that behaves exactly as tlm_utils::peq_with_cb_and_phase (the
// same callbacks in the same order at the same instants and deltas) but keeps its timed
// entries in an array in time order. An entry no earlier than every pending one, as an
// HBM channel's or a link's responses are, goes on the back at once;
// peq_with_cb_and_phase walks its whole linked list to find the end, a cache miss per
// pending entry (about 9 of a DMA burst's 131 first-level misses).
// It has no process or event of its own: its zero-delay callbacks run from the
// simulation's DeltaDispatch and its timed ones from the TimedDispatch, in the order in
// which a process of its own, woken by an event of its own, would run them.
#include <algorithm>
#include <deque>
#include <utility>
#include <vector>

#include <systemc>
#include <tlm>

#include "models/common/dispatch.h"
#include "models/common/sim_time.h"

namespace kb {

template <class Owner>
class PayloadQueue : public sc_core::sc_object, private DeltaSink, private TimedSink {
 public:
  using Callback = void (Owner::*)(tlm::tlm_generic_payload&, const tlm::tlm_phase&);

  PayloadQueue(Owner* owner, Callback callback)
      : sc_core::sc_object(sc_core::sc_gen_unique_name("payload_queue")),
        owner_(owner),
        callback_(callback),
        // Both dispatchers' processes are made while the machine is built, not mid-run.
        delta_dispatch_(DeltaDispatch::get()),
        timed_dispatch_(TimedDispatch::get()) {}
  ~PayloadQueue() override {
    if (timed_pending_.pending()) timed_dispatch_.cancel(timed_pending_);
    if (delta_asked_) delta_dispatch_.remove(this);
  }

  // The callback gets (gp, phase) after `delay`; a zero delay means the next delta.
  void notify(tlm::tlm_generic_payload& gp, const tlm::tlm_phase& phase, const sc_core::sc_time& delay) {
    if (delay == sc_core::SC_ZERO_TIME) {
      // In the delta after this one, whose parity is the other one.
      deltas_[(delta_dispatch_.delta() & 1) == 0 ? 1 : 0].emplace_back(&gp, phase);
      ask_delta();
      return;
    }
    const sc_core::sc_time at = sim_time() + delay;
    // After every entry due no later (peq_with_cb_and_phase's order for equal times).
    if (timed_.empty() || timed_.back().at <= at) {
      timed_.push_back({at, &gp, phase});
    } else {
      const auto after = std::upper_bound(timed_.begin(), timed_.end(), at,
                                          [](const sc_core::sc_time& t, const Timed& e) { return t < e.at; });
      timed_.insert(after, {at, &gp, phase});
    }
    if (!delta_asked_) timed_dispatch_.notify(this, timed_pending_, delay);  // only ever earlier
  }

 private:
  struct Timed {
    sc_core::sc_time at;
    tlm::tlm_generic_payload* gp;
    tlm::tlm_phase phase;
  };
  using Entry = std::pair<tlm::tlm_generic_payload*, tlm::tlm_phase>;

  // What notify(SC_ZERO_TIME) on an event of its own would do: a pending timed
  // notification is dropped (taken again after the delta's callbacks), and later ones
  // wait for the delta.
  void ask_delta() {
    if (delta_asked_) return;
    delta_asked_ = true;
    timed_dispatch_.cancel(timed_pending_);
    delta_dispatch_.add(this);
  }
  void fire_delta() override {
    delta_asked_ = false;
    fire();
  }
  void fire_timed() override { fire(); }

  void fire() {
    // The deltas of this parity (notified in a delta of the other one), in notify order;
    // callbacks add only to the other parity's.
    const std::size_t now_parity = delta_dispatch_.delta() & 1;
    std::vector<Entry>& due = deltas_[now_parity];
    for (std::size_t i = 0; i < due.size(); ++i) (owner_->*callback_)(*due[i].first, due[i].second);
    due.clear();
    if (!deltas_[1 - now_parity].empty()) ask_delta();
    if (timed_.empty()) return;
    const sc_core::sc_time now = sim_time();
    while (!timed_.empty() && timed_.front().at == now) {
      const Timed e = timed_.front();  // callbacks add only later entries: the front stays
      (owner_->*callback_)(*e.gp, e.phase);
      timed_.pop_front();
    }
    if (!timed_.empty() && !delta_asked_) timed_dispatch_.notify(this, timed_pending_, timed_.front().at - now);
  }

  Owner* owner_;
  Callback callback_;
  DeltaDispatch& delta_dispatch_;  // the simulation's, held: no lookup per call
  TimedDispatch& timed_dispatch_;
  std::deque<Timed> timed_;
  std::vector<Entry> deltas_[2];  // zero-delay entries due in an even / odd delta
  TimedDispatch::Pending timed_pending_;
  bool delta_asked_ = false;  // the dispatcher fires this queue in the next delta
};

}  // namespace kb
