#include <gtest/gtest.h>

#include "base/address_map.h"
#include "tests/support.h"

namespace kb {

TEST(AddressMap, HbmAndMailboxAddressesRoundTrip) {
  const AddressMap map(test::topology("llama70b_4sip"));
  for (std::uint32_t cube : {0u, 5u, 15u})
    for (std::uint32_t pe : {0u, 7u}) {
      const auto h = map.decode(map.hbm(cube, pe, 12345), 64);
      ASSERT_TRUE(h);
      EXPECT_EQ(h->region, DecodedAddress::Region::Hbm);
      EXPECT_EQ(h->cube, cube);
      EXPECT_EQ(h->pe, pe);
      EXPECT_EQ(h->offset, 12345u);
      const auto m = map.decode(map.mailbox(cube, pe));
      ASSERT_TRUE(m);
      EXPECT_EQ(m->region, DecodedAddress::Region::Mailbox);
      EXPECT_EQ(m->cube, cube);
      EXPECT_EQ(m->pe, pe);
    }
}

TEST(AddressMap, RejectsAccessesOutsideAChannel) {
  // 3 cubes of 3 PEs: the cube and PE fields have codes that name nothing.
  const Topology topo = test::topology(
      "small_1sip_2x2x2", {"sip.mesh.x=3", "sip.mesh.y=1", "cube.pes=3"});
  const AddressMap map(topo);
  const std::uint64_t cap = topo.cube.hbm.capacity;
  EXPECT_TRUE(map.decode(map.hbm(2, 2, cap - 64), 64));
  EXPECT_FALSE(map.decode(map.hbm(2, 2, cap - 64), 65));  // runs past the channel end
  EXPECT_FALSE(map.decode(map.hbm(0, 3, 0)));            // PE 3 does not exist
  EXPECT_FALSE(map.decode(map.hbm(3, 0, 0)));            // cube 3 does not exist
  EXPECT_FALSE(map.decode(~0ull));
}

TEST(AddressMap, AnotherSipsMailboxIsRemoteAndOwnIsLocal) {
  const Topology topo = test::topology("llama70b_4sip");
  const AddressMap sip1(topo, SipId(1));
  const std::uint64_t to_sip2 = AddressMap::remote_mailbox(2, 5, 12, 7);
  const auto r = sip1.decode(to_sip2);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->region, DecodedAddress::Region::Remote);
  EXPECT_EQ(r->sip, 2u);
  EXPECT_EQ(r->via, 5u);
  EXPECT_EQ(r->cube, 12u);
  EXPECT_EQ(r->pe, 7u);
  // On SIP 2 itself the same address is the mailbox of cube 12, PE 7.
  const auto here = AddressMap(topo, SipId(2)).decode(to_sip2);
  ASSERT_TRUE(here);
  EXPECT_EQ(here->region, DecodedAddress::Region::Mailbox);
  EXPECT_EQ(here->cube, 12u);
  EXPECT_EQ(here->pe, 7u);
  EXPECT_FALSE(sip1.decode(AddressMap::remote_mailbox(4, 5, 12, 7)));  // no SIP 4
  EXPECT_FALSE(sip1.decode(AddressMap::remote_mailbox(2, 16, 12, 7)));  // no cube 16
  EXPECT_FALSE(sip1.decode(AddressMap::remote_mailbox(2, 5, 12, 8)));   // no PE 8
}

}  // namespace kb
