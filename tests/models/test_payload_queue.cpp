// PayloadQueue against tlm_utils::peq_with_cb_and_phase: fed the same notifications (zero
// delays in even and odd deltas, equal and out-of-order times, callbacks that notify
// again), both call back the same payloads in the same order at the same instants and
// deltas.
#include <gtest/gtest.h>

#include <array>
#include <random>
#include <tuple>
#include <vector>

#include <tlm_utils/peq_with_cb_and_phase.h>

#include "models/common/payload_queue.h"

namespace kb {
namespace {

using Call = std::tuple<sc_core::sc_time, sc_dt::uint64, const tlm::tlm_generic_payload*, int>;

struct Twins : sc_core::sc_module {
  std::array<tlm::tlm_generic_payload, 64> payloads;
  std::vector<Call> ours, theirs;
  PayloadQueue<Twins> our_queue{this, &Twins::ours_called};
  tlm_utils::peq_with_cb_and_phase<Twins> their_queue{this, &Twins::theirs_called};
  std::mt19937 random{7};

  SC_CTOR(Twins) { SC_THREAD(drive); }

  void both(tlm::tlm_generic_payload& gp, const tlm::tlm_phase& phase, const sc_core::sc_time& delay) {
    our_queue.notify(gp, phase, delay);
    their_queue.notify(gp, phase, delay);
  }
  static sc_core::sc_time ns(int n) { return sc_core::sc_time(n, sc_core::SC_NS); }

  // A callback for a BEGIN_REQ entry notifies its payload again (END_REQ), at once or later.
  void called(std::vector<Call>& log, PayloadQueue<Twins>* ours_q, tlm_utils::peq_with_cb_and_phase<Twins>* theirs_q,
              tlm::tlm_generic_payload& gp, const tlm::tlm_phase& phase) {
    log.emplace_back(sc_core::sc_time_stamp(), sc_core::sc_delta_count(), &gp, static_cast<int>(phase));
    if (phase != tlm::BEGIN_REQ) return;
    const sc_core::sc_time again = (&gp - payloads.data()) % 3 == 0 ? sc_core::SC_ZERO_TIME : ns(1);
    if (ours_q) ours_q->notify(gp, tlm::END_REQ, again);
    if (theirs_q) theirs_q->notify(gp, tlm::END_REQ, again);
  }
  void ours_called(tlm::tlm_generic_payload& gp, const tlm::tlm_phase& phase) {
    called(ours, &our_queue, nullptr, gp, phase);
  }
  void theirs_called(tlm::tlm_generic_payload& gp, const tlm::tlm_phase& phase) {
    called(theirs, nullptr, &their_queue, gp, phase);
  }

  void drive() {
    std::uniform_int_distribution<int> delay(0, 6), pick(0, 63), step(0, 3);
    for (int round = 0; round < 400; ++round) {
      const tlm::tlm_phase phase = round % 2 ? tlm::BEGIN_REQ : tlm::BEGIN_RESP;
      both(payloads[static_cast<std::size_t>(pick(random))], phase, ns(delay(random)));
      switch (step(random)) {
        case 0: break;                               // several notifications in one delta
        case 1: wait(sc_core::SC_ZERO_TIME); break;  // the next delta, of the other parity
        default: wait(ns(delay(random) + 1));
      }
    }
  }
};

TEST(PayloadQueue, CallsBackAsPeqWithCbAndPhaseDoes) {
  Twins twins("twins");
  sc_core::sc_start();
  ASSERT_EQ(twins.ours.size(), 600u);  // 400 notifications and an END_REQ for each of the 200 BEGIN_REQs
  EXPECT_EQ(twins.ours, twins.theirs);
}

}  // namespace
}  // namespace kb
