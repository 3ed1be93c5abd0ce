#pragma once
// The base protocol's response exclusion on one target socket: one response in flight
// until its END_RESP, and the next BEGIN_RESP no earlier than the time that END_RESP was
// annotated for (an initiator may end a response with a delay, on the forward path or
// on the return of BEGIN_RESP). The owner sends BEGIN_RESP when offer() says Now, or
// after the time it gives for Later (the gate is held for that response meanwhile).
#include <deque>

#include <systemc>
#include <tlm>

#include "models/common/sim_time.h"

namespace kb {

class ResponseGate {
 public:
  enum class Turn { Now, Queued, Later };

  // A response is ready to begin: Now (the gate is taken), Queued (it waits its turn
  // and end() hands it back) or Later (the gate is taken for it; begin after `later`).
  Turn offer(tlm::tlm_generic_payload& gp, sc_core::sc_time& later) {
    if (busy_) {
      waiting_.push_back(&gp);
      return Turn::Queued;
    }
    busy_ = true;
    const sc_core::sc_time now = sim_time();
    if (now >= free_at_) return Turn::Now;
    later = free_at_ - now;
    return Turn::Later;
  }

  // The response in flight ended, its END_RESP `delay` after now. Returns the next
  // response in line, to offer again (nullptr if none waits).
  tlm::tlm_generic_payload* end(const sc_core::sc_time& delay) {
    busy_ = false;
    free_at_ = sim_time() + delay;
    if (waiting_.empty()) return nullptr;
    tlm::tlm_generic_payload* next = waiting_.front();
    waiting_.pop_front();
    return next;
  }

 private:
  bool busy_ = false;
  sc_core::sc_time free_at_ = sc_core::SC_ZERO_TIME;
  std::deque<tlm::tlm_generic_payload*> waiting_;
};

}  // namespace kb
