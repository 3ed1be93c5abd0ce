#include <gtest/gtest.h>

#include "base/units.h"

namespace kb::units {

TEST(Units, BytesTakeBinaryAndDecimalPrefixes) {
  EXPECT_EQ(parse_bytes("1MiB"), 1048576u);
  EXPECT_EQ(parse_bytes("2KiB"), 2048u);
  EXPECT_EQ(parse_bytes("1GiB"), 1ull << 30);
  EXPECT_EQ(parse_bytes("4096"), 4096u);
  EXPECT_EQ(parse_bytes("512B"), 512u);
  EXPECT_EQ(parse_bytes("2 KB"), 2000u);
}

TEST(Units, BytesRejectNonsense) {
  EXPECT_FALSE(parse_bytes(""));
  EXPECT_FALSE(parse_bytes("MiB"));
  EXPECT_FALSE(parse_bytes("-1"));
  EXPECT_FALSE(parse_bytes("1.5MiB"));
  EXPECT_FALSE(parse_bytes("3 parsecs"));
  EXPECT_FALSE(parse_bytes("99999999999999999999"));  // overflows 64 bits
  EXPECT_FALSE(parse_bytes("17000000TiB"));           // overflows after the multiplier
}

TEST(Units, BandwidthIsBytesPerCycle) {
  EXPECT_EQ(parse_bytes_per_cycle("64B/cycle"), 64u);
  EXPECT_EQ(parse_bytes_per_cycle("2KiB/cycle"), 2048u);
  EXPECT_EQ(parse_bytes_per_cycle("32"), 32u);
  EXPECT_FALSE(parse_bytes_per_cycle("64B/s"));
  EXPECT_FALSE(parse_bytes_per_cycle("64B/"));
}

TEST(Units, CyclesAndHertz) {
  EXPECT_EQ(parse_cycles("120cycles"), 120u);
  EXPECT_EQ(parse_cycles("1 cycle"), 1u);
  EXPECT_EQ(parse_cycles("4"), 4u);
  EXPECT_FALSE(parse_cycles("4ns"));
  EXPECT_DOUBLE_EQ(*parse_hertz("1GHz"), 1e9);
  EXPECT_DOUBLE_EQ(*parse_hertz("1.5GHz"), 1.5e9);
  EXPECT_DOUBLE_EQ(*parse_hertz("500MHz"), 5e8);
  EXPECT_FALSE(parse_hertz("fast"));
  EXPECT_FALSE(parse_hertz("1GB"));
  EXPECT_FALSE(parse_hertz("."));
}

TEST(Units, FormatsBytesInTheLargestExactUnit) {
  EXPECT_EQ(format_bytes(1048576), "1MiB");
  EXPECT_EQ(format_bytes(2048), "2KiB");
  EXPECT_EQ(format_bytes(1000), "1000B");
  EXPECT_EQ(format_hertz(1e9), "1GHz");
}

// Every digit of a limit is printed (a 2,000,000 s timeout once printed as "200000").
TEST(Units, FormatsSecondsWithEveryDigit) {
  EXPECT_EQ(format_seconds(2000000), "2000000");
  EXPECT_EQ(format_seconds(0.5), "0.5");
  EXPECT_EQ(format_seconds(1e-6), "0.000001");
  EXPECT_EQ(format_seconds(12.25), "12.25");
}

// Energies and powers: an SI prefix on the unit, the value in the unit times 10^scale.
TEST(Units, ParsesEnergiesAndPowersWithTheirPrefixes) {
  EXPECT_EQ(*parse_quantity("31.2pJ/B", "J/B", -12), 31.2);
  EXPECT_EQ(*parse_quantity("0.5 pJ/MAC", "J/MAC", -12), 0.5);
  EXPECT_DOUBLE_EQ(*parse_quantity("2nJ/op", "J/op", -12), 2000.0);
  EXPECT_DOUBLE_EQ(*parse_quantity("4000fJ/B", "J/B", -12), 4.0);
  EXPECT_EQ(*parse_quantity("10W", "W", 0), 10.0);
  EXPECT_DOUBLE_EQ(*parse_quantity("50mW", "W", 0), 0.05);
  EXPECT_DOUBLE_EQ(*parse_quantity("1.5kW", "W", 0), 1500.0);
  EXPECT_EQ(*parse_quantity("0pJ/B", "J/B", -12), 0.0);
  EXPECT_FALSE(parse_quantity("31.2", "J/B", -12));     // no unit
  EXPECT_FALSE(parse_quantity("-1pJ/B", "J/B", -12));   // negative
  EXPECT_FALSE(parse_quantity("1pJ/MAC", "J/B", -12));  // another unit
  EXPECT_FALSE(parse_quantity("1xJ/B", "J/B", -12));    // no such prefix
  EXPECT_FALSE(parse_quantity("pJ/B", "J/B", -12));     // no number
  EXPECT_FALSE(parse_quantity(std::string(400, '9') + "pJ/B", "J/B",
                              -12));  // beyond a double: refused, not thrown
  EXPECT_FALSE(parse_hertz(std::string(400, '9') + "GHz"));
}

}  // namespace kb::units
