// Name: text shared by many op-log records, held as a view of one stored copy (a string
// literal, or a string interned once), compared by its text.
#include <gtest/gtest.h>

#include <string>

#include "base/name.h"

namespace kb {
namespace {

TEST(Name, EqualTextInternedTwiceIsOneStoredCopy) {
  std::string text = "phase one";
  const Name a = Name::intern(text);
  text = "changed";  // the Name keeps its own copy, not a view of the caller's string
  const Name b = Name::intern(std::string("phase ") + "one");
  EXPECT_EQ(a.view().data(), b.view().data());
  EXPECT_EQ(a, "phase one");
  EXPECT_EQ(b.str(), "phase one");
}

TEST(Name, ALiteralAndAnInternedCopyCompareByText) {
  const Name literal = "math";
  const Name interned = Name::intern(std::string("ma") + "th");
  EXPECT_NE(literal.view().data(), interned.view().data());
  EXPECT_EQ(literal, interned);
  EXPECT_EQ(literal, std::string("math"));
  EXPECT_NE(literal, "gemm");
  EXPECT_TRUE(Name() == "");
  EXPECT_TRUE(Name().empty());
  EXPECT_LT(Name("dma"), Name("gemm"));
}

}  // namespace
}  // namespace kb
