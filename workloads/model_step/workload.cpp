// model_step as a workload (workloads/models/step_workload.h).
#include "workloads/models/step_workload.h"

namespace kb::workloads {

const Workload& model_step_workload() {
  static const StepWorkload w(true);
  return w;
}

}  // namespace kb::workloads
