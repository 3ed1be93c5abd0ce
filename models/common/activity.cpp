#include "models/common/activity.h"

#include <stdexcept>

#include "base/topology.h"

namespace kb {

namespace {

std::vector<ActCounts> pairs_joined(const std::vector<ActCounts>& windows) {
  std::vector<ActCounts> out((windows.size() + 1) / 2, ActCounts{});
  for (std::size_t i = 0; i < windows.size(); ++i) add_into(out[i / 2], windows[i]);
  return out;
}

}  // namespace

const std::string& act_name(std::size_t act) {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> n = {"hbm_read_bytes",  "hbm_write_bytes", "tcm_read_bytes",
                                  "tcm_write_bytes", "fabric_bytes",    "noc_hop_bytes",
                                  "link_bytes",      "gemm_macs",       "cpu_ops"};
    for (const std::string& op : Topology::math_ops()) n.push_back("math_" + op + "_ops");
    if (n.size() != kActs)
      throw std::logic_error("the activity meter's events and their names disagree");
    return n;
  }();
  return names.at(act);
}

void ActivityMeter::add(std::size_t act, std::uint64_t amount, const sc_core::sc_time& at) {
  totals_[act] += amount;
  const std::uint64_t since = at > clock_->origin ? (at - clock_->origin).value() : 0;
  std::uint64_t w =
      since / (clock_->cycle.value() * window_cycles());  // one division: this runs for every event
  while (w >= kMostWindows) {
    windows_ = pairs_joined(windows_);
    ++doublings_;
    w /= 2;
  }
  if (w >= windows_.size()) windows_.resize(w + 1, ActCounts{});
  windows_[w][act] += amount;
}

std::vector<ActCounts> coarsen(std::vector<ActCounts> windows, std::uint64_t from,
                               std::uint64_t cycles) {
  for (; from < cycles; from *= 2) windows = pairs_joined(windows);
  return windows;
}

}  // namespace kb
