// A minimal virtual platform: a host CPU (a plain TLM-2.0 initiator) and one AHBM
// accelerator. The host writes Q, K and V into the accelerator's HBM through its hbm
// socket, starts GQA decode through the control registers, waits for the interrupt and
// reads O back, then checks O against the fp64 reference.
//   vp_platform [TOPOLOGY.yaml]     default: the installed small_1sip_2x2x2.yaml
#include <cstdio>
#include <cstring>
#include <exception>
#include <vector>

#include <systemc>
#include <tlm>
#include <tlm_utils/simple_initiator_socket.h>

#include <kernbench/workloads/gqa_decode/decode_run.h>
#include <kernbench/vp/accelerator.h>
#include <kernbench/vp/decode_job.h>
#include <kernbench/vp/host_access.h>

namespace {

using kb::vp::reg::kControl;
using kb::vp::reg::kCyclesHi;
using kb::vp::reg::kCyclesLo;
using kb::vp::reg::kJob;
using kb::vp::reg::kStatus;

// Stands in for the platform's CPU: one socket to memory (here: the accelerator's
// HBM), one to the accelerator's registers, and an interrupt input.
struct HostCpu : sc_core::sc_module {
  tlm_utils::simple_initiator_socket<HostCpu> memory{"memory"};
  tlm_utils::simple_initiator_socket<HostCpu> registers{"registers"};
  sc_core::sc_in<bool> interrupt{"interrupt"};

  HostCpu(const sc_core::sc_module_name& name, const kb::vp::DecodeJob& job, const kb::gqa::AttentionInputs& inputs)
      : sc_core::sc_module(name), job_(job), inputs_(inputs) {
    SC_HAS_PROCESS(HostCpu);
    SC_THREAD(run);
  }

  std::vector<float> o;
  std::uint32_t status = 0;
  std::uint64_t cycles = 0;
  bool finished = false;

 private:
  std::uint32_t reg(tlm::tlm_command command, std::uint64_t offset, std::uint32_t value = 0) {
    tlm::tlm_generic_payload gp;
    gp.set_command(command);
    gp.set_address(offset);
    gp.set_data_ptr(reinterpret_cast<unsigned char*>(&value));
    gp.set_data_length(4);
    gp.set_streaming_width(4);
    gp.set_response_status(tlm::TLM_INCOMPLETE_RESPONSE);
    sc_core::sc_time delay = sc_core::SC_ZERO_TIME;
    registers->b_transport(gp, delay);
    if (!gp.is_response_ok()) SC_REPORT_ERROR(name(), gp.get_response_string().c_str());
    return value;
  }

  void run() {
    sc_core::sc_time delay = sc_core::SC_ZERO_TIME;
    kb::vp::write_tensor(memory, job_.q, inputs_.q.data, delay);
    kb::vp::write_tensor(memory, job_.k, inputs_.k.data, delay);
    kb::vp::write_tensor(memory, job_.v, inputs_.v.data, delay);
    sc_core::wait(delay);  // the writes' time, loosely timed
    reg(tlm::TLM_WRITE_COMMAND, kJob, job_.id);
    reg(tlm::TLM_WRITE_COMMAND, kControl, kb::vp::reg::kStart);
    sc_core::wait(interrupt.posedge_event());
    status = reg(tlm::TLM_READ_COMMAND, kStatus);
    cycles = reg(tlm::TLM_READ_COMMAND, kCyclesLo) | std::uint64_t{reg(tlm::TLM_READ_COMMAND, kCyclesHi)} << 32;
    delay = sc_core::SC_ZERO_TIME;
    o = kb::vp::read_tensor(memory, job_.o, delay);
    sc_core::wait(delay);
    finished = true;
  }

  const kb::vp::DecodeJob& job_;
  const kb::gqa::AttentionInputs& inputs_;
};

}  // namespace

int sc_main(int argc, char* argv[]) {
  try {
    const std::string topo_file = argc > 1 ? argv[1] : std::string(KERNBENCH_TOPOLOGIES) + "/small_1sip_2x2x2.yaml";
    const kb::Topology topo = kb::Topology::load(topo_file);

    kb::vp::Accelerator accel("accel", topo);
    kb::gqa::DecodeConfig decode;  // one KV head of 8 query heads, over 4 cubes x 2 PEs
    decode.h_q = 8;
    decode.h_kv = 1;
    decode.d = 64;
    decode.s = 2048;
    decode.cubes = 4;
    decode.pes = 2;
    const kb::vp::DecodeJob job = kb::vp::add_decode_job(accel, decode);
    const auto inputs = kb::gqa::AttentionInputs::random(decode, 1);

    HostCpu host("host", job, inputs);
    sc_core::sc_signal<bool> irq_line("irq_line");  // the platform's interrupt line
    host.memory.bind(accel.hbm);
    host.registers.bind(accel.control);
    accel.irq.bind(irq_line);
    host.interrupt.bind(irq_line);
    sc_core::sc_start();

    if (!host.finished || host.status != kb::vp::reg::kDone) {
      std::fprintf(stderr, "vp_platform: the decode job did not finish (status %u) %s\n", host.status,
                   accel.error().c_str());
      return 1;
    }
    kb::HostTensor o;
    o.shape = job.o.shape;
    o.data = host.o;
    // The tolerance of the kernbench suite: twice the naive bf16 computation's error.
    const kb::workloads::Numerics check = kb::gqa::check_attention(decode, inputs, o);
    std::printf("decode took %llu cycles of the PE clock; O max error %.3g vs the fp64 reference (tolerance %.3g): %s\n",
                static_cast<unsigned long long>(host.cycles), check.error, check.tolerance,
                check.pass ? "ok" : "MISMATCH");
    return check.pass ? 0 : 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "vp_platform: %s\n", e.what());
    return 1;
  }
}
