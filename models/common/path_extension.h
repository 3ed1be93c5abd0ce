#pragma once
// The critical-path account a payload carries through the blocks it crosses (a DMA
// burst, an IPCQ message): each block adds the time the payload spent with it under
// its own cause. Payloads from outside the model carry none and are not accounted.
#include <systemc>
#include <tlm>

#include "base/critical_path.h"

namespace kb {

class PathExtension : public tlm::tlm_extension<PathExtension> {
 public:
  tlm::tlm_extension_base* clone() const override { return new PathExtension(*this); }
  void copy_from(const tlm::tlm_extension_base& other) override {
    account = static_cast<const PathExtension&>(other).account;
  }
  PathAccount account;
};

inline std::uint64_t ticks(const sc_core::sc_time& t) { return t.value(); }

// The payload's time up to `to` was spent on `cause` (if it carries an account).
inline void account_until(const tlm::tlm_generic_payload& gp, const sc_core::sc_time& to, Cause cause) {
  if (auto* path = gp.get_extension<PathExtension>()) path->account.advance(ticks(to), cause);
}

}  // namespace kb
