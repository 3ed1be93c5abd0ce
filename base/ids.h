#pragma once
// Typed indices, so a SIP, a cube and a PE number cannot be mixed up. (Comparisons are
// written out, not defaulted: the installed headers are C++17.)
#include <cstdint>
#include <cstdio>
#include <optional>
#include <string>
#include <tuple>

namespace kb {

template <class Tag>
struct Id {
  std::uint32_t value = 0;
  constexpr Id() = default;
  constexpr explicit Id(std::uint32_t v) : value(v) {}
  friend constexpr bool operator==(Id a, Id b) { return a.value == b.value; }
  friend constexpr bool operator!=(Id a, Id b) { return a.value != b.value; }
  friend constexpr bool operator<(Id a, Id b) { return a.value < b.value; }
  friend constexpr bool operator>(Id a, Id b) { return b < a; }
  friend constexpr bool operator<=(Id a, Id b) { return !(b < a); }
  friend constexpr bool operator>=(Id a, Id b) { return !(a < b); }
};

using SipId = Id<struct SipTag>;
using CubeId = Id<struct CubeTag>;  // row-major in the SIP mesh: y * mesh_x + x
using PeId = Id<struct PeTag>;      // also the index of the PE's HBM channel in its cube

struct PeCoord {
  SipId sip;
  CubeId cube;
  PeId pe;
  friend bool operator==(const PeCoord& a, const PeCoord& b) { return a.tied() == b.tied(); }
  friend bool operator!=(const PeCoord& a, const PeCoord& b) { return a.tied() != b.tied(); }
  friend bool operator<(const PeCoord& a, const PeCoord& b) { return a.tied() < b.tied(); }
  friend bool operator>(const PeCoord& a, const PeCoord& b) { return b < a; }
  friend bool operator<=(const PeCoord& a, const PeCoord& b) { return !(b < a); }
  friend bool operator>=(const PeCoord& a, const PeCoord& b) { return !(a < b); }
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

 private:
  std::tuple<SipId, CubeId, PeId> tied() const { return {sip, cube, pe}; }
};

}  // namespace kb
