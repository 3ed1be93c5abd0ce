#pragma once
// A memory manager for tlm_generic_payloads: initiators take payloads from the pool,
// and the last release() returns them, so forwarding interconnects can acquire/release.
#include <memory>
#include <vector>

#include <tlm>

namespace kb {

// Marks a payload whose initiator runs in timing mode: targets model the timing and
// leave the data buffer alone. A third-party target ignores it and still works.
struct TimingOnly : tlm::tlm_extension<TimingOnly> {
  tlm::tlm_extension_base* clone() const override { return new TimingOnly(*this); }
  void copy_from(const tlm::tlm_extension_base&) override {}
};

// The payload's extension of type E, made the first time and kept for the payload's life
// (a pooled payload then carries its extensions from use to use, allocating nothing).
// For a pool whose payloads all carry E: a kept extension is not cleared on free.
template <class E>
E& kept_extension(tlm::tlm_generic_payload& gp) {
  if (E* e = gp.get_extension<E>()) return *e;
  E* e = new E;
  gp.set_extension(e);
  return *e;
}

class PayloadPool : public tlm::tlm_mm_interface {
 public:
  // `timing_only`: every payload of the pool carries a TimingOnly extension for life
  // (set once, so a burst costs no allocation).
  explicit PayloadPool(bool timing_only = false) : timing_only_(timing_only) {}
  PayloadPool(const PayloadPool&) = delete;
  PayloadPool& operator=(const PayloadPool&) = delete;
  ~PayloadPool() override;
  // A reset payload with this pool as its memory manager, acquired once.
  tlm::tlm_generic_payload* allocate();
  void free(tlm::tlm_generic_payload* gp) override;

 private:
  bool timing_only_;
  std::vector<std::unique_ptr<tlm::tlm_generic_payload>> all_;
  std::vector<tlm::tlm_generic_payload*> free_;
};

}  // namespace kb
