#include "models/pe/command.h"

#include "models/common/payload_pool.h"

namespace kb {

const char* engine_name(EngineKind e) {
  switch (e) {
    case EngineKind::Dma: return "dma";
    case EngineKind::Gemm: return "gemm";
    case EngineKind::Math: return "math";
    case EngineKind::Ipcq: return "ipcq";
  }
  return "?";
}

const char* math_op_name(MathOp op) {
  static const char* names[] = {"add",    "sub",    "mul",   "div",  "maximum", "exp",     "where",
                                "copy",   "scale",  "rowmax", "rowsum", "trans", "fill", "exp_diff",
                                "causal_bias", "causal_mask", "fma", "rsqrt", "argmax"};
  return names[static_cast<int>(op)];
}

const char* math_cost_key(MathOp op) {
  switch (op) {
    case MathOp::Add:
    case MathOp::RowSum: return "add";
    case MathOp::Sub: return "sub";
    case MathOp::Mul:
    case MathOp::Scale: return "mul";
    case MathOp::Div: return "div";
    case MathOp::Maximum:
    case MathOp::RowMax:
    case MathOp::RowArgMax: return "max";
    case MathOp::Exp:
    case MathOp::ExpDiff: return "exp";
    case MathOp::CausalBias:
    case MathOp::CausalMask: return "where";
    case MathOp::Where: return "where";
    case MathOp::Copy:
    case MathOp::Trans:
    case MathOp::Fill: return "copy";
    case MathOp::Fma: return "fma";
    case MathOp::Rsqrt: return "rsqrt";
  }
  return "copy";
}

EngineKind Command::engine() const {
  switch (kind) {
    case Kind::DmaRead:
    case Kind::DmaWrite: return EngineKind::Dma;
    case Kind::Gemm:
    case Kind::Composite:
    case Kind::Sequence: return EngineKind::Gemm;
    case Kind::Math: return EngineKind::Math;
    case Kind::Send: return EngineKind::Ipcq;
  }
  return EngineKind::Dma;
}

CommandPool::~CommandPool() {
  for (Command& c : slots_) {  // handles between slots go first: no slot outlives one it holds
    c.waits_for.clear();
    c.after = {};
  }
}

Command& CommandPool::take(Command&& c) {
  Command* slot = nullptr;
  if (free_.empty()) {
    slot = &slots_.emplace_back();
    slot->slot.pool = this;
  } else {
    slot = free_.back();
    free_.pop_back();
  }
  *slot = std::move(c);
  return *slot;
}

void CommandPool::retire(Command& c) {
  if (c.slot.holds == 0) release(c);
}

void CommandPool::release(const Command& c) {
  Command& free = *const_cast<Command*>(&c);  // one of slots_
  free.waits_for.clear();  // what it held is free to go too
  free.after = {};
  free_.push_back(&free);
}

tlm::tlm_generic_payload* command_payload(PayloadPool& pool, Command& cmd) {
  tlm::tlm_generic_payload* gp = pool.allocate();
  gp->set_command(tlm::TLM_IGNORE_COMMAND);
  gp->set_data_ptr(nullptr);
  gp->set_data_length(0);
  kept_extension<CommandExtension>(*gp).command = &cmd;  // the pool carries only commands
  return gp;
}

Command* admit_command(tlm::tlm_generic_payload& gp) {
  const auto* ext = gp.get_extension<CommandExtension>();
  if (ext == nullptr || ext->command == nullptr) {
    gp.set_response_status(tlm::TLM_COMMAND_ERROR_RESPONSE);
    return nullptr;
  }
  if (gp.get_byte_enable_ptr() != nullptr) {
    gp.set_response_status(tlm::TLM_BYTE_ENABLE_ERROR_RESPONSE);
    return nullptr;
  }
  return ext->command;
}

Command& CommandExtension::of(const tlm::tlm_generic_payload& gp) {
  const auto* ext = gp.get_extension<CommandExtension>();
  if (ext == nullptr || ext->command == nullptr)
    SC_REPORT_FATAL("kernbench", "engine command payload without a CommandExtension");
  return *ext->command;
}

}  // namespace kb
