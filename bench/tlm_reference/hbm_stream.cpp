// A plain SystemC/TLM-2.0 model of kernbench's hbm_stream, written with Accellera's
// tlm_utils alone, as the yardstick of simulator speed (scripts/sim_speed.sh): the same
// traffic and the same simulated cycles, with nothing but the base protocol.
//
// Per PE: an initiator with `outstanding` bursts of `burst` bytes in flight (a new one
// goes out when a response comes back), a pass-through hop, and an HBM channel target
// that serialises `bandwidth` bytes a cycle and answers `latency` cycles after a burst
// has crossed its wire, through a peq_with_cb_and_phase.
//
// usage: tlm_reference_hbm_stream PES BYTES_PER_PE BURST OUTSTANDING BANDWIDTH LATENCY
//        (bytes, bytes per cycle, cycles: the machine's numbers, which scripts/sim_speed.sh
//        takes from the topology kernbench runs)
// prints: simulated cycles, bursts and the wall seconds of sc_start.
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include <systemc>
#include <tlm>
#include <tlm_utils/peq_with_cb_and_phase.h>
#include <tlm_utils/simple_initiator_socket.h>
#include <tlm_utils/simple_target_socket.h>

namespace {

using sc_core::sc_time;

// The unit of simulated time: one cycle (only cycles are compared, so its length is arbitrary).
const sc_time kCycle(1, sc_core::SC_NS);

// Payloads recycled through a free list, as any AT model's memory manager does.
class Pool : public tlm::tlm_mm_interface {
 public:
  tlm::tlm_generic_payload* get() {
    if (free_.empty()) {
      all_.push_back(std::make_unique<tlm::tlm_generic_payload>(this));
      return all_.back().get();
    }
    tlm::tlm_generic_payload* gp = free_.back();
    free_.pop_back();
    return gp;
  }
  void free(tlm::tlm_generic_payload* gp) override {
    gp->reset();
    free_.push_back(gp);
  }

 private:
  std::vector<std::unique_ptr<tlm::tlm_generic_payload>> all_;
  std::vector<tlm::tlm_generic_payload*> free_;
};

struct Initiator : sc_core::sc_module {
  tlm_utils::simple_initiator_socket<Initiator> socket;
  std::uint64_t address = 0, bytes = 0, issued = 0, burst = 0;
  unsigned outstanding = 0, in_flight = 0;
  std::uint64_t* bursts_done = nullptr;
  std::vector<unsigned char> buffer;
  Pool pool;

  Initiator(const sc_core::sc_module_name& n, std::uint64_t base, std::uint64_t total, std::uint64_t burst_bytes,
            unsigned window)
      : sc_core::sc_module(n), socket("socket"), address(base), bytes(total), burst(burst_bytes),
        outstanding(window), buffer(burst_bytes) {
    socket.register_nb_transport_bw(this, &Initiator::nb_transport_bw);
    SC_METHOD(start);
  }
  SC_HAS_PROCESS(Initiator);

  void start() { issue(); }

  void issue() {
    while (in_flight < outstanding && issued < bytes) {
      const std::uint64_t len = std::min(burst, bytes - issued);
      tlm::tlm_generic_payload* gp = pool.get();
      gp->acquire();
      gp->set_command(tlm::TLM_READ_COMMAND);
      gp->set_address(address + issued);
      gp->set_data_ptr(buffer.data());
      gp->set_data_length(static_cast<unsigned>(len));
      gp->set_streaming_width(static_cast<unsigned>(len));
      gp->set_response_status(tlm::TLM_INCOMPLETE_RESPONSE);
      issued += len;
      ++in_flight;
      tlm::tlm_phase phase = tlm::BEGIN_REQ;
      sc_time delay = sc_core::SC_ZERO_TIME;
      socket->nb_transport_fw(*gp, phase, delay);  // the target accepts at once (END_REQ)
    }
  }

  tlm::tlm_sync_enum nb_transport_bw(tlm::tlm_generic_payload& gp, tlm::tlm_phase& phase, sc_time&) {
    if (phase == tlm::BEGIN_RESP) {
      --in_flight;
      ++*bursts_done;
      gp.release();
      issue();
      phase = tlm::END_RESP;
      return tlm::TLM_COMPLETED;
    }
    return tlm::TLM_ACCEPTED;
  }
};

// The pass-through hop between a PE and its channel (kernbench's cube fabric).
struct Hop : sc_core::sc_module {
  tlm_utils::simple_target_socket<Hop> in;
  tlm_utils::simple_initiator_socket<Hop> out;

  explicit Hop(const sc_core::sc_module_name& n) : sc_core::sc_module(n), in("in"), out("out") {
    in.register_nb_transport_fw(this, &Hop::fw);
    out.register_nb_transport_bw(this, &Hop::bw);
  }
  tlm::tlm_sync_enum fw(tlm::tlm_generic_payload& gp, tlm::tlm_phase& phase, sc_time& delay) {
    return out->nb_transport_fw(gp, phase, delay);
  }
  tlm::tlm_sync_enum bw(tlm::tlm_generic_payload& gp, tlm::tlm_phase& phase, sc_time& delay) {
    return in->nb_transport_bw(gp, phase, delay);
  }
};

struct Channel : sc_core::sc_module {
  tlm_utils::simple_target_socket<Channel> socket;
  tlm_utils::peq_with_cb_and_phase<Channel> peq;
  std::uint64_t bandwidth;
  sc_time latency, wire_free = sc_core::SC_ZERO_TIME;

  Channel(const sc_core::sc_module_name& n, std::uint64_t bytes_per_cycle, std::uint64_t latency_cycles)
      : sc_core::sc_module(n), socket("socket"), peq(this, &Channel::respond), bandwidth(bytes_per_cycle),
        latency(kCycle * static_cast<double>(latency_cycles)) {
    socket.register_nb_transport_fw(this, &Channel::fw);
  }

  tlm::tlm_sync_enum fw(tlm::tlm_generic_payload& gp, tlm::tlm_phase& phase, sc_time& delay) {
    if (phase != tlm::BEGIN_REQ) return tlm::TLM_COMPLETED;  // END_RESP never comes: responses complete
    const sc_time now = sc_core::sc_time_stamp(), arrival = now + delay;
    const sc_time start = arrival > wire_free ? arrival : wire_free;
    wire_free = start + sc_time::from_value(kCycle.value() * ((gp.get_data_length() + bandwidth - 1) / bandwidth));
    gp.set_response_status(tlm::TLM_OK_RESPONSE);
    peq.notify(gp, tlm::BEGIN_RESP, wire_free + latency - now);
    phase = tlm::END_REQ;
    return tlm::TLM_UPDATED;
  }
  void respond(tlm::tlm_generic_payload& gp, const tlm::tlm_phase&) {
    tlm::tlm_phase phase = tlm::BEGIN_RESP;
    sc_time delay = sc_core::SC_ZERO_TIME;
    socket->nb_transport_bw(gp, phase, delay);
  }
};

std::uint64_t arg(char** argv, int i) {
  char* end = nullptr;
  const unsigned long long v = std::strtoull(argv[i], &end, 10);
  if (end == argv[i] || *end != '\0' || v == 0) {
    std::fprintf(stderr, "tlm_reference_hbm_stream: argument %d '%s' is not a whole number above 0\n", i, argv[i]);
    std::exit(2);
  }
  return v;
}

}  // namespace

int sc_main(int argc, char** argv) {
  if (argc != 7) {
    std::fprintf(stderr, "usage: tlm_reference_hbm_stream PES BYTES_PER_PE BURST OUTSTANDING BANDWIDTH LATENCY\n");
    return 2;
  }
  const std::uint64_t pes = arg(argv, 1), bytes = arg(argv, 2), burst = arg(argv, 3), window = arg(argv, 4),
                      bandwidth = arg(argv, 5), latency = arg(argv, 6);
  std::uint64_t bursts = 0;
  std::vector<std::unique_ptr<Initiator>> initiators;
  std::vector<std::unique_ptr<Hop>> hops;
  std::vector<std::unique_ptr<Channel>> channels;
  for (std::uint64_t p = 0; p < pes; ++p) {
    const std::string n = std::to_string(p);
    initiators.push_back(std::make_unique<Initiator>(("pe" + n).c_str(), 0, bytes, burst, static_cast<unsigned>(window)));
    hops.push_back(std::make_unique<Hop>(("hop" + n).c_str()));
    channels.push_back(std::make_unique<Channel>(("hbm" + n).c_str(), bandwidth, latency));
    initiators.back()->bursts_done = &bursts;
    initiators.back()->socket.bind(hops.back()->in);
    hops.back()->out.bind(channels.back()->socket);
  }
  const auto t0 = std::chrono::steady_clock::now();
  sc_core::sc_start();
  const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::printf("simulated_cycles %llu\nbursts %llu\nsimulation_seconds %.3f\n",
              static_cast<unsigned long long>(sc_core::sc_time_stamp() / kCycle + 0.5),
              static_cast<unsigned long long>(bursts), wall);
  return 0;
}
