#pragma once
// The whole-model workloads (docs/models.md): `decoder_layer`, one layer of a model's
// decode step, checkable in data mode against fp64; `model_step`, the whole step
// (embedding, the layers, the final norm and the LM head), with N representative layers
// simulated and the rest scaled from them.
#include "workloads/workload.h"

namespace kb::workloads {

class StepWorkload : public Workload {
 public:
  explicit StepWorkload(bool whole_model) : whole_(whole_model) {}
  std::string name() const override { return whole_ ? "model_step" : "decoder_layer"; }
  std::string summary() const override;
  std::vector<const KnobSet*> knobs() const override;
  std::unique_ptr<Job> configure(const Values& v, const Setup& setup) const override;
  void derive(Result& r, const Topology& topo) const override;
  std::string report(const Result& r, const Topology& topo) const override;

 private:
  bool whole_;
};

}  // namespace kb::workloads
