#pragma once
// The simulation's two dispatchers: one SystemC method process runs every payload
// queue's zero-delay callbacks (DeltaDispatch), another every timed wake-up, of the
// queues and of the program threads' timed waits (TimedDispatch).
//
// Why: a deferral through an event and a process of its own costs an event trigger and
// a process dispatch, and SystemC keeps a timed notification as a pointer to a separately
// allocated record in its heap, compared through a function pointer and both pointers.
// Each touches objects that nothing else in the transaction touches: cache misses, the
// largest single cost of a run. Here a deferral is a pointer in a list, and a timed entry
// its time and a slot number side by side in one array.
//
// Why the order stays SystemC's, so that no same-instant order and no op log moves:
// - Deltas. At the end of a delta SystemC triggers the delta events in the reverse order
//   of their notification, and runs the methods they wake in that order before any
//   thread. In a kernbench simulation the only methods woken in a delta are payload
//   queues' (everything else that waits on a delta is a thread), so serving the queues
//   from one method, last asked first, runs their callbacks in the order their own
//   methods ran, and every thread still runs after them in its own order.
// - Instants. Events due at one instant run in the order SystemC's heap gives them up,
//   and that order depends on every insertion and removal before. The TimedDispatch heap
//   is the same kind (a binary heap in an array from index 1, an entry moving up only past
//   a strictly later parent and down only below a strictly earlier child), it sees the
//   same insertions in the same order, a withdrawn notification stays in it until it
//   comes to the top, as in SystemC's, and the entries due at an instant are all taken
//   out before any of them runs. Everything that waits on a time in a kernbench
//   simulation waits here, so no entry of SystemC's own heap falls between two of these.
#include <cstdint>
#include <vector>

#include <systemc>

namespace kb {

// A method process woken by its own event, made once per simulation on first use (as
// SystemC's simulation context, it lives as long as the program).
class DispatchProcess {
 protected:
  explicit DispatchProcess(const char* name);
  virtual void run() = 0;
  ~DispatchProcess() = default;

  sc_core::sc_event event_;
};

// What a queue does when its delta comes.
class DeltaSink {
 public:
  virtual void fire_delta() = 0;

 protected:
  ~DeltaSink() = default;
};

// What is woken when its time comes.
class TimedSink {
 public:
  virtual void fire_timed() = 0;

 protected:
  ~TimedSink() = default;
};

// Work put into a domain from outside it (what another SIP's link delivers): done at
// its time, before the domain's own entries of that instant, in an order of its own
// (never the order in which it was put in), so that a SIP's events do not depend on
// when another SIP's simulation put them there.
class ExternalSource {
 public:
  virtual std::uint64_t next_at() const = 0;  // sc_time value of the earliest; ~0 when none
  virtual void fire(std::uint64_t now) = 0;   // does everything due now

 protected:
  ~ExternalSource() = default;
};

class TimedDispatch;

// The next delta, when nothing but this dispatcher would run in it (no process runnable,
// no event or channel update pending; the TimedDispatch's update waits for the dispatch
// to end), runs at once, inside the same SystemC delta, at the end of either
// dispatcher's run: SystemC would run exactly these sinks in exactly this order next, so
// only the count of SystemC's deltas changes, not what happens in them. A step's round
// trip between two blocks is several deferrals in a row, and a SystemC delta costs an
// update phase, an event trigger and a process dispatch. delta() counts both kinds.
class DeltaDispatch final : private DispatchProcess {
 public:
  static DeltaDispatch& get();  // the current domain's (DispatchDomain)

  // `sink` fires in the next delta; a sink asks at most once a delta.
  void add(DeltaSink* sink) {
    if (asked_.empty() && !dispatching_) event_.notify(sc_core::SC_ZERO_TIME);  // the delta's first ask
    asked_.push_back(sink);
  }
  // A sink that goes away before its delta.
  void remove(DeltaSink* sink);
  // The delta the simulation is in: SystemC's count plus the deltas run inside a dispatch.
  std::uint64_t delta() const { return sc_core::sc_delta_count() + inner_deltas_; }
  // Whether a dispatcher's method is running (the sinks asking now are left for its end).
  bool dispatching() const { return dispatching_; }

 private:
  friend class TimedDispatch;
  friend class DispatchDomain;
  DeltaDispatch() : DispatchProcess("delta_dispatch") {}
  void run() override;
  void fire();
  // A dispatcher's run: `body`, then the deltas that can run at once; however it ends
  // (a sink may throw), the sinks left for the next delta go to SystemC.
  template <class Body>
  void dispatch(Body&& body);
  void hand_over();

  std::vector<DeltaSink*> asked_;    // in this delta, for the next one
  std::vector<DeltaSink*> serving_;  // the sinks of this delta, while they fire
  std::uint64_t inner_deltas_ = 0;
  bool dispatching_ = false;
  TimedDispatch* timed_ = nullptr;  // of the same domain
};

class TimedDispatch final : private sc_core::sc_prim_channel, private DispatchProcess {
 public:
  // A sink's pending notification, as an sc_event holds its own: none or one.
  class Pending {
   public:
    bool pending() const { return slot_ != kNone; }

   private:
    friend class TimedDispatch;
    std::uint32_t slot_ = kNone;
  };

  static TimedDispatch& get();  // the current domain's (DispatchDomain)
  // Asks SystemC for the update phase that sets event_, if one was asked for while a
  // dispatcher ran (an update request pending would stop the deltas run at once).
  void ask_update_after_dispatch();

  // sc_event::notify(delay) for a delay above zero: an earlier pending notification
  // stands, a later one is withdrawn for this one.
  void notify(TimedSink* sink, Pending& pending, const sc_core::sc_time& delay);
  // sc_event::cancel() of a timed notification.
  void cancel(Pending& pending);

  // The domain's one external source; external_moved() when its earliest got earlier.
  void attach(ExternalSource* source) { external_ = source; }
  void external_moved() { ask_update(); }

 private:
  friend class DispatchDomain;
  static constexpr std::uint32_t kNone = ~std::uint32_t{0};
  struct Entry {
    std::uint64_t at;    // sc_time value
    std::uint32_t slot;  // into slots_
  };
  struct Slot {
    std::uint64_t at;
    TimedSink* sink;  // null once withdrawn
    Pending* pending;
  };

  explicit TimedDispatch(DeltaDispatch& deltas);
  void run() override;
  void fire_due();  // the entries due now, as SystemC's time step takes them
  void ask_update();
  void update() override;  // sets event_ for the earliest live entry
  void insert(std::uint64_t at, std::uint32_t slot);
  Entry take_top();
  void release(std::uint32_t slot);
  bool live(const Entry& e) const { return slots_[e.slot].sink != nullptr; }
  std::uint64_t earliest_live() const;  // the heap unchanged; ~0 when none

  std::vector<Entry> heap_{Entry{0, kNone}};  // heap_[1] is the top
  std::vector<Slot> slots_;
  std::vector<std::uint32_t> free_slots_;
  std::vector<TimedSink*> due_;
  mutable std::vector<std::size_t> walk_;
  std::uint64_t earliest_ = ~std::uint64_t{0};   // the earliest live entry; ~0 when none
  bool earliest_stale_ = false;                  // an entry at earliest_ was withdrawn
  bool update_asked_ = false;
  bool update_deferred_ = false;  // asked while a dispatcher ran, not yet of SystemC
  std::uint64_t scheduled_ = ~std::uint64_t{0};  // when event_ fires; ~0 when it does not
  DeltaDispatch& deltas_;  // made with this one, before the simulation runs
  ExternalSource* external_ = nullptr;
};

// The two dispatchers of one SIP's modules. Each SIP's blocks take the domain current
// while the SIP is built, so no two SIPs share a queue: the order of a SIP's events of
// one instant, and with it every result, is the same whether it is simulated alone or
// with others in the same simulation. Blocks built outside any SIP use domain 0.
class DispatchDomain {
 public:
  static DispatchDomain& of(std::uint32_t index);  // made on first use, while the machine is built
  static DispatchDomain& current();
  DeltaDispatch& deltas() { return deltas_; }
  TimedDispatch& timed() { return timed_; }

  // Makes `domain` current for its life.
  class Scope {
   public:
    explicit Scope(DispatchDomain& domain);
    ~Scope();
    Scope(const Scope&) = delete;
    Scope& operator=(const Scope&) = delete;

   private:
    DispatchDomain* previous_;
  };

 private:
  DispatchDomain() : timed_(deltas_) {}
  DeltaDispatch deltas_;
  TimedDispatch timed_;
};

// A thread's timed wait through the dispatcher: `sleep` returns after `delay`.
// Made with the dispatcher of the domain it sleeps in (by default the current one, as
// while the machine is built).
class ThreadAlarm final : public TimedSink {
 public:
  explicit ThreadAlarm(TimedDispatch& timed = TimedDispatch::get()) : timed_(timed) {}
  ThreadAlarm(const ThreadAlarm&) = delete;
  ThreadAlarm& operator=(const ThreadAlarm&) = delete;
  ~ThreadAlarm() { cancel(); }
  void sleep(const sc_core::sc_time& delay);
  void cancel() {  // a sleeper that will not wake (its thread was reset)
    if (pending_.pending()) timed_.cancel(pending_);
  }
  void fire_timed() override { wake_.notify(); }

 private:
  TimedDispatch& timed_;
  TimedDispatch::Pending pending_;
  sc_core::sc_event wake_;
};

}  // namespace kb
