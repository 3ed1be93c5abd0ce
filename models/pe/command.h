#pragma once
// The descriptor of one engine command. It travels from PeCpu through PeScheduler to
// an engine as a tlm_generic_payload carrying a CommandExtension.
#include <cstdint>
#include <string>

#include <systemc>
#include <tlm>

namespace kb {

enum class EngineKind : std::uint8_t { Dma, Gemm, Math, Ipcq };
inline constexpr std::size_t kEngineKinds = 4;
const char* engine_name(EngineKind e);

struct Command {
  enum class Kind : std::uint8_t { DmaRead, DmaWrite, Gemm, Math, Send };
  Kind kind = Kind::DmaRead;

  // DmaRead / DmaWrite: HBM address in the SIP map; TCM buffer (nullptr: timing only).
  std::uint64_t address = 0;
  std::uint64_t bytes = 0;
  std::uint8_t* tcm = nullptr;

  // Gemm: m x n x k.
  std::uint32_t m = 0, n = 0, k = 0;

  // Math: op name (a key of pe.math.cycles) over `elements` values; a row reduction
  // (`reduce_width` > 0) also pays log2(width) cycles per group of rows the lanes hold.
  std::string op;
  std::uint64_t elements = 0;
  std::uint32_t reduce_width = 0;

  // Send: destination PE in the same SIP, message tag; payload is address/bytes/tcm.
  std::uint32_t dst_cube = 0, dst_pe = 0, tag = 0;

  // Lifecycle, filled by the blocks it passes.
  sc_core::sc_time issued, started, finished;
  bool done = false;

  EngineKind engine() const;
};

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

// Identifies the sender of an IPCQ message.
class MessageExtension : public tlm::tlm_extension<MessageExtension> {
 public:
  tlm::tlm_extension_base* clone() const override { return new MessageExtension(*this); }
  void copy_from(const tlm::tlm_extension_base& other) override {
    *this = static_cast<const MessageExtension&>(other);
  }
  std::uint32_t src_cube = 0, src_pe = 0, tag = 0;
};

}  // namespace kb
