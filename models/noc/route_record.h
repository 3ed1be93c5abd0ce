#pragma once
// Optional extension that makes a payload's NOC path observable: every router that
// forwards it over a mesh link appends its cube id. Payloads without it pay nothing.
#include <cstdint>
#include <vector>

#include <tlm>

namespace kb {

struct RouteRecord : tlm::tlm_extension<RouteRecord> {
  tlm::tlm_extension_base* clone() const override { return new RouteRecord(*this); }
  void copy_from(const tlm::tlm_extension_base& other) override {
    *this = static_cast<const RouteRecord&>(other);
  }
  std::vector<std::uint32_t> cubes;  // cubes whose router sent it over a mesh link
  std::uint32_t hops() const { return static_cast<std::uint32_t>(cubes.size()); }
};

}  // namespace kb
