#pragma once
// tl::Ctx: the Triton-like programming model a kernel is written in (docs/tl.md).
// A kernel is `void k(tl::Ctx& tl, Args...)`, run SPMD as the thread of every PE of a
// device. Every op charges its CPU issue cycles (pe.cpu.issue_cycles), sends a command
// to an engine and returns a Tensor handle at once; consuming a pending handle waits.
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <tuple>
#include <functional>
#include <initializer_list>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "kernels/tl/tensor.h"
#include "models/pe/pe.h"
#include "base/name.h"
#include "base/op_log.h"

namespace kb::tl {

// A kernel error: stops the run, naming the kernel, the PE, the op and the values.
class KernelError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct CompositeOpts {
  bool trans_b = false;          // b holds [n, k] rows (e.g. K for Q.K^T)
  std::uint32_t tile_rows = 128;  // rows of b per streamed tile
  const Tensor* out = nullptr;    // write into this buffer (e.g. a persistent one)
  bool accumulate = false;        // out += a x b
  // Staging for a streamed b: N x tile_rows rows of b's width and dtype give N >= 2
  // buffers (more buffers, deeper prefetch). Default: a new scratch buffer of two
  // (which the enclosing scope then waits for).
  const Tensor* stage = nullptr;
  // The stage's first rows already hold b's first `preloaded_rows` (Ctx::preload): the
  // stream starts after them. A whole number of tiles, or all of b.
  std::uint32_t preloaded_rows = 0;
};

class Ctx;

// The TCM bytes an allocation of `shape` takes (its bytes rounded up to the allocation
// granule): kernels' TCM plans add these up before a run.
std::uint64_t tcm_bytes(const Shape& shape, DType dtype);

// Frees every scratch buffer allocated inside it when it ends, once the commands that
// use them have finished (docs/tl.md, scratch_scope); or, made by persistent_scope, every
// persistent one.
class ScratchScope {
 public:
  ~ScratchScope();
  ScratchScope(const ScratchScope&) = delete;
  ScratchScope& operator=(const ScratchScope&) = delete;
  ScratchScope(ScratchScope&&) = delete;

 private:
  friend class Ctx;
  ScratchScope(Ctx& ctx, std::uint64_t mark, std::size_t first, bool persistent);
  Ctx& ctx_;
  std::uint64_t mark_;
  std::size_t first_;
  bool persistent_;
};

struct TcmUse {
  std::uint64_t persistent = 0, scratch = 0;  // bytes in use now
  std::uint64_t peak_persistent = 0, peak_scratch = 0, peak_total = 0;
};

class Ctx {
 public:
  // Op-log times count cycles from `origin`: the start of the run of this PE's SIP.
  Ctx(Pe& pe, const Topology& topo, const AddressMap& map, OpLog& log, std::string kernel, bool data,
      const sc_core::sc_time& origin);
  ~Ctx();
  Ctx(const Ctx&) = delete;
  Ctx& operator=(const Ctx&) = delete;

  // Coordinates and counts.
  SipId sip() const { return pe_.coord().sip; }
  CubeId cube() const { return pe_.coord().cube; }
  std::uint32_t cube_x() const { return topo_.mesh().pos(cube()).x; }
  std::uint32_t cube_y() const { return topo_.mesh().pos(cube()).y; }
  PeId pe() const { return pe_.coord().pe; }
  PeCoord coord() const { return pe_.coord(); }
  std::uint32_t num_cubes() const { return topo_.cubes_per_sip(); }
  std::uint32_t num_pes() const { return topo_.cube.pes; }
  std::uint32_t mesh_x() const { return topo_.sip.mesh_x; }
  Mesh mesh() const { return topo_.mesh(); }
  std::uint32_t mesh_y() const { return topo_.sip.mesh_y; }
  bool data_mode() const { return data_; }
  std::string kernel() const { return kernel_.str(); }

  // The rows of `t` this PE holds (count 0 when it holds none).
  RowRange shard_rows(const DeviceTensor& t) const;

  // HBM <-> TCM. `rows` are global rows inside this PE's shard.
  // `into`: load into this buffer (e.g. one half of a persistent ping-pong pair).
  Tensor load(const DeviceTensor& t, RowRange rows, const Tensor* into = nullptr);
  void store(const DeviceTensor& t, RowRange rows, const Tensor& x);
  Tensor ref(const DeviceTensor& t, RowRange rows);

  // GEMMs: c = a x b (b [k, n]) or a x b^T (trans_b, b [n, k]); fp32 result.
  Tensor composite(const Tensor& a, const Tensor& b, const CompositeOpts& opts = {});
  Tensor dot(const Tensor& a, const Tensor& b, bool trans_b = false);
  // A composite's stream started early: the first `rows` rows of the ref b loaded now
  // into the first rows of `stage` (while a collective runs, say); a composite on b with
  // this stage and opts.preloaded_rows = rows streams only the rest.
  void preload(const Tensor& b, std::uint32_t rows, const Tensor& stage);
  // Elementwise with row/column broadcast of b; fp32 result (or into `out`).
  Tensor add(const Tensor& a, const Tensor& b, const Tensor* out = nullptr);
  Tensor sub(const Tensor& a, const Tensor& b, const Tensor* out = nullptr);
  Tensor mul(const Tensor& a, const Tensor& b, const Tensor* out = nullptr);
  Tensor div(const Tensor& a, const Tensor& b, const Tensor* out = nullptr);
  Tensor maximum(const Tensor& a, const Tensor& b, const Tensor* out = nullptr);
  Tensor mul(const Tensor& a, float scalar, const Tensor* out = nullptr);
  // a * b + c, b and c broadcast (one fused multiply-add per element).
  Tensor fma(const Tensor& a, const Tensor& b, const Tensor& c, const Tensor* out = nullptr);
  Tensor exp(const Tensor& a, const Tensor* out = nullptr);
  Tensor rsqrt(const Tensor& a, const Tensor* out = nullptr);  // 1 / sqrt(a)
  // exp(a - b) with b broadcast; 0 where a is -inf (so an empty softmax state, m = -inf,
  // contributes nothing and never makes NaN).
  Tensor exp_diff(const Tensor& a, const Tensor& b, const Tensor* out = nullptr);
  // [rows, cols] fp32: 0 where key position k_pos0 + c <= query position
  // q_pos0 + r % q_period, else -inf (an additive causal mask).
  Tensor causal_bias(std::uint32_t rows, std::uint32_t cols, std::int64_t q_pos0, std::uint32_t q_period,
                     std::int64_t k_pos0);
  // x where key position k_pos0 + c <= query position q_pos0 + r % q_period, else -inf:
  // the causal mask applied to x itself (or into `out`).
  Tensor causal_mask(const Tensor& x, std::int64_t q_pos0, std::uint32_t q_period, std::int64_t k_pos0,
                     const Tensor* out = nullptr);
  Tensor where(const Tensor& mask, const Tensor& a, const Tensor& b, const Tensor* out = nullptr);
  Tensor copy(const Tensor& a, const Tensor& out);             // out = a
  Tensor cast(const Tensor& a, DType dtype);                    // a real conversion
  // axis 1: [rows, 1]; 0: [1, cols] (or into `out`).
  Tensor max(const Tensor& x, int axis, const Tensor* out = nullptr);
  Tensor sum(const Tensor& x, int axis, const Tensor* out = nullptr);
  // The index of the largest value (the first of equals), as fp32: exact below 2^24.
  Tensor argmax(const Tensor& x, int axis, const Tensor* out = nullptr);
  Tensor trans(const Tensor& x);                                // a real transpose
  Tensor view(const Tensor& x, const Shape& shape);             // same bytes, new shape
  Tensor rows(const Tensor& x, std::uint32_t begin, std::uint32_t count);  // a row slice, no copy
  Tensor cols(const Tensor& x, std::uint32_t begin, std::uint32_t count);  // a column slice (strided)
  Tensor full(const Shape& shape, float value, Arena arena = Arena::Scratch);
  void fill(const Tensor& out, float value);

  // Messages to another PE: IPCQ inside the cube, NOC across cubes, and, on a topology
  // with links (docs/topology.md), the links to a PE of another SIP.
  void send(const PeCoord& dst, const Tensor& x, std::uint32_t tag);
  Tensor recv(const PeCoord& src, const Shape& shape, DType dtype, std::uint32_t tag);
  // Posts a receive into `into` (or a new scratch buffer); the first use waits for it.
  Tensor recv_async(const PeCoord& src, const Shape& shape, DType dtype, std::uint32_t tag,
                    const Tensor* into = nullptr);
  void wait(const Tensor& t);
  // Whether a use of t would go at once, without waiting: nothing still writes its bytes
  // and every posted receive into them can take its message now. It waits for nothing
  // (the `wait` issue cost): a program can do other work while a message travels.
  bool ready(const Tensor& t);

  // Memory.
  ScratchScope scratch_scope();
  // Persistent buffers allocated inside it live until it ends: a kernel called as a
  // function of another, step after step (a model's layers), gives their TCM back.
  ScratchScope persistent_scope();
  Tensor persistent(const Shape& shape, DType dtype = DType::fp32, const std::string& name = "");
  // A scratch buffer, not filled (an op's `out`).
  Tensor empty(const Shape& shape, DType dtype = DType::fp32, const std::string& name = "");
  const TcmUse& tcm_use() const { return use_; }
  std::uint64_t tcm_capacity() const { return topo_.pe.tcm_bytes; }
  const Topology& topology() const { return topo_; }  // the machine's numbers, for a kernel's tiling

  // Names the kernel phase the PE's program enters now (e.g. "sweep", "ring step 3"):
  // an op-log record of engine "phase" from now to the next phase or the kernel's end.
  void phase(const std::string& name);

  // Called by the runtime.
  void finish();                           // waits for everything in flight, ends the phase
  void completed(const Command& cmd);      // the op log's end times
  const std::string& waiting_for() const { return waiting_for_; }

  [[noreturn]] void fail(std::string_view op, const std::string& what) const;

 private:
  friend class ScratchScope;
  friend class Sequence;
  Tensor alloc(const Shape& shape, DType dtype, Arena arena, const std::string& name);
  void end_scope(std::uint64_t mark, std::size_t first, bool persistent);
  void check(const Tensor& t, std::string_view op, const char* role) const;
  void check_contiguous(const Tensor& t, std::string_view op) const;
  void consume(const Tensor& t, std::string_view op);  // auto-wait for its writers
  void prepare_write(const Tensor& t);                    // wait for its writer and readers of its bytes
  void wait_for_readers(const Tensor& t);                  // of the bytes t spans
  void add_reader(const Tensor& t, const Command& cmd);
  void add_writer(const Tensor& t, const Command& cmd);
  // The commands still writing (and, for a write, reading) the bytes t spans.
  std::vector<CommandHandle> pending_accesses(const Tensor& t, bool write) const;
  // Hands a posted receive to the scheduler (the send or held sequence that consumes it takes it there).
  std::optional<Command::Receive> receive_in_scheduler(const Tensor& t);  // t: one posted receive
  // A sequence's running state: waits only when something other than a sequence wrote
  // it (the scheduler orders the sequences that update it: their first step is serial).
  void wait_unless_sequenced(const Tensor& t, std::string_view op);
  void issue_sequence(Sequence& s);
  // Views without an op (the view ops and a sequence's steps make them), checked.
  Tensor reshaped(std::string_view op, const Tensor& x, const Shape& shape) const;
  Tensor row_slice(std::string_view op, const Tensor& x, std::uint32_t begin, std::uint32_t count) const;
  Tensor col_slice(std::string_view op, const Tensor& x, std::uint32_t begin, std::uint32_t count) const;
  TcmView view_of(const Tensor& t) const;
  void charge(const char* cpu_op);
  // Rows of a device tensor lying in one shard, as an HBM-resident operand (what ref,
  // load and store address); checks them, issues nothing.
  Tensor hbm_rows(std::string_view op, const DeviceTensor& t, RowRange rows) const;
  Command& issue(Command&& cmd, OpRecord&& record);
  // A DMA command between HBM at `address` (rows of t) and x in TCM, with its record.
  Command& issue_dma(Command::Kind kind, Name op, std::uint64_t address, const DeviceTensor& t,
                     const Tensor& x);
  std::uint64_t record_cpu(Name kind, const char* cpu_op, const std::string& tensor);
  // Waits until `cmd` is done; `what()` says what for (a deadlock report names it), and is
  // made only if it must wait.
  template <class What>
  void block_on(const Command& cmd, What what) {
    if (!cmd.done) wait_on(cmd, what());
  }
  void wait_on(const Command& cmd, std::string what);
  void end_phase();
  std::uint64_t cycles(const sc_core::sc_time& t) const;  // since origin_
  void take_messages(const Tensor& t);                 // of the receives into t's bytes
  void take_message(Buffer& b, std::uint64_t op);      // the receive `op` and the earlier ones of its queue
  void take_one(Buffer& b, std::uint64_t op);
  // A message's link crossings as op-log records of engine "link" on this PE (the receiver).
  void log_crossings(const std::vector<LinkCrossing>& crossings, const PeCoord& from, std::uint32_t tag,
                     std::uint64_t bytes);
  // Where a PE is, checked for a send or receive: of this SIP, or of another joined by links.
  void check_peer(std::string_view op, const PeCoord& peer, const char* role) const;
  std::uint32_t message_hops(const PeCoord& peer) const;  // mesh hops at both ends
  // Where a causal mask's rows and columns are: row r is query position q_pos0 + r %
  // q_period, column c key position k_pos0 + c.
  struct Positions {
    std::int64_t q_pos0 = 0;
    std::uint32_t q_period = 1;
    std::int64_t k_pos0 = 0;
  };
  Tensor math(MathOp op, Name kind, const Tensor& a, const Tensor* b, const Tensor* c,
              const Tensor* out, float scalar = 0, const Positions* positions = nullptr);
  Tensor reduce(MathOp op, Name kind, const Tensor& x, int axis, const Tensor* out);
  // Issues a MATH command on operands (the first its main one, nulls skipped) into `out`:
  // its record, the readers and the writer of what it touches.
  void issue_math(Command&& cmd, Name kind, const Tensor& out, std::initializer_list<const Tensor*> operands);
  // An op's result of `rows` x `cols`: `out`, checked and ready to be written, or a new
  // scratch buffer shaped `shape`.
  Tensor result(Name kind, std::uint32_t rows, std::uint32_t cols, const Tensor* out, const Shape& shape);
  Tensor gemm_into(const Tensor& a, const Tensor& b, const CompositeOpts& opts, bool composite);

  Pe& pe_;
  const Topology& topo_;
  const AddressMap& map_;
  OpLog& log_;
  Name kernel_;  // interned once: every op-log record names it
  bool data_;
  const sc_core::sc_time& origin_;
  const sc_core::sc_time cycle_;       // one PE clock cycle
  std::uint64_t persistent_top_ = 0;   // grows up from 0
  std::uint64_t scratch_bottom_;       // grows down from the TCM's end
  std::vector<std::shared_ptr<Buffer>> scratch_;  // live scratch buffers, allocation order
  std::vector<std::shared_ptr<Buffer>> persistent_;  // live persistent buffers, allocation order
  // A receive queue: messages from one PE with one tag.
  using Source = std::pair<PeCoord, std::uint32_t>;
  // Posted receives per queue, in posting order, not yet taken: buffer and op.
  std::map<Source, std::deque<std::pair<std::shared_ptr<Buffer>, std::uint64_t>>> posted_;
  // Stores still in flight: a load of the same rows waits for them (the DMA read and
  // write channels are independent, so a load could otherwise overtake a store).
  struct PendingStore {
    const void* tensor;
    RowRange rows;
    CommandHandle cmd;
  };
  std::vector<PendingStore> stores_;
  // The last receive per queue handed to the scheduler.
  std::map<Source, CommandHandle> scheduler_receives_;
  TcmUse use_;
  std::string waiting_for_;
  // Issue costs already looked up, by the op name's address (call sites pass literals):
  // the topology's table is searched once per name instead of once per op.
  std::vector<std::pair<const char*, std::uint64_t>> charges_;
  std::uint32_t scopes_ = 0;
  std::optional<std::uint64_t> phase_;  // the op-log record of the current phase
};

}  // namespace kb::tl
