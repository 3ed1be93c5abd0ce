#pragma once
// Typed indices, so a SIP, a cube and a PE number cannot be mixed up.
#include <compare>
#include <cstdint>
#include <string>

namespace kb {

template <class Tag>
struct Id {
  std::uint32_t value = 0;
  constexpr Id() = default;
  constexpr explicit Id(std::uint32_t v) : value(v) {}
  auto operator<=>(const Id&) const = default;
};

using SipId = Id<struct SipTag>;
using CubeId = Id<struct CubeTag>;  // row-major in the SIP mesh: y * mesh_x + x
using PeId = Id<struct PeTag>;      // also the index of the PE's HBM channel in its cube

struct PeCoord {
  SipId sip;
  CubeId cube;
  PeId pe;
  auto operator<=>(const PeCoord&) const = default;
  std::string str() const {
    return "sip" + std::to_string(sip.value) + ".cube" + std::to_string(cube.value) + ".pe" +
           std::to_string(pe.value);
  }
};

}  // namespace kb
