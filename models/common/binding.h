#pragma once
// Every socket binding of the machine goes through connect(), so that a test or a
// platform can interpose on any of them (e.g. a ProtocolMonitor) without the models
// knowing.
#include <functional>

#include <tlm>

namespace kb {

using InitiatorSocketBase = tlm::tlm_base_initiator_socket_b<>;
using TargetSocketBase = tlm::tlm_base_target_socket_b<>;

// Binds both directions (forward and backward interfaces), as socket.bind() does.
void bind_sockets(InitiatorSocketBase& initiator, TargetSocketBase& target);

// Binds `initiator` to `target`, through the interposer if one is installed.
void connect(InitiatorSocketBase& initiator, TargetSocketBase& target);

// An interposer binds the pair itself (e.g. through a monitor) and returns true, or
// returns false to leave the pair to a direct binding. One at a time; empty removes it.
using Interposer = std::function<bool(InitiatorSocketBase&, TargetSocketBase&)>;
void set_interposer(Interposer interposer);

}  // namespace kb
