#pragma once
// What an IPCQ message's payload carries besides its bytes: who sent it and, when it
// crossed links between SIPs, each crossing. The PEs' mailboxes read them; the links'
// ports make them anew on the far side.
#include <cstdint>
#include <vector>

#include <tlm>

#include "base/name.h"

namespace kb {

// Identifies the sender of an IPCQ message.
class MessageExtension : public tlm::tlm_extension<MessageExtension> {
 public:
  tlm::tlm_extension_base* clone() const override { return new MessageExtension(*this); }
  void copy_from(const tlm::tlm_extension_base& other) override {
    *this = static_cast<const MessageExtension&>(other);
  }
  std::uint32_t src_sip = 0, src_cube = 0, src_pe = 0, tag = 0;
};

// One crossing of a link direction ("sip0>sip1"), as sc_time values: the first byte went
// on the wire at `start`, the last at `busy_end`, and it was all at the far end at `arrive`.
struct LinkCrossing {
  Name direction;
  std::uint64_t start = 0, busy_end = 0, arrive = 0;
};

// The link crossings of a message that came from another SIP, in order.
class LinkTrail : public tlm::tlm_extension<LinkTrail> {
 public:
  tlm::tlm_extension_base* clone() const override { return new LinkTrail(*this); }
  void copy_from(const tlm::tlm_extension_base& other) override { *this = static_cast<const LinkTrail&>(other); }
  std::vector<LinkCrossing> crossings;
};

}  // namespace kb
