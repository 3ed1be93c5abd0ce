#pragma once
// Waveform: the value changes a VCD shows (per engine busy and queue depth, per link
// busy), recorded by the models as they happen and written as VCD after the run.
// Models hold a null pointer unless a waveform is attached, so a run without --vcd
// pays one untaken branch per event. A filter of module-path globs keeps a 512-PE run
// from writing every signal.
#include <cstdint>
#include <ostream>
#include <string>
#include <vector>

#include <systemc>

namespace kb {

class Waveform {
 public:
  // `filter`: comma-separated globs on module paths (e.g. "sip0.cube3.*"), "" for all.
  // `root`: the prefix of SystemC names that paths leave out (e.g. "system.").
  Waveform(const std::string& filter, std::string root);

  // Whether the module at SystemC name `module` is traced.
  bool wants(const std::string& module) const;
  // A signal `name` of `width` bits (1: a wire) of the module, starting at 0; -1 when
  // the filter leaves the module out.
  int add(const std::string& module, const std::string& name, unsigned width);
  void set(int signal, const sc_core::sc_time& t, std::uint64_t value) {
    changes_.push_back({(t - origin_).value(), static_cast<std::uint32_t>(signal), value});
  }
  // Later changes are recorded relative to `origin` (the start of the SIP being run).
  void set_origin(const sc_core::sc_time& origin) { origin_ = origin; }

  std::size_t signal_count() const { return signals_.size(); }
  // The VCD: a scope per module-path component, the changes in time order (at one
  // instant the last recorded value wins, and an unchanged value is not repeated).
  void write_vcd(std::ostream& out) const;

 private:
  struct Signal {
    std::string path;  // module path without the root
    std::string name;
    unsigned width;
  };
  struct Change {
    std::uint64_t time;  // in units of the SystemC time resolution
    std::uint32_t signal;
    std::uint64_t value;
  };
  std::string path_of(const std::string& module) const;

  std::vector<std::string> globs_;
  std::string root_;
  std::vector<Signal> signals_;
  std::vector<Change> changes_;
  sc_core::sc_time origin_ = sc_core::SC_ZERO_TIME;
};

}  // namespace kb
