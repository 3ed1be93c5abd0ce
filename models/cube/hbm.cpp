#include "models/cube/hbm.h"
#include "models/common/clock.h"

#include "models/common/path_extension.h"
#include "models/common/payload_pool.h"
#include "models/common/sim_time.h"

namespace kb {

using sc_core::sc_time;

Hbm::Hbm(const sc_core::sc_module_name& name, const Topology& topo, std::uint64_t base)
    : sc_core::sc_module(name),
      socket("socket"),
      base_(base),
      wire_(std::string(this->name()) + ".wire",
            LinkParams{topo.cube.hbm.bytes_per_cycle, topo.cube.hbm.latency_cycles}, cycle_time(topo)),
      store_(topo.cube.hbm.capacity),
      responder_([this] { return socket.operator->(); },
                 [this](tlm::tlm_generic_payload& gp) { access(gp); }) {
  socket.register_nb_transport_fw(this, &Hbm::nb_transport_fw);
  socket.register_b_transport(this, &Hbm::b_transport);
  socket.register_transport_dbg(this, &Hbm::transport_dbg);
  socket.register_get_direct_mem_ptr(this, &Hbm::get_direct_mem_ptr);
}

bool Hbm::admit(tlm::tlm_generic_payload& gp) const {
  const std::uint64_t addr = gp.get_address();
  const std::uint64_t len = gp.get_data_length();
  if (addr < base_ || len > store_.capacity() || addr - base_ > store_.capacity() - len) {
    gp.set_response_status(tlm::TLM_ADDRESS_ERROR_RESPONSE);
    return false;
  }
  if (gp.get_byte_enable_ptr() != nullptr) {  // not modelled: refused explicitly
    gp.set_response_status(tlm::TLM_BYTE_ENABLE_ERROR_RESPONSE);
    return false;
  }
  if (gp.get_streaming_width() != 0 && gp.get_streaming_width() < len) {
    gp.set_response_status(tlm::TLM_BURST_ERROR_RESPONSE);
    return false;
  }
  return true;
}

void Hbm::access(tlm::tlm_generic_payload& gp) {
  const std::uint64_t offset = gp.get_address() - base_;
  const std::uint64_t len = gp.get_data_length();
  const bool move_data = gp.get_extension<TimingOnly>() == nullptr;
  if (gp.is_read()) {
    if (move_data) store_.read(offset, gp.get_data_ptr(), len);
    bytes_read_ += len;
  } else if (gp.is_write()) {
    if (move_data) store_.write(offset, gp.get_data_ptr(), len);
    bytes_written_ += len;
  }
  gp.set_response_status(tlm::TLM_OK_RESPONSE);
  gp.set_dmi_allowed(true);  // get_direct_mem_ptr grants every address of the channel
}

sc_time Hbm::schedule(const tlm::tlm_generic_payload& gp, sc_time arrival) {
  const std::uint64_t len = gp.is_read() || gp.is_write() ? gp.get_data_length() : 0;
  const sc_time start = reserve_path({&wire_}, arrival, len);
  if (meter_ != nullptr && len > 0)
    meter_->add(gp.is_read() ? Act::HbmRead : Act::HbmWrite, len, start);
  const sc_time done = start + wire_.serialisation(len) + wire_.latency();
  account_until(gp, done, Cause::Hbm);
  return done;
}

tlm::tlm_sync_enum Hbm::nb_transport_fw(tlm::tlm_generic_payload& gp, tlm::tlm_phase& phase,
                                        sc_time& delay) {
  return responder_.forward(name(), gp, phase, delay, [this](tlm::tlm_generic_payload& req, const sc_time& d) {
    if (!admit(req)) return false;
    if (req.has_mm()) req.acquire();
    const sc_time now = sim_time();
    const sc_time done = schedule(req, now + d);
    responder_.respond(req, done - now);
    return true;
  });
}

void Hbm::b_transport(tlm::tlm_generic_payload& gp, sc_time& delay) {
  if (!admit(gp)) return;
  const sc_time now = sim_time();
  const sc_time done = schedule(gp, now + delay);
  access(gp);
  delay = done - now;
}

unsigned int Hbm::transport_dbg(tlm::tlm_generic_payload& gp) {
  const std::uint64_t addr = gp.get_address();
  if (addr < base_ || addr - base_ >= store_.capacity()) return 0;
  const std::uint64_t offset = addr - base_;
  const std::uint64_t len = std::min<std::uint64_t>(gp.get_data_length(), store_.capacity() - offset);
  if (gp.is_read()) store_.read(offset, gp.get_data_ptr(), len);
  else if (gp.is_write()) store_.write(offset, gp.get_data_ptr(), len);
  return static_cast<unsigned int>(len);
}

bool Hbm::get_direct_mem_ptr(tlm::tlm_generic_payload& gp, tlm::tlm_dmi& dmi) {
  const std::uint64_t addr = gp.get_address();
  if (addr < base_ || addr - base_ >= store_.capacity()) return false;
  const MemoryStore::Page page = store_.page(addr - base_);
  dmi.set_dmi_ptr(page.data);
  dmi.set_start_address(base_ + page.offset);
  dmi.set_end_address(base_ + page.offset + page.bytes - 1);
  dmi.allow_read_write();
  dmi.set_read_latency(wire_.latency());
  dmi.set_write_latency(wire_.latency());
  return true;
}

}  // namespace kb
