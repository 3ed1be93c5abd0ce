// How a driver sees a job end and recovers: ERROR and CYCLES keep the last ended job's
// values while the next job runs; an injected fault fails its job (Fault), the jobs
// queued behind it end Halted and the doorbell is refused until a reset, after which
// jobs run again; a reset ends a running job (Reset) and the next job's O is right.
#include <gtest/gtest.h>

#include "tests/kernels/gqa_support.h"
#include "tests/vp/job_support.h"

namespace kb {
namespace {

using test::Host;
using test::MiB;
using test::Platform;
using test::prepare;
using test::read_job;
using test::shape_of;
using test::small_job;
using test::Submitted;
using test::write_job;
using vp::ErrorCode;

std::uint64_t read_cycles(Host& h) {
  return h.read(vp::reg::kCyclesLo) | (static_cast<std::uint64_t>(h.read(vp::reg::kCyclesHi)) << 32);
}

// Waits until the accelerator's STATUS reads `status`, a cycle at a time.
void wait_status(Host& h, std::uint32_t status) {
  while (h.read(vp::reg::kStatus) != status) sc_core::wait(1, sc_core::SC_NS);
}

TEST(VpRecovery, ErrorKeepsTheLastEndedJobsCodeWhileTheNextRuns) {
  // A descriptor that fails (bad magic) queued just before a good one: on the first
  // irq the good job already runs, and ERROR and CYCLES still say how the first ended.
  Platform p;
  const AddressMap& map = p.accel.address_map();
  Submitted good = prepare(p, small_job(vp::Kernel::GqaDecode), map.hbm(0, 1, 0), 3);
  const std::uint64_t bad_at = map.hbm(0, 1, 128);
  std::uint32_t status = 0, error = 0, completed = 0;
  std::uint64_t cycles = 0;
  vp::JobResult bad_result;
  p.host.program = [&](Host& h) {
    write_job(h, good);
    vp::JobDescriptor bad = good.d;
    std::array<std::uint8_t, 128> bytes = vp::encode(bad);
    bytes[0] ^= 1;  // not a descriptor's magic
    vp::TensorMap m;
    m.dtype = DType::fp32;
    m.rows = 1;
    m.row_elements = 32;
    m.chunks = {{bad_at, 0, 1}};
    std::vector<float> raw(32);
    std::memcpy(raw.data(), bytes.data(), 128);
    sc_core::sc_time delay = sc_core::SC_ZERO_TIME;
    vp::write_tensor(h.memory, m, raw, delay);
    sc_core::wait(delay);
    ASSERT_EQ(h.ring(bad_at), tlm::TLM_OK_RESPONSE);
    ASSERT_EQ(h.ring(good.address), tlm::TLM_OK_RESPONSE);
    sc_core::wait(p.irq.posedge_event());
    status = h.read(vp::reg::kStatus);
    error = h.read(vp::reg::kError);
    cycles = read_cycles(h);
    completed = h.read(vp::reg::kCompleted);
    delay = sc_core::SC_ZERO_TIME;
    bad_result = vp::read_result(h.memory, bad_at, delay);
    h.wait_completed(2, p.irq);
    read_job(h, good);
  };
  sc_core::sc_start();
  EXPECT_EQ(status, vp::reg::kRunning);  // the good job runs
  EXPECT_EQ(error, static_cast<std::uint32_t>(ErrorCode::Magic));
  EXPECT_EQ(completed, 1u);
  EXPECT_EQ(cycles, bad_result.cycles);
  EXPECT_GT(cycles, 0u);  // its descriptor was read
  EXPECT_EQ(good.result.status, vp::reg::kDone);
  test::expect_attention_parity(shape_of(good.d), good.in, good.o);
}

TEST(VpRecovery, AFaultHaltsTheQueueUntilAResetAndJobsRunAgain) {
  Platform p({"sip.job_queue=4"});
  const AddressMap& map = p.accel.address_map();
  Submitted faulting = prepare(p, small_job(vp::Kernel::GqaDecode, 4, MiB), map.hbm(0, 1, 0), 3);
  Submitted queued = prepare(p, small_job(vp::Kernel::GqaPrefill, 4, 8 * MiB), map.hbm(0, 1, 128), 4);
  Submitted after = prepare(p, small_job(vp::Kernel::GqaDecode, 4, 16 * MiB), map.hbm(0, 1, 256), 5);
  std::uint32_t fault_error = 0, halted_error = 0, resetting = 0, completed = 0;
  tlm::tlm_response_status refused = tlm::TLM_OK_RESPONSE, refused_resetting = tlm::TLM_OK_RESPONSE;
  std::string fault_message;
  p.host.program = [&](Host& h) {
    for (Submitted* j : {&faulting, &queued, &after}) write_job(h, *j);
    ASSERT_EQ(h.write(vp::reg::kInjectFault, vp::reg::kRing), tlm::TLM_OK_RESPONSE);
    ASSERT_EQ(h.ring(faulting.address), tlm::TLM_OK_RESPONSE);
    ASSERT_EQ(h.ring(queued.address), tlm::TLM_OK_RESPONSE);
    h.wait_completed(1, p.irq);
    fault_error = h.read(vp::reg::kError);
    fault_message = p.accel.error();
    h.wait_completed(2, p.irq);
    halted_error = h.read(vp::reg::kError);
    refused = h.ring(after.address);
    ASSERT_EQ(h.write(vp::reg::kReset, vp::reg::kRing), tlm::TLM_OK_RESPONSE);
    sc_core::wait(sc_core::SC_ZERO_TIME);
    resetting = h.read(vp::reg::kStatus);
    refused_resetting = h.ring(after.address);
    wait_status(h, vp::reg::kIdle);
    ASSERT_EQ(h.ring(after.address), tlm::TLM_OK_RESPONSE);
    h.wait_completed(3, p.irq);
    completed = h.read(vp::reg::kCompleted);
    for (Submitted* j : {&faulting, &queued, &after}) read_job(h, *j);
  };
  sc_core::sc_start();
  EXPECT_EQ(fault_error, static_cast<std::uint32_t>(ErrorCode::Fault));
  EXPECT_NE(fault_message.find("an injected fault on sip0.cube0.pe0"), std::string::npos) << fault_message;
  EXPECT_EQ(faulting.result.status, vp::reg::kFailed);
  EXPECT_EQ(faulting.result.error, ErrorCode::Fault);
  EXPECT_EQ(halted_error, static_cast<std::uint32_t>(ErrorCode::Halted));
  EXPECT_EQ(queued.result.error, ErrorCode::Halted);
  EXPECT_EQ(refused, tlm::TLM_COMMAND_ERROR_RESPONSE);
  EXPECT_EQ(resetting, vp::reg::kResetting);
  EXPECT_EQ(refused_resetting, tlm::TLM_COMMAND_ERROR_RESPONSE);
  EXPECT_EQ(completed, 3u);
  EXPECT_EQ(after.result.status, vp::reg::kDone) << p.accel.error();
  test::expect_attention_parity(shape_of(after.d), after.in, after.o);
}

TEST(VpRecovery, AResetEndsARunningJobAndTheNextRunsRight) {
  // A reset while a prefill runs: its PEs' programs stop where they stand (waiting for
  // messages, or in the middle of their tiles), what is in flight drains, and the job
  // ends with Reset; the next job's O matches the reference.
  Platform p;
  const AddressMap& map = p.accel.address_map();
  Submitted stopped = prepare(p, small_job(vp::Kernel::GqaPrefill, 4, MiB), map.hbm(0, 1, 0), 3);
  Submitted next = prepare(p, small_job(vp::Kernel::GqaDecode, 4, 8 * MiB), map.hbm(0, 1, 128), 4);
  std::uint32_t error = 0;
  p.host.program = [&](Host& h) {
    for (Submitted* j : {&stopped, &next}) write_job(h, *j);
    ASSERT_EQ(h.ring(stopped.address), tlm::TLM_OK_RESPONSE);
    sc_core::wait(400, sc_core::SC_NS);  // well into the job
    ASSERT_EQ(h.read(vp::reg::kStatus), vp::reg::kRunning);
    ASSERT_EQ(h.write(vp::reg::kReset, vp::reg::kRing), tlm::TLM_OK_RESPONSE);
    h.wait_completed(1, p.irq);
    error = h.read(vp::reg::kError);
    wait_status(h, vp::reg::kIdle);
    ASSERT_EQ(h.ring(next.address), tlm::TLM_OK_RESPONSE);
    h.wait_completed(2, p.irq);
    for (Submitted* j : {&stopped, &next}) read_job(h, *j);
  };
  sc_core::sc_start();
  EXPECT_EQ(error, static_cast<std::uint32_t>(ErrorCode::Reset));
  EXPECT_EQ(stopped.result.error, ErrorCode::Reset);
  EXPECT_EQ(next.result.status, vp::reg::kDone) << p.accel.error();
  test::expect_attention_parity(shape_of(next.d), next.in, next.o);
}

}  // namespace
}  // namespace kb
