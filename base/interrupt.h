#pragma once
// What an interrupted kernbench must not leave behind. On SIGINT or SIGTERM the handler
// removes the temporary files being written (an output is complete or absent, never
// torn), stops the worker processes, removes the (then empty) scratch folders, and the
// process dies of the signal as usual. Registration is cheap; the handler only uses
// async-signal-safe calls.
#include <sys/types.h>

#include <string>

namespace kb::interrupt {

// Installs the SIGINT and SIGTERM handlers (once, from main).
void install();

// A path to remove (a file, or a folder once empty) if the process is interrupted;
// forget() it when it is done. Returns a slot (-1 if all slots are taken: then nothing
// is removed for it).
int remember_path(const std::string& path);
void forget_path(int slot);
// remember_path for as long as it lives.
class RemovedOnInterrupt {
 public:
  explicit RemovedOnInterrupt(const std::string& path) : slot_(remember_path(path)) {}
  ~RemovedOnInterrupt() { forget_path(slot_); }
  RemovedOnInterrupt(const RemovedOnInterrupt&) = delete;
  RemovedOnInterrupt& operator=(const RemovedOnInterrupt&) = delete;

 private:
  int slot_;
};

// A worker process to stop if this one is interrupted.
void remember_worker(pid_t pid);
void forget_worker(pid_t pid);

}  // namespace kb::interrupt
