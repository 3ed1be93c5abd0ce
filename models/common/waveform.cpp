#include "models/common/waveform.h"

#include <fnmatch.h>

#include <algorithm>
#include <map>
#include <numeric>
#include <sstream>

namespace kb {

Waveform::Waveform(const std::string& filter, std::string root) : root_(std::move(root)) {
  std::stringstream in(filter);
  for (std::string glob; std::getline(in, glob, ',');)
    if (!glob.empty()) globs_.push_back(glob);
}

std::string Waveform::path_of(const std::string& module) const {
  return module.starts_with(root_) ? module.substr(root_.size()) : module;
}

bool Waveform::wants(const std::string& module) const {
  if (globs_.empty()) return true;
  const std::string path = path_of(module);
  return std::any_of(globs_.begin(), globs_.end(),
                     [&](const std::string& g) { return fnmatch(g.c_str(), path.c_str(), 0) == 0; });
}

int Waveform::add(const std::string& module, const std::string& name, unsigned width) {
  if (!wants(module)) return -1;
  signals_.push_back({path_of(module), name, width});
  return static_cast<int>(signals_.size() - 1);
}

namespace {

// VCD identifier codes: printable ASCII from '!' to '~', base 94.
std::string code_of(std::size_t i) {
  std::string s;
  do {
    s += static_cast<char>('!' + i % 94);
    i /= 94;
  } while (i > 0);
  return s;
}

std::string value_text(unsigned width, std::uint64_t v, const std::string& code) {
  std::string out(1, width == 1 ? (v ? '1' : '0') : 'b');
  if (width > 1) {
    std::string bits;
    for (; v > 0; v >>= 1) bits.insert(bits.begin(), (v & 1) ? '1' : '0');
    out.append(bits.empty() ? std::string(1, '0') : bits).push_back(' ');
  }
  return out.append(code);
}

std::vector<std::string> components(const std::string& path) {
  std::vector<std::string> out;
  std::stringstream in(path);
  for (std::string c; std::getline(in, c, '.');) out.push_back(c);
  return out;
}

}  // namespace

void Waveform::write_vcd(std::ostream& out) const {
  out << "$date kernbench $end\n$version kernbench (SystemC " << sc_core::sc_release() << ") $end\n";
  out << "$timescale " << sc_core::sc_get_time_resolution().to_string() << " $end\n";
  // Scopes: signals grouped by module path, the paths in order, opening and closing
  // only the components that differ from the previous path.
  std::vector<std::size_t> order(signals_.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(),
                   [&](std::size_t a, std::size_t b) { return signals_[a].path < signals_[b].path; });
  std::vector<std::string> open;
  for (const std::size_t i : order) {
    const std::vector<std::string> want = components(signals_[i].path);
    std::size_t common = 0;
    while (common < open.size() && common < want.size() && open[common] == want[common]) ++common;
    for (std::size_t k = open.size(); k > common; --k) out << "$upscope $end\n";
    for (std::size_t k = common; k < want.size(); ++k) out << "$scope module " << want[k] << " $end\n";
    open = want;
    const Signal& s = signals_[i];
    out << "$var " << (s.width == 1 ? "wire" : "reg") << " " << s.width << " " << code_of(i) << " " << s.name
        << " $end\n";
  }
  for (std::size_t k = open.size(); k > 0; --k) out << "$upscope $end\n";
  out << "$enddefinitions $end\n#0\n$dumpvars\n";
  for (std::size_t i = 0; i < signals_.size(); ++i) out << value_text(signals_[i].width, 0, code_of(i)) << "\n";
  out << "$end\n";

  std::vector<std::size_t> by_time(changes_.size());
  std::iota(by_time.begin(), by_time.end(), 0);
  std::stable_sort(by_time.begin(), by_time.end(),
                   [&](std::size_t a, std::size_t b) { return changes_[a].time < changes_[b].time; });
  std::vector<std::uint64_t> value(signals_.size(), 0);
  for (std::size_t i = 0; i < by_time.size();) {
    const std::uint64_t t = changes_[by_time[i]].time;
    std::map<std::uint32_t, std::uint64_t> last;  // the instant's final value per signal
    for (; i < by_time.size() && changes_[by_time[i]].time == t; ++i)
      last[changes_[by_time[i]].signal] = changes_[by_time[i]].value;
    bool stamped = false;
    for (const auto& [sig, v] : last) {
      if (value[sig] == v) continue;
      if (!stamped) out << "#" << t << "\n";
      stamped = true;
      value[sig] = v;
      out << value_text(signals_[sig].width, v, code_of(sig)) << "\n";
    }
  }
}

}  // namespace kb
