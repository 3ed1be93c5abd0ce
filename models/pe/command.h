#pragma once
// The descriptor of one engine command. It travels from PeCpu through PeScheduler to
// an engine as a tlm_generic_payload carrying a CommandExtension.
#include <cstdint>
#include <deque>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <systemc>
#include <tlm>

#include "base/critical_path.h"
#include "base/ids.h"
#include "models/common/message.h"
#include "base/dtype.h"

namespace kb {

class PayloadPool;
struct Command;
class CommandPool;
struct ScheduledComposite;  // the PE scheduler's (pe_scheduler.h)
struct ScheduledSequence;

// A hold on a command a PE's CPU issued (tl's lists of what reads or writes a buffer, a
// held command's waits). The CPU reuses a command's slot once the command is done and
// no handle holds it, so a handle's command stays readable for as long as it lives.
class CommandHandle {
 public:
  CommandHandle() = default;
  explicit CommandHandle(const Command& c);
  CommandHandle(const CommandHandle& other) : CommandHandle(other.c_) {}
  CommandHandle& operator=(CommandHandle other) {
    std::swap(c_, other.c_);
    return *this;
  }
  ~CommandHandle();
  const Command* get() const { return c_; }
  const Command& operator*() const { return *c_; }
  const Command* operator->() const { return c_; }
  explicit operator bool() const { return c_ != nullptr; }

 private:
  explicit CommandHandle(const Command* c);
  const Command* c_ = nullptr;
};

enum class EngineKind : std::uint8_t { Dma, Gemm, Math, Ipcq };
inline constexpr std::size_t kEngineKinds = 4;
const char* engine_name(EngineKind e);

// A 2-D region of the PE's TCM: rows x cols elements, `stride` elements between rows.
struct TcmView {
  std::uint64_t offset = 0;  // bytes
  DType dtype = DType::fp32;
  std::uint32_t rows = 0, cols = 0, stride = 0;
  std::uint64_t elements() const { return static_cast<std::uint64_t>(rows) * cols; }
  std::uint64_t bytes() const { return elements() * dtype_bytes(dtype); }
};

enum class MathOp : std::uint8_t {
  Add, Sub, Mul, Div, Maximum, Exp, Where, Copy, Scale, RowMax, RowSum, Trans, Fill,
  ExpDiff,     // exp(in0 - in1), and 0 where both are -inf (an empty softmax state)
  CausalBias,  // 0 where key (col) position <= query (row) position, else -inf
  CausalMask,  // in0 where key position <= query position, else -inf (the bias applied in place)
  Fma,         // in0 * in1 + in2 (a fused multiply-add)
  Rsqrt,       // 1 / sqrt(in0) (a normalisation's scale)
  RowArgMax,   // the index of the largest value along a row (or down a column), the first on ties
};
inline constexpr std::size_t kMathOps = static_cast<std::size_t>(MathOp::RowArgMax) + 1;
const char* math_op_name(MathOp op);
// The topology's pe.math.cycles key whose cost the op pays per lane-op.
const char* math_cost_key(MathOp op);

struct Command {
  enum class Kind : std::uint8_t { DmaRead, DmaWrite, Gemm, Composite, Math, Send, Sequence };
  // The fields every block a command passes reads come first, then each engine's
  // operands together: a command is touched in a few cache lines, not across all of it.
  Kind kind = Kind::DmaRead;
  bool data = false;    // data mode: the engine computes real values
  // Sequence: a step marked `serial` also waits until every earlier sequence has
  // finished (it touches state those sequences update).
  bool serial = false;
  bool served = false;  // its engine has finished it
  bool done = false;    // its issuer has seen it finish
  // Held commands in the PE scheduler whose first dependency not yet seen served this is
  // (its being served is what can let them go).
  mutable std::uint32_t holding = 0;
  std::uint64_t op_id = 0;  // the op-log record this command belongs to

  // What made a command the PE scheduler made itself: the composite a tile's load or
  // GEMM belongs to (and the tile), the sequence a step belongs to. Its completion goes
  // straight back there; a CPU's command has neither.
  ScheduledComposite* composite = nullptr;
  ScheduledSequence* sequence = nullptr;
  std::uint32_t tile = 0;

  // Lifecycle, filled by the blocks it passes.
  sc_core::sc_time issued, started, finished;
  // The critical-path account: from its issuer when issued, at its end once done.
  PathAccount path;

  // The issuing CPU's pool and the handles holding it; a copy is a new command, so
  // neither is copied with it.
  struct Slot {
    CommandPool* pool = nullptr;
    std::uint32_t holds = 0;
    Slot() = default;
    Slot(const Slot&) {}
    Slot& operator=(const Slot&) { return *this; }
  };
  mutable Slot slot;

  // Math: out = op(in0, in1, in2) with row/col broadcast of in1/in2; `scalar` for Scale
  // and Fill. Timing: ceil(E/L) * cost(op), plus log2(width) per row group for reductions.
  MathOp op = MathOp::Copy;
  float scalar = 0;
  std::uint32_t q_period = 1;
  std::uint32_t reduce_width = 0;
  TcmView in0, in1, in2, out;
  // CausalBias: row r is query position q_pos0 + r % q_period; col c is key k_pos0 + c.
  std::int64_t q_pos0 = 0, k_pos0 = 0;
  std::uint64_t elements = 0;

  // Gemm: c (+)= a x b, b is [k, n] or, with trans_b, [n, k]. Timing m x n x k.
  std::uint32_t m = 0, n = 0, k = 0;
  bool trans_b = false, accumulate = false;
  TcmView a, b, c;

  // DmaRead / DmaWrite / Send: HBM address (or nothing for Send), bytes, TCM buffer
  // (nullptr: timing only).
  std::uint64_t address = 0;
  std::uint64_t bytes = 0;
  std::uint8_t* tcm = nullptr;

  // Send: destination PE (of this SIP or, over the links, of another), message tag.
  std::uint32_t dst_sip = 0, dst_cube = 0, dst_pe = 0, tag = 0;

  // Composite: the GEMM above with b in HBM at `address` (rows of `b_row_bytes`),
  // streamed in tiles of `tile_rows` rows through `stage_buffers` (>= 2) TCM staging
  // buffers at `stage`, one after the other.
  std::uint32_t tile_rows = 0;
  std::uint32_t stage_buffers = 2;
  // The first tiles already in the staging buffers (loaded earlier, tile t in buffer t):
  // their GEMMs need no load, and the stream starts at the next.
  std::uint32_t preloaded_tiles = 0;
  std::uint64_t b_row_bytes = 0;
  TcmView stage;  // one staging buffer; the others follow it
  // Composite: its GEMMs wait until this command (the DMA load of a) has been served;
  // the stream of b starts at once.
  CommandHandle after;

  // Held in the scheduler until the commands in `waits_for` (this PE's) have been served
  // and, with a `receive`, its message is in: the program issues it without waiting.
  std::vector<CommandHandle> waits_for;
  struct Receive {
    PeCoord src;
    std::uint32_t tag = 0;
    std::uint64_t bytes = 0;
    std::uint8_t* tcm = nullptr;  // where the message's bytes go (data mode)
    std::uint64_t op_id = 0;      // the op-log record of the receive
    sc_core::sc_time arrival;     // filled when taken
    std::vector<LinkCrossing> crossings;  // filled when taken: the links it crossed
  };
  std::optional<Receive> receive;

  // Sequence: `steps` run one after the other in the scheduler.
  std::vector<Command> steps;

  EngineKind engine() const;
};

// The commands a PE's CPU has issued and not yet recycled. A slot is free again once its
// command is done and no CommandHandle holds it: the pool grows to the most commands
// alive at once, not to the number issued (a Command& the CPU returns is good until the
// program next waits; hold a CommandHandle to keep it longer).
class CommandPool {
 public:
  CommandPool() = default;
  ~CommandPool();
  CommandPool(const CommandPool&) = delete;
  CommandPool& operator=(const CommandPool&) = delete;
  Command& take(Command&& c);  // a slot holding c
  void retire(Command& c);          // it is done: its slot is free once no handle holds it
  void release(const Command& c);   // its last handle is gone
  std::size_t slots() const { return slots_.size(); }

 private:
  std::deque<Command> slots_;
  std::vector<Command*> free_;
};

inline CommandHandle::CommandHandle(const Command& c) : CommandHandle(&c) {}
inline CommandHandle::CommandHandle(const Command* c) : c_(c) {
  if (c_) ++c_->slot.holds;
}
inline CommandHandle::~CommandHandle() {
  if (c_ && --c_->slot.holds == 0 && c_->done && c_->slot.pool) c_->slot.pool->release(*c_);
}

class CommandExtension : public tlm::tlm_extension<CommandExtension> {
 public:
  explicit CommandExtension(Command* c = nullptr) : command(c) {}
  tlm::tlm_extension_base* clone() const override { return new CommandExtension(command); }
  void copy_from(const tlm::tlm_extension_base& other) override {
    command = static_cast<const CommandExtension&>(other).command;
  }
  // The command a payload carries; a payload without one is a protocol error.
  static Command& of(const tlm::tlm_generic_payload& gp);

  Command* command;
};

// What every command target (PeScheduler, the engines) checks first: a payload with no
// Command is refused with TLM_COMMAND_ERROR_RESPONSE and one with byte enables with
// TLM_BYTE_ENABLE_ERROR_RESPONSE. The command to serve, or null.
Command* admit_command(tlm::tlm_generic_payload& gp);

// A payload from `pool` that carries `cmd` (TLM_IGNORE_COMMAND, no data).
tlm::tlm_generic_payload* command_payload(PayloadPool& pool, Command& cmd);

}  // namespace kb
