// .npy files: round trips through the runtime, and every malformed file refused with a
// message naming the file and the problem.
#include <gtest/gtest.h>

#include <fstream>

#include "base/npy.h"
#include "tests/kernels/tl_support.h"

namespace kb {
namespace {

std::string temp(const std::string& name) { return testing::TempDir() + "/" + name; }

std::string error_of(const std::string& path) {
  try {
    read_npy(path);
  } catch (const std::runtime_error& e) {
    return e.what();
  }
  return "accepted";
}

using test::write_raw_npy;

}  // namespace

TEST(Npy, RuntimeRoundTripThroughHbm) {
  test::Machine m;
  HostTensor h = test::random_host({24, 10}, 4);
  const std::string in = temp("in.npy"), out = temp("out.npy");
  write_npy(in, h);
  const DeviceTensor t = m.rt.from_npy(in, "t", DType::fp32, DPPolicy::shard2d(2, 2, 0));  // ragged 24 / 4 ranks
  m.rt.to_npy(t, out);
  const HostTensor back = read_npy(out);
  EXPECT_EQ(back.shape, h.shape);
  EXPECT_EQ(back.data, h.data);
}

TEST(Npy, MalformedFilesAreRefused) {
  EXPECT_EQ(error_of("/nonexistent/q.npy"), "/nonexistent/q.npy: cannot open .npy file");
  const std::string p = temp("bad.npy");
  std::ofstream(p, std::ios::binary) << "not numpy at all";
  EXPECT_EQ(error_of(p), p + ": not a .npy file (bad magic)");
  write_raw_npy(p, "{'descr': '<f8', 'fortran_order': False, 'shape': (2, 3), }", 48);
  EXPECT_EQ(error_of(p), p + ": dtype '<f8' is not supported; allowed: float32 ('<f4')");
  write_raw_npy(p, "{'descr': '<f4', 'fortran_order': True, 'shape': (2, 3), }", 24);
  EXPECT_EQ(error_of(p), p + ": Fortran-ordered arrays are not supported; save with C order");
  write_raw_npy(p, "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }", 20);  // truncated data
  EXPECT_EQ(error_of(p), p + ": data is 20 bytes, the shape [2, 3] needs 24");
}

TEST(Npy, HeaderIsReadStrictlyWithTheColumnOfTheProblem) {
  const std::string p = temp("header.npy");
  write_raw_npy(p, "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), 'extra': 1, }", 24);
  EXPECT_EQ(error_of(p), p + ": header, column 59: unknown key 'extra'; allowed: descr, fortran_order, shape");
  write_raw_npy(p, "{'descr': '<f4', 'fortran_order': False, }", 0);
  EXPECT_EQ(error_of(p), p + ": header, column 43: no 'shape'");
  write_raw_npy(p, "{'descr': '<f4', 'fortran_order': Maybe, 'shape': (2,), }", 8);
  EXPECT_EQ(error_of(p), p + ": header, column 35: expected True or False");
  write_raw_npy(p, "{'descr': '<f4', 'fortran_order': False, 'shape': (2, x), }", 8);
  EXPECT_EQ(error_of(p), p + ": header, column 55: expected a whole number in the shape");
  write_raw_npy(p, "{'descr': '<f4', 'fortran_order': False, 'shape': (1234567890123,), }", 8);
  EXPECT_EQ(error_of(p), p + ": header, column 64: shape entry too large");
  // A scalar (shape ()) holds one value; a 1-D shape is written (n,).
  write_raw_npy(p, "{'descr': '<f4', 'fortran_order': False, 'shape': (), }", 4);
  EXPECT_EQ(read_npy(p).data.size(), 1u);
  write_raw_npy(p, "{\"descr\": \"<f4\", \"fortran_order\": False, \"shape\": (3,)}", 12);
  EXPECT_EQ(read_npy(p).shape, Shape{3});
}

}  // namespace kb
