#include "models/common/dispatch.h"

#include <algorithm>
#include <utility>

#ifndef SC_INCLUDE_DYNAMIC_PROCESSES  // for sc_spawn
#define SC_INCLUDE_DYNAMIC_PROCESSES
#endif
#include <systemc>

#include "models/common/sim_time.h"

namespace kb {

namespace {
constexpr std::uint64_t kNever = ~std::uint64_t{0};
}

DispatchProcess::DispatchProcess(const char* name) {
  sc_core::sc_spawn_options opts;
  opts.spawn_method();
  opts.set_sensitivity(&event_);
  opts.dont_initialize();
  sc_core::sc_spawn(sc_bind(&DispatchProcess::run, this), sc_core::sc_gen_unique_name(name), &opts);
}

namespace {
// Domains live as long as the program, as SystemC's simulation context does.
std::vector<DispatchDomain*>& domains() {
  static std::vector<DispatchDomain*> all;
  return all;
}
DispatchDomain* current_domain = nullptr;
}  // namespace

DispatchDomain& DispatchDomain::of(std::uint32_t index) {
  auto& all = domains();
  while (all.size() <= index) all.push_back(nullptr);
  if (all[index] == nullptr) all[index] = new DispatchDomain;
  return *all[index];
}

DispatchDomain& DispatchDomain::current() { return current_domain ? *current_domain : of(0); }

DispatchDomain::Scope::Scope(DispatchDomain& domain) : previous_(current_domain) { current_domain = &domain; }
DispatchDomain::Scope::~Scope() { current_domain = previous_; }

DeltaDispatch& DeltaDispatch::get() { return DispatchDomain::current().deltas(); }

TimedDispatch::TimedDispatch(DeltaDispatch& deltas)
    : sc_core::sc_prim_channel(sc_core::sc_gen_unique_name("timed_dispatch")),
      DispatchProcess("timed_dispatch"),
      deltas_(deltas) {
  deltas_.timed_ = this;
}

TimedDispatch& TimedDispatch::get() { return DispatchDomain::current().timed(); }

void DeltaDispatch::remove(DeltaSink* sink) {
  std::erase(asked_, sink);
  std::replace(serving_.begin(), serving_.end(), sink, static_cast<DeltaSink*>(nullptr));
}

template <class Body>
void DeltaDispatch::dispatch(Body&& body) {
  dispatching_ = true;
  try {
    body();
    // Nothing else would run before the next delta's sinks: run them now.
    while (!asked_.empty() && !sc_core::sc_pending_activity_at_current_time()) {
      ++inner_deltas_;
      fire();
    }
  } catch (...) {
    hand_over();
    throw;
  }
  hand_over();
}

void DeltaDispatch::hand_over() {
  dispatching_ = false;
  if (!asked_.empty()) event_.notify(sc_core::SC_ZERO_TIME);
  timed_->ask_update_after_dispatch();
}

void DeltaDispatch::run() {
  dispatch([this] { fire(); });
}

void DeltaDispatch::fire() {
  // Sinks that ask while these fire are for the next delta.
  serving_.swap(asked_);
  for (auto it = serving_.rbegin(); it != serving_.rend(); ++it)
    if (*it) (*it)->fire_delta();
  serving_.clear();
}

void TimedDispatch::notify(TimedSink* sink, Pending& pending, const sc_core::sc_time& delay) {
  const std::uint64_t at = (sim_time() + delay).value();
  if (pending.slot_ != kNone) {
    if (slots_[pending.slot_].at <= at) return;
    cancel(pending);
  }
  std::uint32_t slot;
  if (free_slots_.empty()) {
    slot = static_cast<std::uint32_t>(slots_.size());
    slots_.push_back({at, sink, &pending});
  } else {
    slot = free_slots_.back();
    free_slots_.pop_back();
    slots_[slot] = {at, sink, &pending};
  }
  pending.slot_ = slot;
  insert(at, slot);
  if (at < earliest_) {
    earliest_ = at;
    ask_update();
  }
}

void TimedDispatch::cancel(Pending& pending) {
  if (pending.slot_ == kNone) return;
  Slot& s = slots_[pending.slot_];
  s.sink = nullptr;  // its entry stays in the heap until it reaches the top
  s.pending = nullptr;
  pending.slot_ = kNone;
  if (s.at == earliest_) {
    earliest_stale_ = true;  // found again, once, in the update phase
    ask_update();
  }
}

void TimedDispatch::insert(std::uint64_t at, std::uint32_t slot) {
  heap_.push_back({at, slot});
  std::size_t i = heap_.size() - 1;
  while (i > 1 && heap_[i / 2].at > at) {
    heap_[i] = heap_[i / 2];
    i /= 2;
  }
  heap_[i] = {at, slot};
}

TimedDispatch::Entry TimedDispatch::take_top() {
  // SystemC's sift-down of the last entry from the top, with the same comparisons; the
  // entry stays in a register and is written once where it stops, not swapped down.
  const Entry top = heap_[1];
  const Entry moving = heap_.back();
  heap_.pop_back();
  const std::size_t size = heap_.size() - 1;
  std::size_t i = 1;
  for (std::size_t l = 2; l <= size; l = 2 * i) {
    std::size_t first = heap_[l].at < moving.at ? l : i;
    if (l + 1 <= size && heap_[l + 1].at < (first == i ? moving.at : heap_[l].at)) first = l + 1;
    if (first == i) break;
    heap_[i] = heap_[first];
    i = first;
  }
  if (size > 0) heap_[i] = moving;
  return top;
}

void TimedDispatch::release(std::uint32_t slot) {
  Slot& s = slots_[slot];
  if (s.pending) s.pending->slot_ = kNone;
  s.sink = nullptr;
  s.pending = nullptr;
  free_slots_.push_back(slot);
}

std::uint64_t TimedDispatch::earliest_live() const {
  // A live entry's subtree holds nothing earlier, so the walk stops at the first live
  // entry on each path; withdrawn entries are few.
  const std::size_t size = heap_.size() - 1;
  if (size > 0 && live(heap_[1])) return heap_[1].at;  // the common case: the top is live
  std::uint64_t best = kNever;
  walk_.assign(1, 1);
  while (!walk_.empty()) {
    const std::size_t i = walk_.back();
    walk_.pop_back();
    if (i > size || heap_[i].at >= best) continue;
    if (live(heap_[i])) {
      best = heap_[i].at;
      continue;
    }
    walk_.push_back(2 * i);
    walk_.push_back(2 * i + 1);
  }
  return best;
}

void TimedDispatch::ask_update() {
  if (update_asked_) return;
  update_asked_ = true;
  if (deltas_.dispatching()) update_deferred_ = true;
  else request_update();
}

void TimedDispatch::ask_update_after_dispatch() {
  if (std::exchange(update_deferred_, false)) request_update();
}

void TimedDispatch::update() {
  // Once a delta, however many notifications moved the earliest: event_ then moves at
  // most once, and SystemC's heap takes one entry, not one per move.
  update_asked_ = false;
  if (earliest_stale_) earliest_ = earliest_live();
  earliest_stale_ = false;
  const std::uint64_t next = external_ ? std::min(earliest_, external_->next_at()) : earliest_;
  if (next == scheduled_) return;
  if (next > scheduled_) event_.cancel();  // an sc_event's notification moves only earlier
  scheduled_ = next;
  if (scheduled_ != kNever) event_.notify(sc_core::sc_time::from_value(scheduled_) - sim_time());
}

void TimedDispatch::run() {
  deltas_.dispatch([this] { fire_due(); });
}

void TimedDispatch::fire_due() {
  scheduled_ = kNever;  // event_ has fired
  const std::uint64_t now = sim_time().value();
  // As SystemC's time step: withdrawn entries on top leave first, then every entry due
  // now is taken out (its sink no longer pending) before any sink runs.
  while (heap_.size() > 1 && !live(heap_[1])) release(take_top().slot);
  due_.clear();
  while (heap_.size() > 1 && heap_[1].at == now) {
    const Entry e = take_top();
    if (TimedSink* sink = slots_[e.slot].sink) due_.push_back(sink);
    release(e.slot);
  }
  earliest_ = earliest_live();
  earliest_stale_ = false;
  ask_update();
  if (external_ && external_->next_at() == now) external_->fire(now);
  for (TimedSink* sink : due_) sink->fire_timed();
}

void ThreadAlarm::sleep(const sc_core::sc_time& delay) {
  timed_.notify(this, pending_, delay);
  sc_core::wait(wake_);
}

}  // namespace kb
