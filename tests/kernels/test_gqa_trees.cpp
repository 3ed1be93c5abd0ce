// The reduce trees and the prefill ring on small meshes, against tables worked out by
// hand from their definitions (docs/gqa_decode.md, docs/gqa_prefill.md).
#include <gtest/gtest.h>

#include <map>

#include "kernels/gqa/helpers.h"

namespace kb::gqa {
namespace {

struct Node {
  std::vector<std::uint32_t> children;
  std::optional<std::uint32_t> parent;
};

void expect_tree(const std::map<std::uint32_t, Node>& table, TreeNode (*node)(std::uint32_t)) {
  for (const auto& [i, want] : table) {
    const TreeNode got = node(i);
    EXPECT_EQ(got.children, want.children) << "node " << i;
    EXPECT_EQ(got.parent, want.parent) << "node " << i;
  }
}

// Level 2: PE p sends to p - lowbit(p); a parent receives from p + 1, p + 2, p + 4, ...
TEST(ReduceTrees, BinomialTreeOverEightAndSixPes) {
  expect_tree({{0, {{1, 2, 4}, {}}},
               {1, {{}, 0}},
               {2, {{3}, 0}},
               {3, {{}, 2}},
               {4, {{5, 6}, 0}},
               {5, {{}, 4}},
               {6, {{7}, 4}},
               {7, {{}, 6}}},
              [](std::uint32_t p) { return binomial_node(p, 8); });
  expect_tree({{0, {{1, 2, 4}, {}}}, {4, {{5}, 0}}, {5, {{}, 4}}},
              [](std::uint32_t p) { return binomial_node(p, 6); });
  EXPECT_EQ(binomial_rounds(1), 0u);
  EXPECT_EQ(binomial_rounds(2), 1u);
  EXPECT_EQ(binomial_rounds(6), 3u);
  EXPECT_EQ(binomial_rounds(8), 3u);
}

// Level 1 on a 4x2 group (indices row-major, root (1, 0)): rows chain toward column 1,
// then column 1 toward row 0.
TEST(ReduceTrees, CenterRootTreeOnAFourByTwoGroup) {
  expect_tree({{0, {{}, 1}},
               {1, {{0, 2, 5}, {}}},
               {2, {{3}, 1}},
               {3, {{}, 2}},
               {4, {{}, 5}},
               {5, {{4, 6}, 1}},
               {6, {{7}, 5}},
               {7, {{}, 6}}},
              [](std::uint32_t i) { return center_node(i, 4, 2); });
  EXPECT_EQ(center_rounds(4, 2), 3u);  // 7 -> 6 -> 5 -> 1
  EXPECT_EQ(center_rounds(2, 1), 1u);
  EXPECT_EQ(center_rounds(4, 4), 4u);  // (3, 3) -> (2, 3) -> (1, 3) -> (1, 2) -> (1, 1)
  expect_tree({{0, {{1}, {}}}, {1, {{}, 0}}}, [](std::uint32_t i) { return center_node(i, 2, 1); });
}

// The column-first tree on the same group: columns toward row 0, then row 0 toward
// column 1; same root, same depth (7 -> 3 -> 2 -> 1).
TEST(ReduceTrees, ColumnFirstTreeOnAFourByTwoGroup) {
  expect_tree({{0, {{4}, 1}},
               {1, {{5, 0, 2}, {}}},
               {2, {{6, 3}, 1}},
               {3, {{7}, 2}},
               {4, {{}, 0}},
               {5, {{}, 1}},
               {6, {{}, 2}},
               {7, {{}, 3}}},
              [](std::uint32_t i) { return center_node_yx(i, 4, 2); });
}

// A Hamiltonian cycle of the group, every step (and the wrap) one mesh hop.
TEST(PrefillRing, HamiltonianOrderOnSmallGroups) {
  using Order = std::vector<std::uint32_t>;
  EXPECT_EQ(ring_order(1, 1), (Order{0}));
  EXPECT_EQ(ring_order(2, 1), (Order{0, 1}));
  EXPECT_EQ(ring_order(2, 2), (Order{0, 1, 3, 2}));
  EXPECT_EQ(ring_order(3, 2), (Order{0, 1, 2, 5, 4, 3}));
  EXPECT_EQ(ring_order(4, 2), (Order{0, 1, 2, 3, 7, 6, 5, 4}));
  EXPECT_EQ(ring_order(2, 4), (Order{0, 1, 3, 5, 7, 6, 4, 2}));
  EXPECT_EQ(ring_order(4, 4), (Order{0, 1, 2, 3, 7, 6, 5, 9, 10, 11, 15, 14, 13, 12, 8, 4}));
}

}  // namespace
}  // namespace kb::gqa
