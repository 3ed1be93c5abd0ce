// Descriptor jobs from a platform's side: software writes a job descriptor and its
// tensors into HBM through the hbm socket, queues the descriptor through the register
// block, waits for irq and reads O back; O matches the fp64 reference, the result words
// and registers say how each job ended, and bad descriptors fail with their error code
// without starting anything or stopping the accelerator.
#include <gtest/gtest.h>

#include <cstring>
#include <fstream>
#include <map>
#include <set>

#include "base/dp_policy.h"
#include "kernels/gqa/helpers.h"
#include "tests/kernels/gqa_support.h"
#include "tests/sc_main/cli_support.h"
#include "tests/vp/job_support.h"
#include "tests/vp/vp_support.h"
#include "workloads/attention/placement.h"
#include "workloads/gqa_decode_batch/batch_run.h"

namespace kb {
namespace {

using test::Host;
using test::MiB;
using test::Platform;
using test::prepare;
using test::read_job;
using test::small_job;
using test::shape_of;
using test::Submitted;
using test::timed_access;
using test::write_job;
using vp::ErrorCode;
using vp::JobDescriptor;

// The whole SIP (C = 4) and a single CUBE (the same SIP with a 1 x 1 mesh, C = 1), for
// decode and prefill.
struct Case {
  vp::Kernel kernel;
  std::vector<std::string> sets;
  std::uint32_t cubes;
};
class VpJob : public ::testing::TestWithParam<Case> {};

TEST_P(VpJob, ADescriptorRunsTheKernelAndOMatchesTheReference) {
  Platform p(GetParam().sets);
  Submitted j = prepare(p, small_job(GetParam().kernel, GetParam().cubes), p.accel.address_map().hbm(0, 1, 0), 3);
  std::uint64_t cycles = 0, read_128 = 0, write_16 = 0;
  sc_core::sc_time started, ended;
  p.host.program = [&](Host& h) {
    write_job(h, j);
    started = sc_core::sc_time_stamp();
    ASSERT_EQ(h.ring(j.address), tlm::TLM_OK_RESPONSE);
    EXPECT_EQ(h.read(vp::reg::kQueued), 1u);
    sc_core::wait(sc_core::SC_ZERO_TIME);
    sc_core::wait(sc_core::SC_ZERO_TIME);
    EXPECT_EQ(h.read(vp::reg::kStatus), vp::reg::kRunning);
    EXPECT_EQ(h.read(vp::reg::kQueued), 0u);
    sc_core::wait(p.irq.posedge_event());
    ended = sc_core::sc_time_stamp();
    EXPECT_EQ(h.read(vp::reg::kStatus), vp::reg::kDone) << p.accel.error();
    EXPECT_EQ(h.read(vp::reg::kError), 0u);
    EXPECT_EQ(h.read(vp::reg::kCompleted), 1u);
    cycles = h.read(vp::reg::kCyclesLo) | (static_cast<std::uint64_t>(h.read(vp::reg::kCyclesHi)) << 32);
    read_job(h, j);
    // The controller's accesses, as the host makes them on the idle machine: the same
    // path (the SIP's host bridge, the cube fabric, the channel).
    read_128 = timed_access(h, p.topo, false, j.address, 128);
    write_16 = timed_access(h, p.topo, true, j.address + 4096, 16);
  };
  sc_core::sc_start();
  ASSERT_EQ(j.o.data.size(), j.in.q.data.size());
  test::expect_attention_parity(shape_of(j.d), j.in, j.o);
  // Doorbell to irq: the job's cycles (its descriptor read, then the kernel), then its
  // result words written.
  EXPECT_EQ(test::cycles(ended - started, p.topo), cycles + write_16);
  EXPECT_GT(read_128, 120u);  // an HBM access at least
  EXPECT_EQ(j.result.status, vp::reg::kDone);
  EXPECT_EQ(j.result.error, ErrorCode::None);
  EXPECT_EQ(j.result.cycles, cycles);
  EXPECT_TRUE(p.monitor.violations().empty()) << p.monitor.violations().front();
  const std::string json_path = ::testing::TempDir() + "vp_job_" + std::to_string(static_cast<int>(GetParam().kernel)) +
                                "_c" + std::to_string(GetParam().cubes) + ".json";
  // The same kernel on the same machine as the program runs it: the same cycles, since
  // where software put the tensors and the host's traffic before the job change nothing.
  std::string args = "run --kernel " + std::string(GetParam().kernel == vp::Kernel::GqaDecode ? "gqa_decode" : "gqa_prefill") +
                     " --topology " + test::source_path("topologies/small_1sip_2x2x2.yaml") +
                     " --heads-q 4 --heads-kv 1 --head-dim 32 --seq-len " + std::to_string(j.d.s) +
                     (j.d.t_q ? " --q-len " + std::to_string(j.d.t_q) : "") + " --cubes-per-group " +
                     std::to_string(j.d.cubes) + " --pes 2 --json " + json_path;
  for (const std::string& set : GetParam().sets) args += " --set " + set;
  const test::Result program = test::run(args);
  ASSERT_EQ(program.code, 0) << program.out;
  std::ifstream json(json_path);
  EXPECT_EQ(nlohmann::json::parse(json).at("simulated_cycles").get<std::uint64_t>() + read_128, cycles);
}

INSTANTIATE_TEST_SUITE_P(
    Kernels, VpJob,
    ::testing::Values(Case{vp::Kernel::GqaDecode, {}, 4}, Case{vp::Kernel::GqaDecode, {"sip.mesh.x=1", "sip.mesh.y=1"}, 1},
                      Case{vp::Kernel::GqaPrefill, {}, 4}, Case{vp::Kernel::GqaPrefill, {"sip.mesh.x=1", "sip.mesh.y=1"}, 1}));

// Batched decode: requests of different lengths in pages dealt over the group's ranks;
// the driver writes the length list beside the descriptor, and O of every request
// matches the reference. The same batch on a single CUBE.
class VpBatchJob : public ::testing::TestWithParam<Case> {};

TEST_P(VpBatchJob, ABatchedDecodeRunsFromItsDescriptor) {
  Platform p(GetParam().sets);
  const AddressMap& map = p.accel.address_map();
  JobDescriptor d = small_job(vp::Kernel::GqaDecodeBatch, GetParam().cubes);
  d.s = 0;
  d.t_q = 1;
  d.page_rows = 16;
  d.lens = {100, 37, 260};
  d.lens_at = map.hbm(0, 1, 40 * MiB);
  const std::uint64_t address = map.hbm(0, 1, 0);
  gqa::BatchConfig c;
  c.h_q = d.h_q;
  c.h_kv = d.h_kv;
  c.d = d.d;
  c.t_q = d.t_q;
  c.lens = d.lens;
  c.s = 260;
  c.page_rows = d.page_rows;
  c.cubes = d.cubes;
  c.pes = d.pes;
  const gqa::BatchInputs in = gqa::BatchInputs::random(c, 7);
  const vp::JobLayout l = p.accel.layout(d);
  HostTensor o;
  vp::JobResult result;
  p.host.program = [&](Host& h) {
    sc_core::sc_time delay = sc_core::SC_ZERO_TIME;
    vp::write_tensor(h.memory, l.q, in.q.data, delay);
    vp::write_tensor(h.memory, l.k, in.k.data, delay);
    vp::write_tensor(h.memory, l.v, in.v.data, delay);
    vp::write_lens(h.memory, d.lens_at, d.lens, delay);
    vp::write_descriptor(h.memory, address, d, delay);
    sc_core::wait(delay);
    ASSERT_EQ(h.ring(address), tlm::TLM_OK_RESPONSE);
    h.wait_completed(1, p.irq);
    result = vp::read_result(h.memory, address, delay);
    o.shape = l.o.shape;
    o.data = vp::read_tensor(h.memory, l.o, delay);
  };
  sc_core::sc_start();
  EXPECT_EQ(result.status, vp::reg::kDone) << p.accel.error();
  EXPECT_GT(result.cycles, 0u);
  ASSERT_EQ(o.data.size(), in.q.data.size());
  const workloads::Numerics check = gqa::check_batch(c, in, o);
  EXPECT_TRUE(check.pass) << "error " << check.error << ", tolerance " << check.tolerance;
  EXPECT_TRUE(p.monitor.violations().empty()) << p.monitor.violations().front();
}

INSTANTIATE_TEST_SUITE_P(SipAndCube, VpBatchJob,
                         ::testing::Values(Case{vp::Kernel::GqaDecodeBatch, {}, 4},
                                           Case{vp::Kernel::GqaDecodeBatch, {"sip.mesh.x=1", "sip.mesh.y=1"}, 1}));

// The queue: descriptors rung back to back wait their turn (up to sip.job_queue; one
// more is refused), run in order, and each one's O is right, while the host keeps
// writing and reading its own buffers in HBM.
TEST(VpJobs, QueuedJobsRunInOrderWhileTheHostUsesHbm) {
  Platform p({"sip.job_queue=2"});
  const AddressMap& map = p.accel.address_map();
  Submitted a = prepare(p, small_job(vp::Kernel::GqaDecode, 4, MiB), map.hbm(0, 0, 0), 4);
  Submitted b = prepare(p, small_job(vp::Kernel::GqaPrefill, 4, 8 * MiB), map.hbm(0, 0, 128), 5);
  Submitted c = prepare(p, small_job(vp::Kernel::GqaDecode, 4, 16 * MiB), map.hbm(0, 0, 256), 6);
  sc_core::sc_time rung;
  std::vector<sc_core::sc_time> starts, ends;  // each job's
  std::uint32_t host_checks = 0, host_mismatches = 0;
  bool jobs_done = false;
  p.host.program = [&](Host& h) {
    for (Submitted* j : {&a, &b, &c}) write_job(h, *j);
    rung = sc_core::sc_time_stamp();
    EXPECT_EQ(h.ring(a.address), tlm::TLM_OK_RESPONSE);
    EXPECT_EQ(h.ring(b.address), tlm::TLM_OK_RESPONSE);
    EXPECT_EQ(h.ring(c.address), tlm::TLM_COMMAND_ERROR_RESPONSE);  // the queue holds 2
    EXPECT_EQ(h.read(vp::reg::kQueued), 2u);
    while (h.read(vp::reg::kCompleted) < 1) sc_core::wait(p.irq.posedge_event());
    EXPECT_EQ(h.ring(c.address), tlm::TLM_OK_RESPONSE);  // room again
    h.wait_completed(3, p.irq);
    for (Submitted* j : {&a, &b, &c}) read_job(h, *j);
    jobs_done = true;
  };
  sc_core::sc_spawn([&] {
    for (;;) {
      sc_core::wait(p.accel.job_finished());
      ends.push_back(sc_core::sc_time_stamp());
    }
  });
  sc_core::sc_spawn([&] {
    for (;;) {
      sc_core::wait(p.accel.job_started());
      starts.push_back(sc_core::sc_time_stamp());
    }
  });
  // A second thread of the host: its own buffer in every channel, written and read back
  // while the jobs run.
  sc_core::sc_spawn([&] {
    for (std::uint32_t round = 0; !jobs_done && round < 200; ++round)
      for (std::uint32_t cube = 0; cube < 4; ++cube)
        for (std::uint32_t pe = 0; pe < 2; ++pe) {
          std::vector<float> out(64, static_cast<float>(round * 8 + cube * 2 + pe)), back;
          vp::TensorMap m;
          m.name = "host buffer";
          m.dtype = DType::fp32;
          m.rows = 1;
          m.row_elements = 64;
          m.chunks = {{map.hbm(cube, pe, 32 * MiB), 0, 1}};
          sc_core::sc_time delay = sc_core::SC_ZERO_TIME;
          vp::write_tensor(p.host.memory, m, out, delay);
          back = vp::read_tensor(p.host.memory, m, delay);
          sc_core::wait(delay);
          ++host_checks;
          host_mismatches += back != out;
        }
  });
  sc_core::sc_start();
  ASSERT_TRUE(jobs_done);
  // In order and back to back: the second job starts the moment the first ends (its
  // irq), which is its cycles after its start and its result words' write after that.
  ASSERT_EQ(ends.size(), 3u);
  ASSERT_EQ(starts.size(), 3u);
  EXPECT_EQ(starts[0], rung);
  EXPECT_EQ(starts[1], ends[0]);
  const std::array<const Submitted*, 3> jobs = {&a, &b, &c};
  for (std::size_t i = 0; i < 3; ++i) {
    EXPECT_GT(jobs[i]->result.cycles, 0u);
    EXPECT_GT(test::cycles(ends[i] - starts[i], p.topo), jobs[i]->result.cycles) << "job " << i;
  }
  for (Submitted* j : {&a, &b, &c}) {
    EXPECT_EQ(j->result.status, vp::reg::kDone) << p.accel.error();
    test::expect_attention_parity(shape_of(j->d), j->in, j->o);
  }
  EXPECT_GT(host_checks, 8u);
  EXPECT_EQ(host_mismatches, 0u);
  EXPECT_TRUE(p.monitor.violations().empty()) << p.monitor.violations().front();
}

// A bad descriptor: the job fails with its code and a message naming the field, nothing
// runs, the result words say so (when the descriptor is in HBM), and the next job runs.
struct Bad {
  std::string name;
  std::function<void(JobDescriptor&, std::uint64_t& address, std::array<std::uint8_t, 128>& bytes)> spoil;
  ErrorCode code;
  std::string message;  // a part of the error
};
void PrintTo(const Bad& b, std::ostream* os) { *os << b.name; }
class VpBadDescriptor : public ::testing::TestWithParam<Bad> {};

TEST_P(VpBadDescriptor, FailsWithItsCodeAndTheNextJobRuns) {
  Platform p;
  const AddressMap& map = p.accel.address_map();
  JobDescriptor d = small_job(vp::Kernel::GqaDecode);
  std::uint64_t address = map.hbm(1, 0, 0);
  std::array<std::uint8_t, 128> bytes{};
  GetParam().spoil(d, address, bytes);
  const bool raw = bytes != std::array<std::uint8_t, 128>{};
  if (!raw) bytes = vp::encode(d);
  JobDescriptor good = small_job(vp::Kernel::GqaDecode);
  good.layout_only = true;
  good.table = map.hbm(2, 0, 0);
  good.table_bytes = 4096;
  const std::uint64_t good_at = map.hbm(3, 0, 0);
  std::uint32_t status = 0, code = 0, completed = 0, after = 0;
  vp::JobResult written;
  std::string bad_error;
  p.host.program = [&](Host& h) {
    sc_core::sc_time delay = sc_core::SC_ZERO_TIME;
    if (map.decode(address, 128) && address % 4 == 0) {
      vp::TensorMap m;
      m.dtype = DType::fp32;
      m.rows = 1;
      m.row_elements = 32;
      m.chunks = {{address, 0, 1}};
      std::vector<float> values(32);
      std::memcpy(values.data(), bytes.data(), 128);
      vp::write_tensor(h.memory, m, values, delay);
    }
    vp::write_descriptor(h.memory, good_at, good, delay);
    sc_core::wait(delay);
    ASSERT_EQ(h.ring(address), tlm::TLM_OK_RESPONSE);
    h.wait_completed(1, p.irq);
    status = h.read(vp::reg::kStatus);
    code = h.read(vp::reg::kError);
    completed = h.read(vp::reg::kCompleted);
    bad_error = p.accel.error();
    delay = sc_core::SC_ZERO_TIME;
    if (map.decode(address, 128) && address % 64 == 0) written = vp::read_result(h.memory, address, delay);
    ASSERT_EQ(h.ring(good_at), tlm::TLM_OK_RESPONSE);
    h.wait_completed(2, p.irq);
    after = h.read(vp::reg::kStatus);
  };
  sc_core::sc_start();
  EXPECT_EQ(status, vp::reg::kFailed);
  EXPECT_EQ(code, static_cast<std::uint32_t>(GetParam().code)) << p.accel.error();
  EXPECT_NE(bad_error.find(GetParam().message), std::string::npos) << bad_error;
  EXPECT_EQ(completed, 1u);
  EXPECT_EQ(after, vp::reg::kDone);
  if (map.decode(address, 128) && address % 64 == 0) {
    EXPECT_EQ(written.status, vp::reg::kFailed);
    EXPECT_EQ(written.error, GetParam().code);
  }
  // Nothing ran: no GEMM engine worked for the bad job (nor for the layout-only one).
  sc_core::sc_time busy = sc_core::SC_ZERO_TIME;
  p.accel.system().for_each_pe([&](Pe& pe) { busy += pe.gemm.busy(); });
  EXPECT_EQ(busy, sc_core::SC_ZERO_TIME);
}

std::uint64_t capacity() { return test::topology("small_1sip_2x2x2").cube.hbm.capacity; }

INSTANTIATE_TEST_SUITE_P(
    Codes, VpBadDescriptor,
    ::testing::Values(
        Bad{"UnknownKernel", [](JobDescriptor& d, auto&, auto& b) { b = vp::encode(d); b[6] = 9; }, ErrorCode::Kernel,
            "kernel 9 does not exist"},
        Bad{"Magic", [](JobDescriptor& d, auto&, auto& b) { b = vp::encode(d); b[0] ^= 1; }, ErrorCode::Magic,
            "is not a job descriptor's"},
        Bad{"Version", [](JobDescriptor& d, auto&, auto& b) { b = vp::encode(d); b[4] = 2; }, ErrorCode::Version,
            "version 2"},
        Bad{"Dtype", [](JobDescriptor& d, auto&, auto& b) { b = vp::encode(d); b[8] = 7; }, ErrorCode::Dtype, "dtype 7"},
        Bad{"UnknownFlag", [](JobDescriptor& d, auto&, auto& b) { b = vp::encode(d); b[10] = 4; }, ErrorCode::Reserved,
            "flags 0x4"},
        Bad{"MisalignedDescriptor", [](JobDescriptor&, std::uint64_t& a, auto&) { a += 32; },
            ErrorCode::DescriptorAddress, "not 64-byte aligned"},
        Bad{"DescriptorOutsideHbm", [](JobDescriptor&, std::uint64_t& a, auto&) { a = std::uint64_t{1} << 60; },
            ErrorCode::DescriptorAddress, "0x1000000000000000"},
        Bad{"DescriptorAcrossAChannelEnd", [](JobDescriptor&, std::uint64_t& a, auto&) { a += capacity() - 64; },
            ErrorCode::DescriptorAddress, "inside one HBM channel"},
        Bad{"MisalignedTensor", [](JobDescriptor& d, auto&, auto&) { d.k += 64; }, ErrorCode::TensorAlign,
            "tensor k at offset 0x200040"},
        Bad{"TensorPastTheChannelEnd", [](JobDescriptor& d, auto&, auto&) { d.v = capacity() - 256; },
            ErrorCode::TensorRange, "HBM capacity exceeded: tensor 'v.h0'"},
        Bad{"TensorOutsideTheChannel", [](JobDescriptor& d, auto&, auto&) { d.o = capacity(); },
            ErrorCode::TensorRange, "tensor o at offset 0x40000000 is outside its channels"},
        Bad{"TensorsOverlap", [](JobDescriptor& d, auto&, auto&) { d.o = d.q; }, ErrorCode::Overlap,
            "q [0x100000, 0x100200) and o [0x100000, 0x100100) share bytes in the channel of sip0.cube0.pe0"},
        Bad{"TensorOverTheDescriptor", [](JobDescriptor& d, auto&, auto&) { d.k = 0; }, ErrorCode::Overlap,
            "the descriptor [0x0, 0x80) and k [0x0"},
        Bad{"HeadsNotAMultiple", [](JobDescriptor& d, auto&, auto&) { d.h_kv = 3; }, ErrorCode::Shape, "heads_q 4 is not a multiple of heads_kv 3"},
        Bad{"TooManyPes", [](JobDescriptor& d, auto&, auto&) { d.pes = 9; }, ErrorCode::Shape,
            "pes 9 is not allowed; a cube of this topology has 2 PEs"},
        Bad{"GroupOfThreeCubes", [](JobDescriptor& d, auto&, auto&) { d.cubes = 3; }, ErrorCode::Shape, "cubes_per_group 3 is a 3x1 group, which does not tile the 2x2 cube mesh"},
        Bad{"ContextTooLongForHbm", [](JobDescriptor& d, auto&, auto&) { d.s = std::uint64_t{1} << 30; },
            ErrorCode::TensorRange, "HBM capacity exceeded: tensor 'k.h0'"},
        Bad{"PagesOnADecode", [](JobDescriptor& d, auto&, auto&) { d.page_rows = 16; }, ErrorCode::Reserved,
            "page_rows and lens are for batched decode"},
        Bad{"BatchWithAnS", [](JobDescriptor& d, auto&, auto&) {
              d.kernel = vp::Kernel::GqaDecodeBatch;
              d.page_rows = 16;
              d.lens_at = 8 * MiB;
            },
            ErrorCode::Reserved, "s is 0 for batched decode"},
        Bad{"LensMisaligned", [](JobDescriptor& d, auto&, auto&) {
              d.kernel = vp::Kernel::GqaDecodeBatch;
              d.s = 0;
              d.page_rows = 16;
              d.lens_at = 8 * MiB + 4;
            },
            ErrorCode::LensAddress, "the length list at 0x800004 is not 8-byte aligned"},
        Bad{"LensEmpty", [](JobDescriptor& d, auto&, auto&) {
              d.kernel = vp::Kernel::GqaDecodeBatch;
              d.s = 0;
              d.page_rows = 16;
              d.lens_at = 8 * MiB;  // fresh HBM: a count of 0
            },
            ErrorCode::Shape, "the length list holds 0 requests; a batch has 1 to 65536"},
        Bad{"HeadDimOutOfRange", [](JobDescriptor& d, auto&, auto&) { d.d = 1 << 16; }, ErrorCode::Shape,
            "head_dim 65536 is not supported; allowed: 1 to 512"},
        Bad{"TableMisaligned", [](JobDescriptor& d, auto&, auto&) {
              d.layout_only = true;
              d.table = 12;
              d.table_bytes = 4096;
            },
            ErrorCode::TableAddress, "layout table at 0xc"},
        Bad{"TableTooSmall", [](JobDescriptor& d, auto&, auto&) {
              d.layout_only = true;
              d.table = 8 * MiB;
              d.table_bytes = 64;
            },
            ErrorCode::TableRoom, "the layout table needs"}),
    [](const ::testing::TestParamInfo<Bad>& bad) { return bad.param.name; });

// A layout-only job writes the layout table into HBM and runs nothing; the table holds
// the helper's chunks (for decode and for prefill, whose Q rows are in tile order).
TEST(VpJobs, ALayoutOnlyJobWritesTheTableTheHelperGives) {
  Platform p;
  const AddressMap& map = p.accel.address_map();
  std::vector<JobDescriptor> ds = {small_job(vp::Kernel::GqaDecode), small_job(vp::Kernel::GqaPrefill)};
  std::vector<std::vector<std::uint8_t>> tables(ds.size());
  std::vector<vp::JobResult> results(ds.size());
  for (std::size_t i = 0; i < ds.size(); ++i) {
    ds[i].layout_only = true;
    ds[i].table = 16 * MiB + i * MiB;
    ds[i].table_bytes = MiB;
  }
  p.host.program = [&](Host& h) {
    sc_core::sc_time delay = sc_core::SC_ZERO_TIME;
    for (std::size_t i = 0; i < ds.size(); ++i) vp::write_descriptor(h.memory, map.hbm(0, 0, 128 * i), ds[i], delay);
    sc_core::wait(delay);
    for (std::size_t i = 0; i < ds.size(); ++i) ASSERT_EQ(h.ring(map.hbm(0, 0, 128 * i)), tlm::TLM_OK_RESPONSE);
    h.wait_completed(2, p.irq);
    for (std::size_t i = 0; i < ds.size(); ++i) {
      results[i] = vp::read_result(h.memory, map.hbm(0, 0, 128 * i), delay);
      vp::TensorMap m;  // the table's bytes, read as raw words
      m.dtype = DType::fp32;
      m.row_elements = 1;
      m.rows = vp::layout_table(p.accel.layout(ds[i])).size() / 4;
      m.chunks = {{map.hbm(0, 0, ds[i].table), 0, m.rows}};
      const std::vector<float> words = vp::read_tensor(h.memory, m, delay);
      tables[i].resize(words.size() * 4);
      std::memcpy(tables[i].data(), words.data(), tables[i].size());
    }
  };
  sc_core::sc_start();
  for (std::size_t i = 0; i < ds.size(); ++i) {
    EXPECT_EQ(results[i].status, vp::reg::kDone) << p.accel.error();
    const vp::JobLayout l = p.accel.layout(ds[i]);
    EXPECT_EQ(tables[i], vp::layout_table(l));
    std::uint32_t entries = 0;
    std::memcpy(&entries, tables[i].data(), 4);
    EXPECT_EQ(entries, l.q.chunks.size() + l.k.chunks.size() + l.v.chunks.size() + l.o.chunks.size() +
                           l.state.chunks.size());
    EXPECT_GT(entries, 0u);
  }
  sc_core::sc_time busy = sc_core::SC_ZERO_TIME;
  p.accel.system().for_each_pe([&](Pe& pe) { busy += pe.gemm.busy(); });
  EXPECT_EQ(busy, sc_core::SC_ZERO_TIME);
}

// Decode's layout is the documented rule (examples/vp/README.md), worked out here on
// its own: KV head h on group h; Q replicated on every PE of the group; K and V rank r =
// cube_in_group * P + pe holding rows [r*B, min((r+1)*B, S)), B = ceil(S / (C*P)); O
// over the root cube's P PEs the same way; each at its offset, row after row.
TEST(VpJobs, DecodeLayoutIsTheDocumentedRule) {
  Platform p({"sip.mesh.x=4", "sip.mesh.y=2"});
  const AddressMap& map = p.accel.address_map();
  JobDescriptor d = small_job(vp::Kernel::GqaDecode, 2);
  d.h_q = 12;
  d.h_kv = 3;  // three groups of 2 cubes (2x1) on the 4x2 mesh: starts 0, 2, 4
  const vp::JobLayout l = p.accel.layout(d);
  const std::uint64_t row = d.d * 2, m_rows = d.h_q / d.h_kv * d.t_q, ranks = d.cubes * d.pes;
  std::map<std::uint64_t, std::uint64_t> q, k, o;  // host row -> address (first copy)
  std::multiset<std::pair<std::uint64_t, std::uint64_t>> q_all, want_q_all;
  auto expand = [&](const vp::TensorMap& m, std::map<std::uint64_t, std::uint64_t>& out, bool all) {
    for (const vp::Chunk& c : m.chunks)
      for (std::uint64_t r = 0; r < c.rows; ++r) {
        out.try_emplace(c.first_row + r, c.address + r * row);
        if (all) q_all.insert({c.first_row + r, c.address + r * row});
      }
  };
  expand(l.q, q, true);
  expand(l.k, k, false);
  expand(l.o, o, false);
  for (std::uint64_t h = 0; h < d.h_kv; ++h) {
    const std::uint32_t start = static_cast<std::uint32_t>(h * 2);  // groups 2x1, row by row
    const std::uint32_t cubes[2] = {start, start + 1};
    const std::uint32_t w = 2, ht = 1;  // the group's rectangle
    const std::uint32_t root = cubes[((ht - 1) / 2) * w + (w - 1) / 2];
    for (std::uint64_t r = 0; r < m_rows; ++r)
      for (const std::uint32_t cube : cubes)
        for (std::uint32_t pe = 0; pe < d.pes; ++pe) want_q_all.insert({h * m_rows + r, map.hbm(cube, pe, d.q + r * row)});
    const std::uint64_t b = (d.s + ranks - 1) / ranks;
    for (std::uint64_t r = 0; r < d.s; ++r) {
      const std::uint64_t rank = r / b, cube = cubes[rank / d.pes], pe = rank % d.pes;
      EXPECT_EQ(k.at(h * d.s + r), map.hbm(cube, pe, d.k + (r - rank * b) * row)) << "k row " << r << " of head " << h;
    }
    const std::uint64_t bo = (m_rows + d.pes - 1) / d.pes;
    for (std::uint64_t r = 0; r < m_rows; ++r)
      EXPECT_EQ(o.at(h * m_rows + r), map.hbm(root, r / bo, d.o + (r % bo) * row)) << "o row " << r;
  }
  EXPECT_EQ(q_all, want_q_all);
  EXPECT_EQ(k.size(), d.h_kv * d.s);
}

// The C++ helper fails as the job would, in the library's words.
TEST(VpJobs, TheLayoutHelperRefusesWhatTheJobWould) {
  Platform p;
  JobDescriptor d = small_job(vp::Kernel::GqaDecode);
  d.pes = 9;
  try {
    p.accel.layout(d);
    FAIL() << "accepted";
  } catch (const vp::JobError& e) {
    EXPECT_EQ(e.code(), ErrorCode::Shape);
    EXPECT_STREQ(e.what(), "pes 9 is not allowed; a cube of this topology has 2 PEs");
  }
}

}  // namespace
}  // namespace kb
