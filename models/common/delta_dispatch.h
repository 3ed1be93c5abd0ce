#pragma once
// One SystemC method process that runs every payload queue's zero-delay callbacks.
//
// Why: a deferral to the next delta through a queue's own event costs an event trigger
// and a process dispatch, and both touch objects (the event, the process) that nothing
// else in the transaction touches: cache misses, the largest single cost of a run.
//
// Why the order stays SystemC's: at the end of a delta SystemC triggers the delta events
// in the reverse order of their notification, and runs the methods they wake in that
// order before any thread. In a kernbench simulation the only methods woken in a delta
// are payload queues' (everything else that waits on a delta is a thread), so serving the
// queues from one method, last asked first, runs their callbacks in the order their own
// methods ran, and every thread still runs after them in its own order.
#include <vector>

#include <systemc>

namespace kb {

// What a queue does when its delta comes.
class DeltaSink {
 public:
  virtual void fire_delta() = 0;

 protected:
  ~DeltaSink() = default;
};

class DeltaDispatch {
 public:
  // The simulation's dispatcher, made on first use (its process is spawned then).
  static DeltaDispatch& get();

  // `sink` fires in the next delta; a sink asks at most once a delta.
  void add(DeltaSink* sink) {
    asked_.push_back(sink);
    event_.notify(sc_core::SC_ZERO_TIME);
  }

 private:
  DeltaDispatch();
  void run();

  sc_core::sc_event event_;
  std::vector<DeltaSink*> asked_;    // in this delta, for the next one
  std::vector<DeltaSink*> serving_;  // the sinks of this delta, while they fire
};

}  // namespace kb
