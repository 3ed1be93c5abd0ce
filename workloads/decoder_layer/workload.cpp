// decoder_layer as a workload (workloads/models/step_workload.h).
#include "workloads/models/step_workload.h"

namespace kb::workloads {

const Workload& decoder_layer_workload() {
  static const StepWorkload w(false);
  return w;
}

}  // namespace kb::workloads
