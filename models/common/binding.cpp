#include "models/common/binding.h"

namespace kb {

namespace {
Interposer& interposer() {
  static Interposer hook;
  return hook;
}
}  // namespace

void bind_sockets(InitiatorSocketBase& initiator, TargetSocketBase& target) {
  initiator.get_base_port().bind(target.get_base_interface());
  target.get_base_port().bind(initiator.get_base_interface());
}

void connect(InitiatorSocketBase& initiator, TargetSocketBase& target) {
  if (interposer() && interposer()(initiator, target)) return;
  bind_sockets(initiator, target);
}

void set_interposer(Interposer hook) { interposer() = std::move(hook); }

}  // namespace kb
