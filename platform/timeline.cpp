#include "platform/timeline.h"
#include "models/common/clock.h"

#include <algorithm>
#include <deque>
#include <map>
#include <set>
#include <tuple>

#include <nlohmann/json.hpp>

namespace kb {

namespace {

using Json = nlohmann::ordered_json;

// Engines in the order their tracks appear under a PE.
int engine_rank(Name engine) {
  static const char* const kOrder[] = {"phase", "cpu", "dma", "gemm", "math", "ipcq"};
  for (int i = 0; i < 6; ++i)
    if (engine == kOrder[i]) return i;
  return 6;
}

struct Track {
  std::uint32_t cube, pe;
  int rank;
  std::string engine;
  auto operator<=>(const Track&) const = default;
};

}  // namespace

std::string chrome_trace(const OpLog& log, const Topology& topo,
                         const std::vector<std::uint32_t>& group_of_cube,
                         const std::vector<PowerTrack>& power) {
  const double us_per_cycle = cycle_time(topo).to_seconds() * 1e6;
  // Tracks per SIP, numbered in (cube, PE, engine) order so the file is deterministic.
  std::map<std::uint32_t, std::map<Track, int>> tracks;
  auto track_of = [](const OpRecord& r) {
    return Track{r.pe.cube.value, r.pe.pe.value, engine_rank(r.engine), r.engine.str()};
  };
  // Link crossings go on a process of their own, a track per direction, not on a PE.
  auto is_link = [](const OpRecord& r) { return r.engine == "link"; };
  std::map<std::string, int> link_tracks;
  const std::uint32_t links_pid = topo.system.sips;  // after every SIP's
  for (const OpRecord& r : log.records()) {
    if (is_link(r)) link_tracks[r.kind.str()] = 0;
    else tracks[r.pe.sip.value][track_of(r)] = 0;
  }
  std::string out = "{\"displayTimeUnit\":\"ns\",\"traceEvents\":[\n";
  bool first = true;
  auto emit = [&](const Json& e) {
    if (!first) out += ",\n";
    first = false;
    out += e.dump();
  };
  // The critical-path tracks come first: track g for group g's path.
  const int groups = group_of_cube.empty() ? 1 : static_cast<int>(*std::max_element(group_of_cube.begin(), group_of_cube.end())) + 1;
  auto critical_tid = [&](const OpRecord& r) {
    return r.pe.cube.value < group_of_cube.size() ? static_cast<int>(group_of_cube[r.pe.cube.value]) : 0;
  };
  std::map<std::uint32_t, std::set<int>> has_critical;
  for (const OpRecord& r : log.records())
    if (!r.critical.empty()) has_critical[r.pe.sip.value].insert(critical_tid(r));
  for (auto& [sip, ts] : tracks) {
    emit({{"ph", "M"}, {"name", "process_name"}, {"pid", sip}, {"args", {{"name", "sip" + std::to_string(sip)}}}});
    for (const int g : has_critical[sip]) {
      emit({{"ph", "M"}, {"name", "thread_name"}, {"pid", sip}, {"tid", g},
            {"args", {{"name", groups == 1 ? std::string("critical path") : "critical path, group " + std::to_string(g)}}}});
      emit({{"ph", "M"}, {"name", "thread_sort_index"}, {"pid", sip}, {"tid", g}, {"args", {{"sort_index", g}}}});
    }
    int tid = groups - 1;
    for (auto& [t, id] : ts) {
      id = ++tid;
      const MeshPos at = topo.mesh().pos(CubeId(t.cube));
      const std::string name = "cube(" + std::to_string(at.x) + "," + std::to_string(at.y) + ").pe" +
                               std::to_string(t.pe) + "." + t.engine;
      emit({{"ph", "M"}, {"name", "thread_name"}, {"pid", sip}, {"tid", id}, {"args", {{"name", name}}}});
      emit({{"ph", "M"}, {"name", "thread_sort_index"}, {"pid", sip}, {"tid", id}, {"args", {{"sort_index", id}}}});
    }
  }
  if (!link_tracks.empty()) {
    emit({{"ph", "M"}, {"name", "process_name"}, {"pid", links_pid}, {"args", {{"name", "links"}}}});
    int tid = 0;
    for (auto& [direction, id] : link_tracks) {
      id = tid++;
      emit({{"ph", "M"}, {"name", "thread_name"}, {"pid", links_pid}, {"tid", id}, {"args", {{"name", direction}}}});
    }
  }
  auto pid_of = [&](const OpRecord& r) { return is_link(r) ? links_pid : r.pe.sip.value; };
  auto tid_of = [&](const OpRecord& r) {
    return is_link(r) ? link_tracks[r.kind.str()] : tracks[r.pe.sip.value][track_of(r)];
  };
  // The n-th send from A to B with a tag is the message the n-th such recv takes.
  std::map<std::tuple<PeCoord, PeCoord, std::uint32_t>, std::deque<const OpRecord*>> sends;
  // ... and the n-th group of link crossings from A to B with the tag (crossing 0 opens
  // one) is the links that message crossed.
  std::map<std::tuple<PeCoord, PeCoord, std::uint32_t>, std::deque<std::vector<const OpRecord*>>> crossed;
  for (const OpRecord& r : log.records()) {
    if (r.engine == "ipcq" && r.kind == "send" && r.peer) sends[{r.pe, *r.peer, r.tag}].push_back(&r);
    if (!is_link(r)) continue;
    auto& messages = crossed[{*r.peer, r.pe, r.tag}];
    if (r.hops == 0 || messages.empty()) messages.emplace_back();
    messages.back().push_back(&r);
  }
  std::uint64_t flows = 0;
  for (const OpRecord& r : log.records()) {
    Json args = {{"id", r.id}, {"bytes", r.bytes}, {"flops", r.flops}, {"shape", r.shape}, {"tag", r.tag},
                 {"tensor", r.tensor}, {"peer", r.peer ? r.peer->str() : ""}, {"issue", r.issue}};
    Json slice = {{"ph", "X"}, {"name", r.kind}, {"cat", r.engine}, {"pid", pid_of(r)}, {"tid", tid_of(r)},
                  {"ts", static_cast<double>(r.start) * us_per_cycle},
                  {"dur", static_cast<double>(r.end - r.start) * us_per_cycle}, {"args", args}};
    emit(slice);
    for (const auto& [begin, end] : r.critical) {
      slice["pid"] = r.pe.sip.value;
      slice["tid"] = critical_tid(r);
      slice["cat"] = "critical";
      slice["ts"] = static_cast<double>(begin) * us_per_cycle;
      slice["dur"] = static_cast<double>(end - begin) * us_per_cycle;
      slice["args"]["on"] = r.pe.str() + "." + r.engine.str();
      emit(slice);
    }
    if (r.engine != "ipcq" || r.kind != "recv" || !r.peer) continue;
    auto& waiting = sends[{*r.peer, r.pe, r.tag}];
    if (waiting.empty()) continue;  // a receive whose message never came
    const OpRecord& s = *waiting.front();
    waiting.pop_front();
    ++flows;
    emit({{"ph", "s"}, {"name", "message"}, {"cat", "message"}, {"id", flows}, {"pid", s.pe.sip.value},
          {"tid", tid_of(s)}, {"ts", static_cast<double>(s.start) * us_per_cycle}});
    if (r.peer->sip != r.pe.sip)
      if (auto& messages = crossed[{s.pe, r.pe, r.tag}]; !messages.empty()) {
        for (const OpRecord* c : messages.front())
          emit({{"ph", "t"}, {"name", "message"}, {"cat", "message"}, {"id", flows}, {"pid", links_pid},
                {"tid", tid_of(*c)}, {"ts", static_cast<double>(c->start) * us_per_cycle}});
        messages.pop_front();
      }
    emit({{"ph", "f"}, {"bp", "e"}, {"name", "message"}, {"cat", "message"}, {"id", flows}, {"pid", r.pe.sip.value},
          {"tid", tid_of(r)}, {"ts", static_cast<double>(r.end) * us_per_cycle}});
  }
  for (const PowerTrack& t : power)
    for (std::size_t w = 0; w < t.watts.size(); ++w) {
      Json args;
      for (std::size_t c = 0; c < kEnergyCauses; ++c) args[kEnergyCauseNames[c]] = t.watts[w][c];
      emit({{"ph", "C"},
            {"name", "power (W)"},
            {"pid", t.sip.value},
            {"ts", static_cast<double>(w * t.window_cycles) * us_per_cycle},
            {"args", args}});
    }
  out += "\n]}\n";
  return out;
}

}  // namespace kb
