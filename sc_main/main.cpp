// The kernbench executable: a thin main over the command line in cli.cpp.
#include <unistd.h>

#include <cstdlib>
#include <string>

#include <systemc>

#include "base/interrupt.h"
#include "sc_main/cli.h"

int sc_main(int argc, char** argv) { return kb::cli::main(argc, argv); }

namespace {

// A big simulation touches hundreds of MiB of small, scattered objects (payloads, event
// queues, per-PE state) in simulated-time order, so it is bound by TLB misses. glibc
// backs its heap with transparent huge pages when asked through GLIBC_TUNABLES, which
// it reads only at process start: set it and start again (once; on failure go on).
void use_huge_pages(char** argv) {
  constexpr const char* kTunable = "glibc.malloc.hugetlb=1";
  const char* current = std::getenv("GLIBC_TUNABLES");
  std::string tunables = current == nullptr ? "" : current;
  if (tunables.find("glibc.malloc.hugetlb") != std::string::npos) return;
  tunables += tunables.empty() ? kTunable : std::string(":") + kTunable;
  setenv("GLIBC_TUNABLES", tunables.c_str(), 1);
  execv("/proc/self/exe", argv);
}

}  // namespace

// Our own main (instead of libsystemc's) to keep SystemC's banner out of reports read by
// people and scripts (`kernbench --version` names the SystemC release), and to run with
// huge pages.
int main(int argc, char** argv) {
  use_huge_pages(argv);
  kb::interrupt::install();
  setenv("SYSTEMC_DISABLE_COPYRIGHT_MESSAGE", "1", 0);
  return sc_core::sc_elab_and_sim(argc, argv);
}
