// Every kernel error stops the run with a message naming the kernel, the PE, the op
// and the values.
#include <gtest/gtest.h>

#include <fstream>

#include "kernels/tl/sequence.h"
#include "tests/kernels/tl_support.h"

namespace kb {
namespace {

using test::Machine;

const PeCoord kPe{SipId(0), CubeId(2), PeId(1)};

// Runs a one-PE kernel and returns the error message it stops with.
template <class F>
std::string error_of(Machine& m, F body) {
  m.rt.launch(SipId(0), "bad_kernel", test::on_pe(kPe, body));
  try {
    m.rt.run();
  } catch (const tl::KernelError& e) {
    return e.what();
  } catch (const RunError& e) {
    return e.what();
  }
  ADD_FAILURE() << "the run did not fail";
  return {};
}

void expect_has(const std::string& msg, const std::string& part) {
  EXPECT_NE(msg.find(part), std::string::npos) << "message: " << msg << "\nexpected: " << part;
}

const char* kWho = "kernel 'bad_kernel' on sip0.cube2.pe1: ";

TEST(TlErrors, TcmOverflow) {
  Machine m("small_1sip_2x2x2", false);
  const std::string msg = error_of(m, [](tl::Ctx& tl) {
    tl.persistent({512, 256}, DType::fp32, "state");  // 512 KiB
    tl.persistent({512, 256}, DType::fp32, "more");   // 512 KiB more: the TCM is 1 MiB
    tl.full({1, 64}, 0.0f);
  });
  expect_has(msg, kWho + std::string("op 'alloc': TCM overflow: 'full' [1, 64] fp32 needs 256 B but only 0 B of "
                                     "1048576 B are free (persistent 1048576 B, scratch 0 B)"));
}

TEST(TlErrors, UseAfterScratchScope) {
  Machine m("small_1sip_2x2x2", false);
  const std::string msg = error_of(m, [](tl::Ctx& tl) {
    tl::Tensor kept;
    {
      const auto scope = tl.scratch_scope();
      kept = tl.full({8, 8}, 1.0f);
    }
    tl.exp(kept);
  });
  expect_has(msg, kWho + std::string("op 'exp': operand 'full' is used after its scratch scope ended"));
}

// A composite streaming a ref b [256, 64] in tiles of 32 rows through a stage of
// `stage_rows`, its first `preloaded` rows preloaded there: the error it stops with.
std::string stream_error(std::uint32_t stage_rows, std::uint32_t preloaded) {
  Machine m("small_1sip_2x2x2", false);
  const DeviceTensor b = m.rt.empty("b", {256, 64}, DType::bf16, DPPolicy::replicate(1, 2, 2));
  return error_of(m, [&](tl::Ctx& tl) {
    const tl::Tensor w = tl.ref(b, tl.shard_rows(b));
    const tl::Tensor stage = tl.empty({stage_rows, 64}, DType::bf16);
    if (preloaded) tl.preload(w, preloaded, stage);
    tl::CompositeOpts o;
    o.tile_rows = 32;
    o.stage = &stage;
    o.preloaded_rows = preloaded;
    tl.composite(tl.full({1, 256}, 1.0f), w, o);
  });
}

TEST(TlErrors, StageTooSmallForAStream) {
  const std::string msg = stream_error(32, 0);
  expect_has(msg, kWho);
  expect_has(msg, "stage is [32, 64] bf16; streaming b needs at least [64, 64] bf16");
}

TEST(TlErrors, PreloadedRowsNotWholeTiles) {
  const std::string msg = stream_error(256, 48);
  expect_has(msg, kWho);
  expect_has(msg, "preloaded_rows 48 of b's 256: a whole number of tiles of 32 rows (or all of b)");
}

TEST(TlErrors, ShapeMismatch) {
  Machine m("small_1sip_2x2x2", false);
  const std::string msg = error_of(m, [](tl::Ctx& tl) { tl.dot(tl.full({4, 8}, 1), tl.full({4, 8}, 1)); });
  expect_has(msg, kWho + std::string("op 'dot': shape mismatch: a [4, 8] x b [4, 8]: inner dimensions 8 and 4"));
}

TEST(TlErrors, BroadcastMismatch) {
  Machine m("small_1sip_2x2x2", false);
  const std::string msg = error_of(m, [](tl::Ctx& tl) { tl.add(tl.full({4, 8}, 1), tl.full({3, 8}, 1)); });
  expect_has(msg, kWho + std::string("op 'add': shape mismatch: [4, 8] and [3, 8]"));
}

TEST(TlErrors, DtypeMismatch) {
  Machine m("small_1sip_2x2x2", false);
  const DeviceTensor o = m.rt.empty("o", {4, 8}, DType::bf16, DPPolicy::replicate(1, 2, 2));
  const std::string msg = error_of(m, [&](tl::Ctx& tl) { tl.store(o, {0, 4}, tl.full({4, 8}, 1)); });
  expect_has(msg, kWho + std::string("op 'store': dtype mismatch: storing fp32 into bf16 tensor 'o' (cast it first)"));
}

TEST(TlErrors, RowsAcrossTwoShards) {
  Machine m("small_1sip_2x2x2", false);
  const DeviceTensor k = m.rt.empty("k", {100, 8}, DType::bf16, DPPolicy::shard2d(1, 2, 2));
  const std::string msg = error_of(m, [&](tl::Ctx& tl) { tl.load(k, {40, 20}); });  // shards [0,50), [50,100)
  expect_has(msg, kWho + std::string("op 'load': rows [40, 60) of 'k' [100, 8] do not lie within one shard (placed "
                                     "cubes 1 from cube 2 (row_wise) x pes 2 (row_wise))"));
}

TEST(TlErrors, TensorOnAnotherSip) {
  Machine m("tiny_2sip_4x1x1", false);
  const DeviceTensor k = m.rt.empty("k", {4, 8}, DType::bf16, DPPolicy::shard2d(1, 1, 0), SipId(1));
  m.rt.launch(SipId(0), "bad_kernel", [&](tl::Ctx& tl) {
    if (tl.cube().value == 0) tl.load(k, {0, 4});
  });
  try {
    m.rt.run();
    FAIL() << "accepted";
  } catch (const tl::KernelError& e) {
    expect_has(e.what(), "op 'load': 'k' lives on sip1; this PE is on sip0");
  }
}

TEST(TlErrors, SendToAPeThatDoesNotExist) {
  Machine m("small_1sip_2x2x2", false);
  const std::string msg = error_of(m, [](tl::Ctx& tl) {
    tl.send(PeCoord{SipId(0), CubeId(9), PeId(0)}, tl.full({1, 8}, 1), 1);
  });
  expect_has(msg, kWho + std::string("op 'send': send to a PE that does not exist: sip0.cube9.pe0 (this is "
                                     "sip0: cubes 0-3, PEs 0-1, of 1 SIP(s))"));
}

TEST(TlErrors, SendToAnotherSipNeedsLinks) {
  // The tiny machine without its links: another SIP is out of reach.
  std::ifstream in(test::source_path("topologies/tiny_2sip_4x1x1.yaml"));
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  text.erase(text.find("  links:"), text.find("sip:\n") - text.find("  links:"));
  Machine bare(Topology::parse(text, "no_links.yaml"), false);
  bare.rt.launch(SipId(0), "bad_kernel", test::on_pe(PeCoord{SipId(0), CubeId(0), PeId(0)}, [](tl::Ctx& tl) {
    tl.send(PeCoord{SipId(1), CubeId(0), PeId(0)}, tl.full({1, 8}, 1), 1);
  }));
  std::string msg;
  try {
    bare.rt.run();
  } catch (const tl::KernelError& e) {
    msg = e.what();
  }
  expect_has(msg, "op 'send': send to sip1.cube0.pe0, another SIP, but the topology has no links between SIPs");
}

TEST(TlErrors, DeadlockNamesTheBlockedPes) {
  Machine m("small_1sip_2x2x2", false);
  const std::string msg = error_of(m, [](tl::Ctx& tl) {
    tl.recv(PeCoord{SipId(0), CubeId(1), PeId(0)}, {1, 8}, DType::fp32, 9);  // nobody sends
  });
  // recv = post the receive (issue cost of recv) + wait for it (issue cost of wait).
  const std::uint64_t cycle = m.topo.pe.cpu.issue_cycles.at("recv") + m.topo.pe.cpu.issue_cycles.at("wait");
  expect_has(msg, "deadlock: the simulation of device 0 ran out of events at cycle " + std::to_string(cycle) +
                      " while 1 PE(s) still wait:");
  expect_has(msg, "kernel 'bad_kernel' on sip0.cube2.pe1 waits for a message from sip0.cube1.pe0 with tag 9");
}

TEST(TlErrors, ASequencesStateComesBeforeItsSteps) {
  Machine m("small_1sip_2x2x2", false);
  expect_has(error_of(m,
                      [](tl::Ctx& tl) {
                        const tl::Tensor a = tl.persistent({8, 64}, DType::fp32, "a");
                        tl::Sequence seq(tl, "tile");
                        seq.copy(a, a);
                        seq.state(a);
                      }),
             kWho + std::string("op 'tile': a sequence's state is declared before its steps"));
}

TEST(TlErrors, ASequencesStepsAreChecked) {
  Machine m("small_1sip_2x2x2", false);
  expect_has(error_of(m,
                      [](tl::Ctx& tl) {
                        const tl::Tensor a = tl.persistent({8, 64}, DType::fp32, "a");
                        const tl::Tensor b = tl.persistent({8, 32}, DType::fp32, "b");
                        tl::Sequence seq(tl, "tile");
                        seq.add(a, b, a);
                      }),
             kWho + std::string("op 'tile': shape mismatch in a add step: [8, 64] and [8, 32] into [8, 64]"));
}

TEST(TlErrors, AnEmptySequenceIsRefused) {
  Machine m("small_1sip_2x2x2", false);
  expect_has(error_of(m, [](tl::Ctx& tl) { tl::Sequence(tl, "tile").issue(); }),
             kWho + std::string("op 'tile': a sequence needs at least one step"));
}

TEST(TlErrors, HbmCapacityIsCheckedAtAllocation) {
  Machine m("small_1sip_2x2x2", false, {"cube.hbm.capacity=1MiB"});
  try {
    m.rt.empty("kv", {8192, 128}, DType::bf16, DPPolicy::shard2d(1, 1, 0));  // 2 MiB in one channel
    FAIL() << "allocation beyond capacity accepted";
  } catch (const RunError& e) {
    expect_has(e.what(), "HBM capacity exceeded: tensor 'kv' [8192, 128] bf16 placed cubes 1 from cube 0 "
                         "(row_wise) x pes 1 (row_wise) needs 2097152 B in the channel of sip0.cube0.pe0, which "
                         "has 1048576 B free of 1MiB");
  }
}

TEST(TlErrors, GroupThatDoesNotFitTheMesh) {
  Machine m("small_1sip_2x2x2", false);
  try {
    m.rt.empty("x", {8, 8}, DType::bf16, DPPolicy::shard2d(4, 2, 1));  // a 2x2 group from cube 1 of a 2x2 mesh
    FAIL() << "accepted";
  } catch (const RunError& e) {
    expect_has(e.what(), "a group of 4 cubes is a 2x2 rectangle; from cube 1 it does not fit the 2x2 mesh");
  }
}

}  // namespace
}  // namespace kb
