#include "models/pe/command.h"

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

EngineKind Command::engine() const {
  switch (kind) {
    case Kind::DmaRead:
    case Kind::DmaWrite: return EngineKind::Dma;
    case Kind::Gemm: return EngineKind::Gemm;
    case Kind::Math: return EngineKind::Math;
    case Kind::Send: return EngineKind::Ipcq;
  }
  return EngineKind::Dma;
}

Command& CommandExtension::of(const tlm::tlm_generic_payload& gp) {
  const auto* ext = gp.get_extension<CommandExtension>();
  if (ext == nullptr || ext->command == nullptr)
    SC_REPORT_FATAL("kernbench", "engine command payload without a CommandExtension");
  return *ext->command;
}

}  // namespace kb
