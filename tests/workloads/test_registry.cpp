// The registry's invariants: unique names, a field means the same thing wherever it is
// declared, and every workload configures from its fallbacks on the default topology.
#include <gtest/gtest.h>

#include <map>
#include <set>

#include "tests/support.h"
#include "workloads/workload.h"

namespace kb::workloads {
namespace {

TEST(Registry, NamesAreUniqueAndFindFindsThem) {
  std::set<std::string> names;
  for (const Workload* w : registry()) {
    EXPECT_TRUE(names.insert(w->name()).second) << w->name();
    EXPECT_EQ(find(w->name()), w);
    EXPECT_FALSE(w->summary().empty()) << w->name();
  }
  EXPECT_EQ(find("no_such_workload"), nullptr);
}

TEST(Registry, AFieldIsDeclaredOnce) {
  std::map<std::string, const KnobSet*> owner;
  for (const Workload* w : registry())
    for (const KnobSet* set : w->knobs())
      for (const Knob& k : set->knobs) {
        const auto [it, fresh] = owner.try_emplace(k.field, set);
        EXPECT_TRUE(fresh || it->second == set)
            << "field '" << k.field << "' is declared by knob sets '" << it->second->name << "' and '" << set->name
            << "'";
      }
}

TEST(Registry, EveryWorkloadConfiguresFromItsFallbacks) {
  const Topology topo = test::topology("llama70b_4sip");
  const workloads::Setup setup{&topo, {SipId(0), SipId(1), SipId(2), SipId(3)}, {}, false};
  for (const Workload* w : registry()) {
    Values v;
    for (const KnobSet* set : w->knobs())
      for (const Knob& k : set->knobs) v.set(k.field, k.fallback, false);
    EXPECT_NO_THROW(w->configure(v, setup)) << w->name();
  }
}

}  // namespace
}  // namespace kb::workloads
