#pragma once
// PeScheduler: takes commands from PeCpu and queues them to the engine they name (each
// engine keeps its own FIFO, so commands to different engines run concurrently). A
// composite GEMM whose B operand lies in HBM it expands into a tile plan: B is streamed
// in tiles of `tile_rows` rows through N >= 2 TCM staging buffers, the DMA loading the
// next tiles while the GEMM engine works on tile j; a buffer is reloaded once its GEMM
// is done. A sequence it runs step by step, each step a plain
// command or a composite, so one CPU command can carry a whole attention tile.
// A command that names commands to wait for, or a message to receive, it holds until
// they are served and the message is in, then starts it the same moment.
#include <deque>
#include <optional>
#include <utility>
#include <vector>

#include <tlm_utils/simple_target_socket.h>

#include "models/common/payload_pool.h"
#include "models/common/ports.h"
#include "models/pe/command.h"
#include "models/pe/pe_ipcq.h"
#include "models/pe/pe_tcm.h"

namespace kb {

// A composite in progress and a sequence in progress. The commands the scheduler makes
// for them point back here (Command::composite, Command::sequence); both live in a deque
// and their commands in vectors never resized, so those pointers stay good.
struct ScheduledComposite {
  tlm::tlm_generic_payload* macro = nullptr;
  std::uint32_t tiles = 0, loads = 0, gemms_done = 0;
  std::vector<Command> subs;
  // Tiles loaded while the macro's `after` command is not yet served: their GEMMs wait.
  std::vector<std::pair<std::uint32_t, PathAccount>> held;
};
// Critical-path accounts: a sub-command starts from the account of what issued it (the
// macro, the tile's load, the GEMM that freed its buffer); a sequence's steps follow
// one another's.
struct ScheduledSequence {
  tlm::tlm_generic_payload* macro = nullptr;
  std::size_t next = 0;       // the step to issue
  bool in_step = false;       // a step is running
  bool done = false;
  std::vector<Command> steps;  // its own
  PathAccount path;           // where the sequence stands: its last step's end
};

class PeScheduler : public sc_core::sc_module {
 public:
  tlm_utils::simple_target_socket<PeScheduler> cpu;
  InitiatorPort dma, gemm, math, ipcq;

  PeScheduler(const sc_core::sc_module_name& name, PeTcm& tcm);
  InitiatorPort& engine(EngineKind e);
  // The mailbox held receives take their messages from (the PE's IPCQ).
  void attach(PeIpcq& mailbox);
  // An engine it sends commands to: the engine tells it when it serves a command that a
  // held command waits for, before the response comes back.
  void watch(PeEngine& engine);
  // Drops the commands it holds (a platform's reset): each goes back to the CPU at once
  // with TLM_GENERIC_ERROR_RESPONSE, unserved. What runs on the engines goes on.
  void drop_held();

 private:
  using Composite = ScheduledComposite;
  using Sequence = ScheduledSequence;
  // What release_held's scan needs of a held command, kept beside it: a scan passes
  // every held command, and reading each one's dependency list cost a cache miss per
  // command and per dependency.
  struct Held {
    Held(tlm::tlm_generic_payload* payload, const Command& command);
    // Whether every command it waits for has been served. Served stays served, so the
    // ones seen served are not read again.
    bool dependencies_served();

    tlm::tlm_generic_payload* gp = nullptr;
    const Command* cmd = nullptr;      // gp's command
    const Command* blocker = nullptr;  // the first of cmd->waits_for not seen served
    std::uint32_t next_wait = 0;       // its index
    bool receives = false, send = false;
    std::optional<Message> message;  // taken from the mailbox in the order the receives came (last: rarely read)
  };

  tlm::tlm_sync_enum nb_transport_fw(tlm::tlm_generic_payload& gp, tlm::tlm_phase& phase,
                                     sc_core::sc_time& delay);
  void dispatch(tlm::tlm_generic_payload& gp);
  // Dispatches the held commands now ready, in issue order; `from`: the first one held
  // since the last scan (held_.size(): none).
  void release_held(std::size_t from);
  bool holds_send_like(const Command& send) const;  // a held send to the same PE and tag
  void engine_done(tlm::tlm_generic_payload& gp);
  void served(tlm::tlm_generic_payload& gp);
  void serve(Command& macro);  // a composite or sequence the scheduler ran is served
  void start_composite(tlm::tlm_generic_payload& gp);
  void start_sequence(tlm::tlm_generic_payload& gp);
  void advance(Sequence& s);
  void step_done(Sequence& s, tlm::tlm_generic_payload& gp, const Command& step);
  void finished(tlm::tlm_generic_payload& macro, Command& cmd, sc_core::sc_time started);  // respond to the CPU
  void issue_load(Composite& c, std::uint32_t tile, const PathAccount& path);
  void issue_gemm(Composite& c, std::uint32_t tile, const PathAccount& path);
  // A tile is in its staging buffer: its GEMM goes, or waits for the macro's `after`.
  void tile_ready(Composite& c, std::uint32_t tile, const PathAccount& path);
  void issue_sub(Command& sub, InitiatorPort& port, const PathAccount& path);

  PeTcm& tcm_;
  Responder responder_;
  PayloadPool pool_;
  std::deque<Composite> composites_;
  std::deque<Sequence> sequences_;
  std::deque<Held> held_;
  // Counts what can make a held command ready or change held_ under a scan of it (a
  // command served, release_held entered): release_held rescans from the front only then.
  std::uint64_t held_epoch_ = 0;
  // A message came in or a receive was held since the held receives last looked in the
  // mailbox (only then can one of them find its message).
  bool unmatched_mail_ = false;
  // A command some held command waits for was served since the last scan (set by the
  // engine that served it, or here): without that, held commands that were not ready at
  // the last scan and have no new message are still not ready.
  bool blocker_served_ = false;
  std::vector<const Command*> sends_ahead_;  // release_held's scratch (kept for its capacity)
  PeIpcq* mailbox_ = nullptr;
};

}  // namespace kb
