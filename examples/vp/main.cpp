// A minimal virtual platform: a host CPU (plain TLM-2.0 initiators) and one AHBM
// accelerator. The host's driver writes Q, K and V and three job descriptors (a GQA
// decode, a GQA prefill and a batched GQA decode) into the accelerator's HBM through its
// hbm socket, queues them through the control registers and waits for the interrupt;
// it then reads each O back and checks it against the fp64 reference. Meanwhile a second initiator (a NIC, say)
// streams its own buffers through the same hbm socket. Last, a descriptor with an
// unknown kernel shows how a bad job fails.
//   vp_platform [TOPOLOGY.yaml]     default: the installed small_1sip_2x2x2.yaml
#include <array>
#include <cstdio>
#include <exception>
#include <functional>
#include <memory>
#include <vector>

#include <systemc>
#include <tlm>
#include <tlm_utils/simple_initiator_socket.h>
#include <tlm_utils/simple_target_socket.h>

#include <kernbench/vp/accelerator.h>
#include <kernbench/vp/host_access.h>
#include <kernbench/workloads/attention/attention.h>
#include <kernbench/workloads/gqa_decode_batch/batch_run.h>

namespace {

namespace reg = kb::vp::reg;
constexpr std::uint64_t MiB = 1 << 20;

// One job as the driver sees it: the descriptor, where it lies, its tensors (as fp32
// host tensors), and how to check its O.
struct Job {
  const char* name;
  kb::vp::JobDescriptor descriptor;
  std::uint64_t address = 0;
  kb::vp::JobLayout layout;
  std::vector<float> q, k, v, o;
  std::function<kb::workloads::Numerics(const kb::HostTensor& o)> check;
  kb::vp::JobResult result;
};

// Stands in for the platform's CPU: one socket to memory (here: the accelerator's HBM),
// one to the accelerator's registers, and an interrupt input.
struct HostCpu : sc_core::sc_module {
  tlm_utils::simple_initiator_socket<HostCpu> memory{"memory"};
  tlm_utils::simple_initiator_socket<HostCpu> registers{"registers"};
  sc_core::sc_in<bool> interrupt{"interrupt"};

  HostCpu(const sc_core::sc_module_name& name, std::vector<Job>& jobs, std::uint64_t bad_at)
      : sc_core::sc_module(name), jobs_(jobs), bad_at_(bad_at) {
    SC_HAS_PROCESS(HostCpu);
    SC_THREAD(run);
  }

  std::uint32_t bad_error = 0;
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
  void ring(std::uint64_t descriptor) {
    reg(tlm::TLM_WRITE_COMMAND, reg::kDescLo, static_cast<std::uint32_t>(descriptor));
    reg(tlm::TLM_WRITE_COMMAND, reg::kDescHi, static_cast<std::uint32_t>(descriptor >> 32));
    reg(tlm::TLM_WRITE_COMMAND, reg::kDoorbell, reg::kRing);
  }
  void wait_completed(std::uint32_t jobs) {
    while (reg(tlm::TLM_READ_COMMAND, reg::kCompleted) < jobs) {
      if (!interrupt.read()) sc_core::wait(interrupt.posedge_event());
      reg(tlm::TLM_WRITE_COMMAND, reg::kIrqAck, reg::kRing);
      sc_core::wait(sc_core::SC_ZERO_TIME);
    }
  }

  void run() {
    sc_core::sc_time delay = sc_core::SC_ZERO_TIME;
    for (Job& j : jobs_) {
      kb::vp::write_tensor(memory, j.layout.q, j.q, delay);
      kb::vp::write_tensor(memory, j.layout.k, j.k, delay);
      kb::vp::write_tensor(memory, j.layout.v, j.v, delay);
      if (!j.descriptor.lens.empty()) kb::vp::write_lens(memory, j.descriptor.lens_at, j.descriptor.lens, delay);
      kb::vp::write_descriptor(memory, j.address, j.descriptor, delay);
    }
    sc_core::wait(delay);  // the writes' time, loosely timed
    for (const Job& j : jobs_) ring(j.address);
    wait_completed(static_cast<std::uint32_t>(jobs_.size()));
    delay = sc_core::SC_ZERO_TIME;
    for (Job& j : jobs_) {
      j.result = kb::vp::read_result(memory, j.address, delay);
      j.o = kb::vp::read_tensor(memory, j.layout.o, delay);
    }
    sc_core::wait(delay);
    // A descriptor the accelerator cannot run: kernel 9.
    kb::vp::JobDescriptor bad = jobs_.front().descriptor;
    std::array<std::uint8_t, kb::vp::desc::kBytes> bytes = kb::vp::encode(bad);
    bytes[kb::vp::desc::kKernelAt] = 9;
    tlm::tlm_generic_payload gp;
    gp.set_command(tlm::TLM_WRITE_COMMAND);
    gp.set_address(bad_at_);
    gp.set_data_ptr(bytes.data());
    gp.set_data_length(static_cast<unsigned>(bytes.size()));
    gp.set_streaming_width(static_cast<unsigned>(bytes.size()));
    gp.set_response_status(tlm::TLM_INCOMPLETE_RESPONSE);
    memory->b_transport(gp, delay);
    ring(bad_at_);
    wait_completed(static_cast<std::uint32_t>(jobs_.size()) + 1);
    bad_error = reg(tlm::TLM_READ_COMMAND, reg::kError);
    finished = true;
  }

  std::vector<Job>& jobs_;
  std::uint64_t bad_at_;
};

// Another bus master of the platform: it writes and reads back its own buffer in every
// HBM channel, over and over, while the jobs run.
struct Nic : sc_core::sc_module {
  tlm_utils::simple_initiator_socket<Nic> memory{"memory"};
  Nic(const sc_core::sc_module_name& name, std::vector<std::uint64_t> buffers, const bool& stop)
      : sc_core::sc_module(name), buffers_(std::move(buffers)), stop_(stop) {
    SC_HAS_PROCESS(Nic);
    SC_THREAD(run);
  }
  std::uint64_t transfers = 0, mismatches = 0;

 private:
  void run() {
    std::vector<unsigned char> out(512), back(512);
    for (std::uint32_t round = 0; !stop_; ++round)
      for (const std::uint64_t address : buffers_) {
        for (std::size_t i = 0; i < out.size(); ++i) out[i] = static_cast<unsigned char>(round + i);
        for (auto [command, data] : {std::pair{tlm::TLM_WRITE_COMMAND, out.data()}, std::pair{tlm::TLM_READ_COMMAND, back.data()}}) {
          tlm::tlm_generic_payload gp;
          gp.set_command(command);
          gp.set_address(address);
          gp.set_data_ptr(data);
          gp.set_data_length(static_cast<unsigned>(out.size()));
          gp.set_streaming_width(static_cast<unsigned>(out.size()));
          gp.set_response_status(tlm::TLM_INCOMPLETE_RESPONSE);
          sc_core::sc_time delay = sc_core::SC_ZERO_TIME;
          memory->b_transport(gp, delay);
          sc_core::wait(delay);
          ++transfers;
        }
        mismatches += out != back;
      }
  }
  std::vector<std::uint64_t> buffers_;
  const bool& stop_;
};

}  // namespace

int sc_main(int argc, char* argv[]) {
  try {
    const std::string topo_file = argc > 1 ? argv[1] : std::string(KERNBENCH_TOPOLOGIES) + "/small_1sip_2x2x2.yaml";
    const kb::Topology topo = kb::Topology::load(topo_file);
    kb::vp::Accelerator accel("accel", topo);
    const kb::AddressMap& map = accel.address_map();

    // One KV head of 8 query heads over the SIP's 4 cubes x 2 PEs: a decode at S = 2048,
    // a prefill of a 512-token prompt, and a batch of three decodes of different
    // lengths. Each tensor sits at its offset in every channel that holds a part of it
    // (README: tensor layout); each job's tensors 8 MiB apart from the last's.
    std::vector<Job> jobs(3);
    for (std::size_t i = 0; i < jobs.size(); ++i) {
      Job& j = jobs[i];
      kb::vp::JobDescriptor& d = j.descriptor;
      d.h_q = 8;
      d.h_kv = 1;
      d.d = 64;
      d.cubes = 4;
      d.pes = 2;
      const std::uint64_t base = (1 + 8 * i) * MiB;
      d.q = base;
      d.k = base + MiB;
      d.v = base + 2 * MiB;
      d.o = base + 3 * MiB;
      d.state = base + 4 * MiB;
      j.address = map.hbm(0, 0, 128 * i);
      kb::gqa::AttentionShape shape;
      shape.h_q = d.h_q;
      shape.h_kv = d.h_kv;
      shape.d = d.d;
      const auto seed = static_cast<std::uint32_t>(i + 1);
      if (i < 2) {
        const bool decode = i == 0;
        j.name = decode ? "decode" : "prefill";
        d.kernel = decode ? kb::vp::Kernel::GqaDecode : kb::vp::Kernel::GqaPrefill;
        d.s = shape.s = decode ? 2048 : 512;
        d.t_q = decode ? 1 : 0;  // prefill: 0 is the whole prompt
        shape.t_q = decode ? 1 : 512;
        auto in = std::make_shared<kb::gqa::AttentionInputs>(kb::gqa::AttentionInputs::random(shape, seed));
        j.q = in->q.data;
        j.k = in->k.data;
        j.v = in->v.data;
        j.check = [shape, in](const kb::HostTensor& o) { return kb::gqa::check_attention(shape, *in, o); };
      } else {
        j.name = "batched decode";
        d.kernel = kb::vp::Kernel::GqaDecodeBatch;
        d.t_q = 1;
        d.page_rows = 16;
        d.lens = {1000, 300, 2048};
        d.lens_at = map.hbm(0, 1, base + 5 * MiB);  // the length list, beside the tensors
        kb::gqa::BatchConfig c;
        static_cast<kb::gqa::AttentionShape&>(c) = shape;
        c.t_q = 1;
        c.lens = d.lens;
        c.s = 2048;
        c.page_rows = d.page_rows;
        c.cubes = d.cubes;
        c.pes = d.pes;
        auto in = std::make_shared<kb::gqa::BatchInputs>(kb::gqa::BatchInputs::random(c, seed));
        j.q = in->q.data;
        j.k = in->k.data;
        j.v = in->v.data;
        j.check = [c, in](const kb::HostTensor& o) { return kb::gqa::check_batch(c, *in, o); };
      }
      j.layout = accel.layout(d);  // what a layout-only job would write for software
    }

    HostCpu host("host", jobs, map.hbm(0, 0, 512));
    std::vector<std::uint64_t> nic_buffers;
    for (std::uint32_t cube = 0; cube < topo.cubes_per_sip(); ++cube)
      for (std::uint32_t pe = 0; pe < topo.cube.pes; ++pe) nic_buffers.push_back(map.hbm(cube, pe, 32 * MiB));
    Nic nic("nic", nic_buffers, host.finished);  // stops when the host is done
    // The hbm socket takes one initiator: the two masters share it through a small bus.
    struct Bus : sc_core::sc_module {
      tlm_utils::simple_target_socket_tagged<Bus> in[2];
      tlm_utils::simple_initiator_socket<Bus> out{"out"};
      explicit Bus(const sc_core::sc_module_name& n) : sc_core::sc_module(n) {
        for (int i = 0; i < 2; ++i) {
          in[i].register_b_transport(this, &Bus::b_transport, i);
          in[i].register_transport_dbg(this, &Bus::transport_dbg, i);
        }
      }
      void b_transport(int, tlm::tlm_generic_payload& gp, sc_core::sc_time& t) { out->b_transport(gp, t); }
      unsigned transport_dbg(int, tlm::tlm_generic_payload& gp) { return out->transport_dbg(gp); }
    } bus("bus");
    sc_core::sc_signal<bool> irq_line("irq_line");  // the platform's interrupt line
    host.memory.bind(bus.in[0]);
    nic.memory.bind(bus.in[1]);
    bus.out.bind(accel.hbm);
    host.registers.bind(accel.control);
    accel.irq.bind(irq_line);
    host.interrupt.bind(irq_line);
    sc_core::sc_start();

    if (!host.finished) {
      std::fprintf(stderr, "vp_platform: the jobs did not finish: %s\n", accel.error().c_str());
      return 1;
    }
    bool ok = nic.mismatches == 0;
    for (const Job& j : jobs) {
      kb::HostTensor o;
      o.shape = j.layout.o.shape;
      o.data = j.o;
      // The tolerance of the kernbench suite: twice the naive bf16 computation's error.
      const kb::workloads::Numerics check = j.check(o);
      ok = ok && j.result.status == reg::kDone && check.pass;
      // Each request's O within its tolerance (check_attention, check_batch).
      std::printf("%s job: status %u, %llu cycles of the PE clock; O vs the fp64 reference: %s (largest error %.3g)\n",
                  j.name, j.result.status, static_cast<unsigned long long>(j.result.cycles),
                  check.pass ? "ok" : "MISMATCH", check.error);
    }
    std::printf("nic: %llu transfers through the hbm socket during the jobs, %llu mismatches\n",
                static_cast<unsigned long long>(nic.transfers), static_cast<unsigned long long>(nic.mismatches));
    std::printf("bad descriptor (kernel 9): error code %u (%s)\n", host.bad_error,
                kb::vp::error_name(static_cast<kb::vp::ErrorCode>(host.bad_error)));
    ok = ok && nic.transfers > 0 && host.bad_error == static_cast<std::uint32_t>(kb::vp::ErrorCode::Kernel);
    std::printf("%s\n", ok ? "all checks: ok" : "all checks: FAILED");
    return ok ? 0 : 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "vp_platform: %s\n", e.what());
    return 1;
  }
}
