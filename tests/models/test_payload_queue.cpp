// PayloadQueue against tlm_utils::peq_with_cb_and_phase: fed the same notifications (zero
// delays in even and odd deltas, equal and out-of-order times, callbacks that notify
// again), both call back the same payloads in the same order at the same instants and
// deltas; and several queues that notify one another call back in the same order across
// queues as several peq_with_cb_and_phase do, though two dispatching processes run all
// their callbacks (the zero-delay ones and the timed ones) and run a delta in which
// nothing else would run inside the SystemC delta before it.
#include <gtest/gtest.h>

#include <array>
#include <memory>
#include <random>
#include <tuple>
#include <vector>

#include <tlm_utils/peq_with_cb_and_phase.h>

#include "models/common/payload_queue.h"
#include "models/common/dispatch.h"

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

// Eight lanes, each with one of ours and one of theirs. A callback logs itself and, for a
// BEGIN_REQ, notifies the next lane's queue of the same kind, at once or a cycle later, so
// that many queues are due in one delta and at one instant. Ours run first, to the end;
// then theirs, from an empty timed-event heap as ours started.
struct Lanes : sc_core::sc_module {
  struct Lane {
    Lane(Lanes* lanes, int i) : all(lanes), index(i) {}
    Lanes* all;
    int index;
    PayloadQueue<Lane> ours{this, &Lane::ours_called};
    tlm_utils::peq_with_cb_and_phase<Lane> theirs{this, &Lane::theirs_called};

    void ours_called(tlm::tlm_generic_payload& gp, const tlm::tlm_phase& phase) { all->called(false, index, gp, phase); }
    void theirs_called(tlm::tlm_generic_payload& gp, const tlm::tlm_phase& phase) { all->called(true, index, gp, phase); }
  };
  // (time and delta since the run began, lane, payload, phase)
  using Entry = std::tuple<sc_core::sc_time, sc_dt::uint64, int, int, int>;

  std::array<tlm::tlm_generic_payload, 32> payloads;
  std::vector<std::unique_ptr<Lane>> lanes;
  std::vector<Entry> log[2];
  sc_core::sc_event start_theirs;
  ThreadAlarm alarm;
  sc_core::sc_time began;
  sc_dt::uint64 began_delta = 0;

  SC_CTOR(Lanes) {
    for (int i = 0; i < 8; ++i) lanes.push_back(std::make_unique<Lane>(this, i));
    SC_THREAD(drive);
  }

  void notify(bool theirs, int lane, tlm::tlm_generic_payload& gp, const tlm::tlm_phase& phase,
              const sc_core::sc_time& delay) {
    Lane& l = *lanes[static_cast<std::size_t>(lane)];
    if (theirs) l.theirs.notify(gp, phase, delay);
    else l.ours.notify(gp, phase, delay);
  }
  // Ours count the deltas the dispatcher runs at once with SystemC's.
  static sc_dt::uint64 delta(bool theirs) {
    return theirs ? sc_core::sc_delta_count() : DeltaDispatch::get().delta();
  }
  void called(bool theirs, int lane, tlm::tlm_generic_payload& gp, const tlm::tlm_phase& phase) {
    const int payload = static_cast<int>(&gp - payloads.data());
    log[theirs].emplace_back(sc_core::sc_time_stamp() - began, delta(theirs) - began_delta, lane, payload,
                             static_cast<int>(phase));
    if (phase != tlm::BEGIN_REQ) return;
    const sc_core::sc_time again = payload % 3 == 0 ? sc_core::sc_time(1, sc_core::SC_NS) : sc_core::SC_ZERO_TIME;
    notify(theirs, (lane + 1) % 8, gp, tlm::END_REQ, again);
  }

  void run(bool theirs) {
    began = sc_core::sc_time_stamp();
    began_delta = delta(theirs);
    const sc_dt::uint64 began_systemc = sc_core::sc_delta_count();
    std::mt19937 random{11};
    std::uniform_int_distribution<int> delay(0, 3), pick(0, 31), lane(0, 7), step(0, 4);
    for (int round = 0; round < 600; ++round) {
      const tlm::tlm_phase phase = round % 2 ? tlm::BEGIN_REQ : tlm::BEGIN_RESP;
      const int d = delay(random);
      notify(theirs, lane(random), payloads[static_cast<std::size_t>(pick(random))], phase,
             d == 0 ? sc_core::SC_ZERO_TIME : sc_core::sc_time(d, sc_core::SC_NS));
      switch (step(random)) {
        case 0:
        case 1: break;
        case 2: wait(sc_core::SC_ZERO_TIME); break;
        default: {
          // Every timed wait of a kernbench simulation is the TimedDispatch's, as ours
          // must be; theirs are SystemC's own.
          const sc_core::sc_time t(delay(random) + 1, sc_core::SC_NS);
          if (theirs) wait(t);
          else alarm.sleep(t);
        }
      }
    }
    deltas[theirs] = delta(theirs) - began_delta;
    systemc_deltas[theirs] = sc_core::sc_delta_count() - began_systemc;
  }
  sc_dt::uint64 deltas[2] = {}, systemc_deltas[2] = {};  // over the notifying thread's run
  void drive() {
    run(false);
    wait(start_theirs);
    run(true);
  }
};

TEST(PayloadQueue, QueuesCallBackInTheOrderOfTheirOwnProcesses) {
  Lanes lanes("lanes");
  sc_core::sc_start();  // ours, to the last callback
  lanes.start_theirs.notify(sc_core::SC_ZERO_TIME);
  sc_core::sc_start();
  ASSERT_EQ(lanes.log[0].size(), 900u);  // 600 notifications and an END_REQ for each of the 300 BEGIN_REQs
  EXPECT_EQ(lanes.log[0], lanes.log[1]);
  // The same deltas, fewer of them SystemC's: the dispatcher ran the others at once.
  EXPECT_EQ(lanes.deltas[0], lanes.deltas[1]);
  EXPECT_EQ(lanes.systemc_deltas[1], lanes.deltas[1]);
  EXPECT_LT(lanes.systemc_deltas[0], lanes.deltas[0]);
}

}  // namespace
}  // namespace kb
