#pragma once
// The current simulated time, read inline: sc_core::sc_time_stamp() is a call into the
// SystemC library, and the models read the time several times per transaction. The
// simulation context exists once any module does (sc_get_curr_simcontext() makes it),
// so the models read SystemC's pointer to it directly.
#include <systemc>

namespace kb {

inline const sc_core::sc_time& sim_time() { return sc_core::sc_curr_simcontext->time_stamp(); }

}  // namespace kb
