#pragma once
// A TLM-2.0 base-protocol checker to put between any initiator and target socket. It
// passes every call through unchanged (nb_transport both ways, b_transport,
// transport_dbg, DMI) and records each rule the two sides break:
//  - phase order per transaction: BEGIN_REQ, then END_REQ and/or BEGIN_RESP, then
//    END_RESP (or an early TLM_COMPLETED), and only the phases each side may send;
//  - request exclusion (no BEGIN_REQ before the previous END_REQ or BEGIN_RESP) and
//    response exclusion (no BEGIN_RESP before the previous END_RESP) on the socket;
//  - return values allowed for each phase;
//  - response status: TLM_INCOMPLETE_RESPONSE when a request starts, set by the time
//    its response is given;
//  - the target leaves command, data pointer, length, byte enables and streaming width
//    as they were (an interconnect may change the address);
//  - nb_transport payloads have a memory manager; timing annotations never make a
//    transaction's phases go back in time.
#include <cstdint>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include <systemc>
#include <tlm>

namespace kb {

class ProtocolMonitor : public sc_core::sc_module,
                        public tlm::tlm_fw_transport_if<>,
                        public tlm::tlm_bw_transport_if<> {
 public:
  tlm::tlm_target_socket<> target;        // the initiator binds here
  tlm::tlm_initiator_socket<> initiator;  // and this binds to the target

  explicit ProtocolMonitor(const sc_core::sc_module_name& name);

  const std::vector<std::string>& violations() const { return violations_; }
  std::uint64_t transactions() const { return transactions_; }  // begun, nb and b
  std::size_t open_transactions() const { return open_.size(); }

  tlm::tlm_sync_enum nb_transport_fw(tlm::tlm_generic_payload& gp, tlm::tlm_phase& phase,
                                     sc_core::sc_time& delay) override;
  void b_transport(tlm::tlm_generic_payload& gp, sc_core::sc_time& delay) override;
  bool get_direct_mem_ptr(tlm::tlm_generic_payload& gp, tlm::tlm_dmi& dmi) override;
  unsigned int transport_dbg(tlm::tlm_generic_payload& gp) override;
  tlm::tlm_sync_enum nb_transport_bw(tlm::tlm_generic_payload& gp, tlm::tlm_phase& phase,
                                     sc_core::sc_time& delay) override;
  void invalidate_direct_mem_ptr(sc_dt::uint64 start, sc_dt::uint64 end) override;

 private:
  enum class State { Request, RequestEnded, Response };
  struct Attributes {
    tlm::tlm_command command;
    unsigned char* data;
    unsigned int length;
    unsigned char* byte_enable;
    unsigned int streaming_width;
    static Attributes of(const tlm::tlm_generic_payload& gp);
    bool operator==(const Attributes& o) const {
      return command == o.command && data == o.data && length == o.length && byte_enable == o.byte_enable &&
             streaming_width == o.streaming_width;
    }
    bool operator!=(const Attributes& o) const { return !(*this == o); }
  };
  struct Open {
    State state;
    Attributes attributes;
    sc_core::sc_time last;  // the time of the latest phase
  };

  void violation(const tlm::tlm_generic_payload& gp, const std::string& rule);
  // A phase at now + delay: not before the transaction's previous phase.
  void at(Open& t, const tlm::tlm_generic_payload& gp, const sc_core::sc_time& delay);
  void begin_response(tlm::tlm_generic_payload& gp, Open& t, const sc_core::sc_time& delay);
  void complete(tlm::tlm_generic_payload& gp);
  void check_response(const tlm::tlm_generic_payload& gp, const Attributes& before);

  std::unordered_map<const tlm::tlm_generic_payload*, Open> open_;
  const tlm::tlm_generic_payload* request_ = nullptr;   // BEGIN_REQ not yet ended
  const tlm::tlm_generic_payload* response_ = nullptr;  // BEGIN_RESP not yet ended
  std::vector<std::string> violations_;
  std::uint64_t transactions_ = 0;
};

// While it lives, puts a ProtocolMonitor on every binding made through connect() whose
// initiator or target socket lies under one of `prefixes` (module paths, e.g.
// "system.sip0.cube5"; none: every binding). Create it before elaborating the model.
class MonitorInterposer {
 public:
  explicit MonitorInterposer(std::vector<std::string> prefixes = {});
  ~MonitorInterposer();
  MonitorInterposer(const MonitorInterposer&) = delete;
  MonitorInterposer& operator=(const MonitorInterposer&) = delete;

  const std::vector<std::unique_ptr<ProtocolMonitor>>& monitors() const { return monitors_; }
  std::vector<std::string> violations() const;  // of all monitors
  std::uint64_t transactions() const;
  std::size_t open_transactions() const;

 private:
  std::vector<std::string> prefixes_;
  std::vector<std::unique_ptr<ProtocolMonitor>> monitors_;
};

}  // namespace kb
