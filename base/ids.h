#pragma once
// Typed indices, so a SIP, a cube and a PE number cannot be mixed up.
#include <compare>
#include <cstdint>
#include <cstdio>
#include <optional>
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
  // The inverse of str(); nullopt for any other text.
  static std::optional<PeCoord> parse(const std::string& text) {
    unsigned s = 0, c = 0, p = 0;
    int used = 0;
    if (std::sscanf(text.c_str(), "sip%u.cube%u.pe%u%n", &s, &c, &p, &used) != 3 ||
        static_cast<std::size_t>(used) != text.size())
      return std::nullopt;
    return PeCoord{SipId(s), CubeId(c), PeId(p)};
  }
};

}  // namespace kb
