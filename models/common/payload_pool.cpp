#include "models/common/payload_pool.h"

namespace kb {

PayloadPool::~PayloadPool() {
  // Extensions set with set_auto_extension/set_extension are ours to free.
  for (auto& gp : all_) gp->free_all_extensions();
}

tlm::tlm_generic_payload* PayloadPool::allocate() {
  tlm::tlm_generic_payload* gp;
  if (free_.empty()) {
    all_.push_back(std::make_unique<tlm::tlm_generic_payload>(this));
    gp = all_.back().get();
    if (timing_only_) gp->set_extension(new TimingOnly);
  } else {
    gp = free_.back();
    free_.pop_back();
  }
  gp->acquire();
  return gp;
}

void PayloadPool::free(tlm::tlm_generic_payload* gp) {
  gp->reset();  // drops auto extensions, keeps the pool's own
  gp->set_response_status(tlm::TLM_INCOMPLETE_RESPONSE);
  gp->set_byte_enable_ptr(nullptr);
  gp->set_byte_enable_length(0);
  gp->set_streaming_width(0);
  gp->set_dmi_allowed(false);
  free_.push_back(gp);
}

}  // namespace kb
