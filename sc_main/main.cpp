// The kernbench executable: a thin main over the command line in cli.cpp.
#include <cstdlib>

#include <systemc>

#include "sc_main/cli.h"

int sc_main(int argc, char** argv) { return kb::cli::main(argc, argv); }

// Our own main (instead of libsystemc's) only to keep SystemC's banner out of reports
// read by people and scripts; `kernbench --version` names the SystemC release.
int main(int argc, char** argv) {
  setenv("SYSTEMC_DISABLE_COPYRIGHT_MESSAGE", "1", 0);
  return sc_core::sc_elab_and_sim(argc, argv);
}
