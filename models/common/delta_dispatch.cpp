#include "models/common/delta_dispatch.h"

#ifndef SC_INCLUDE_DYNAMIC_PROCESSES  // for sc_spawn
#define SC_INCLUDE_DYNAMIC_PROCESSES
#endif
#include <systemc>

namespace kb {

DeltaDispatch& DeltaDispatch::get() {
  // One per process, as SystemC's simulation context is; it lives as long as that context.
  static DeltaDispatch* const dispatch = new DeltaDispatch;
  return *dispatch;
}

DeltaDispatch::DeltaDispatch() {
  sc_core::sc_spawn_options opts;
  opts.spawn_method();
  opts.set_sensitivity(&event_);
  opts.dont_initialize();
  sc_core::sc_spawn(sc_bind(&DeltaDispatch::run, this), sc_core::sc_gen_unique_name("delta_dispatch"), &opts);
}

void DeltaDispatch::run() {
  // Sinks that ask while these fire are for the next delta.
  serving_.swap(asked_);
  for (auto it = serving_.rbegin(); it != serving_.rend(); ++it) (*it)->fire_delta();
  serving_.clear();
}

}  // namespace kb
