// RecyclingMap: a map whose erased entries' nodes serve the next inserts, so a steady
// stream of entries that come and go allocates nothing.
#include <gtest/gtest.h>

#include <string>

#include "base/recycling_map.h"

namespace kb {
namespace {

TEST(RecyclingMap, AnErasedEntrysNodeHoldsTheNextInsertedEntry) {
  RecyclingMap<int, std::string> map;
  const std::string* first = &map.insert(1, "one");
  map.erase(1);
  EXPECT_TRUE(map.empty());
  const std::string* second = &map.insert(2, "two");
  EXPECT_EQ(second, first);  // the same node, not a new allocation
  EXPECT_EQ(map.at(2), "two");
  EXPECT_EQ(map.find(1), map.end());
}

TEST(RecyclingMap, BehavesAsAMapWhileEntriesComeAndGo) {
  RecyclingMap<int, int> map;
  for (int i = 0; i < 100; ++i) {
    map.insert(i, i * 10);
    if (i >= 3) map.erase(map.find(i - 3));  // three live at a time, as payloads in transit
  }
  ASSERT_EQ(map.size(), 3u);
  for (int i = 97; i < 100; ++i) EXPECT_EQ(map.at(i), i * 10);
  EXPECT_THROW(map.at(5), std::out_of_range);
  map.erase(12345);  // absent: nothing happens
  EXPECT_EQ(map.size(), 3u);
  map.clear();
  EXPECT_TRUE(map.empty());
}

}  // namespace
}  // namespace kb
