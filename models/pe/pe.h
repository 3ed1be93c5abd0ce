#pragma once
// One PE: PeCpu -> PeScheduler -> {PeDma, PeGemm, PeMath, PeIpcq}, and PeTcm.
// Outward it has the DMA's and the IPCQ's initiator sockets and the IPCQ mailbox.
#include "base/ids.h"
#include "models/pe/pe_cpu.h"
#include "models/pe/pe_dma.h"
#include "models/pe/pe_gemm.h"
#include "models/pe/pe_ipcq.h"
#include "models/pe/pe_math.h"
#include "models/pe/pe_scheduler.h"
#include "models/pe/pe_tcm.h"

namespace kb {

class Pe : public sc_core::sc_module {
 public:
  Pe(const sc_core::sc_module_name& name, const Topology& topo, const AddressMap& map,
     PeCoord self);

  PeCoord coord() const { return self_; }

  PeTcm tcm;  // first: the engines below work on it
  PeCpu cpu;
  PeScheduler scheduler;
  PeDma dma;
  PeGemm gemm;
  PeMath math;
  PeIpcq ipcq;

 private:
  PeCoord self_;
};

}  // namespace kb
