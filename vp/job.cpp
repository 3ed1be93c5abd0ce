#include "vp/job.h"

#include <algorithm>
#include <cstring>
#include <memory>
#include <optional>

#include "base/units.h"
#include "workloads/attention/placement.h"
#include "workloads/gqa_decode/decode_run.h"
#include "workloads/gqa_decode_batch/batch_run.h"
#include "workloads/gqa_prefill/prefill_run.h"

namespace kb::vp {

using gqa::HeadPlacement;
using gqa::TensorRegions;

namespace {

TensorMap map_of(const std::string& name, Shape shape, DType dtype) {
  TensorMap m;
  m.name = name;
  m.dtype = dtype;
  m.row_elements = static_cast<std::uint64_t>(shape.back());
  m.rows = static_cast<std::uint64_t>(shape[0] * shape[1]);
  m.shape = std::move(shape);
  return m;
}

constexpr std::uint64_t kNoRow = ~std::uint64_t{0};

// Adds the chunks of a device tensor whose row r holds host row host_row(r) (kNoRow: a
// padding row), one chunk per run of consecutive host rows in a channel.
template <class HostRow>
void add_chunks(TensorMap& m, const DeviceTensor& t, HostRow host_row, const AddressMap& map) {
  for (const ShardPlacement& p : t.placements()) {
    std::optional<Chunk> run;
    auto flush = [&] {
      if (run) m.chunks.push_back(*run);
      run.reset();
    };
    for (std::uint64_t r = p.rows.begin; r < p.rows.end(); ++r) {
      const std::uint64_t h = host_row(r);
      if (run && h != kNoRow && h == run->first_row + run->rows) {
        ++run->rows;
        continue;
      }
      flush();
      if (h != kNoRow)
        run = Chunk{map.hbm(p.cube.value, p.pe.value, p.offset + (r - p.rows.begin) * t.row_bytes()), h, 1};
    }
    flush();
  }
}

// One group's Q, K, V and O: rows of Q and O map to host rows by qo(r), of K and V by kv(r).
template <class Group, class QoRow, class KvRow>
void add_group(JobLayout& l, const Group& g, QoRow qo, KvRow kv, const AddressMap& map) {
  add_chunks(l.q, g.q, qo, map);
  add_chunks(l.k, g.k, kv, map);
  add_chunks(l.v, g.v, kv, map);
  add_chunks(l.o, g.o, qo, map);
}

// The descriptor's attention shape into a kernel's configuration.
void take_shape(const JobDescriptor& d, gqa::AttentionShape& a) {
  a.h_q = d.h_q;
  a.h_kv = d.h_kv;
  a.d = d.d;
  a.t_q = d.t_q;
  a.s = d.s;
  a.causal = d.causal;
  a.dtype = d.dtype;
}

// The maps of Q, K, V and O, without chunks: q and o [H_q, T_q, d], k and v [H_kv, S, d].
JobLayout empty_layout(const gqa::AttentionShape& a) {
  const auto h_q = static_cast<std::int64_t>(a.h_q), h_kv = static_cast<std::int64_t>(a.h_kv);
  const auto t_q = static_cast<std::int64_t>(a.t_q), s = static_cast<std::int64_t>(a.s);
  const auto d = static_cast<std::int64_t>(a.d);
  JobLayout l;
  l.q = map_of("q", {h_q, t_q, d}, a.dtype);
  l.k = map_of("k", {h_kv, s, d}, a.dtype);
  l.v = map_of("v", {h_kv, s, d}, a.dtype);
  l.o = map_of("o", {h_q, t_q, d}, a.dtype);
  return l;
}

// C and P of a decode's groups: the descriptor's, or where 0 the default rule's (after
// the shape's own checks, whose messages come first).
template <class Config>
void take_placement(const JobDescriptor& d, const Topology& topo, Config& c) {
  gqa::validate_shape(c);
  const HeadPlacement p = gqa::place_heads(c.h_kv, 1, topo, false, d.cubes ? std::optional(d.cubes) : std::nullopt,
                                           d.pes ? std::optional(d.pes) : std::nullopt);
  c.cubes = d.cubes ? d.cubes : p.cubes;
  c.pes = d.pes ? d.pes : p.pes;
}

PlannedJob plan_decode_job(RuntimeContext& rt, const JobDescriptor& d, const TensorRegions& at) {
  gqa::DecodeConfig c;
  take_shape(d, c);
  c.devices = {SipId(0)};
  take_placement(d, rt.system().topology(), c);
  auto plan = std::make_shared<const gqa::DecodePlan>(gqa::plan_decode(rt, c, nullptr, at));
  const std::uint64_t m_rows = static_cast<std::uint64_t>(c.h_q / c.h_kv) * c.t_q;
  PlannedJob job;
  job.kernel = "gqa_decode";
  job.layout = empty_layout(c);
  JobLayout& l = job.layout;
  const AddressMap& map = rt.system().sip(SipId(0)).address_map();
  std::uint64_t head = 0;
  for (const auto& params : plan->params)
    for (const gqa::DecodeGroup& g : params->groups) {
      add_group(
          l, g, [&](std::uint64_t r) { return head * m_rows + r; }, [&](std::uint64_t r) { return head * c.s + r; },
          map);
      ++head;
    }
  job.launch = [plan](RuntimeContext& r) { gqa::launch_decode(r, *plan); };
  return job;
}

PlannedJob plan_prefill_job(RuntimeContext& rt, const JobDescriptor& d, const TensorRegions& at) {
  gqa::PrefillConfig c;
  take_shape(d, c);
  c.cubes = d.cubes;
  c.pes = d.pes;
  c.devices = {SipId(0)};
  auto placement = std::make_shared<const gqa::PrefillPlacement>(gqa::plan_prefill(rt, c, nullptr, at));
  const gqa::PrefillPlan& plan = *placement->plan;
  const std::uint32_t g = c.g(), t_q = c.q_len();
  PlannedJob job;
  job.kernel = "gqa_prefill";
  job.layout = empty_layout(c.shape());
  JobLayout& l = job.layout;
  const AddressMap& map = rt.system().sip(SipId(0)).address_map();
  TensorMap state;  // the kernel's scratch, its rows numbered group after group
  for (const gqa::PrefillPlacement::Placed& p : placement->placed) {
    // The group's Q and O rows in the plan's tile order, as rows of the host tensors.
    std::vector<std::uint64_t> host(p.group.q.rows(), kNoRow);
    gqa::for_each_row(plan, p.group.replica, [&](std::uint64_t row, std::uint32_t head, std::uint64_t pos) {
      host[row] = (static_cast<std::uint64_t>(p.head) * g + head) * t_q + pos;
    });
    add_group(
        l, p.group, [&](std::uint64_t r) { return host[r]; }, [&](std::uint64_t r) { return p.head * c.s + r; }, map);
    if (p.group.state.valid()) {
      const std::uint64_t first = state.rows;
      add_chunks(state, p.group.state, [&](std::uint64_t r) { return first + r; }, map);
      state.rows += p.group.state.rows();
      state.row_elements = p.group.state.cols();
    }
  }
  if (state.rows > 0) {
    l.state = map_of("state", {static_cast<std::int64_t>(state.rows), 1, static_cast<std::int64_t>(state.row_elements)},
                     DType::fp32);
    l.state.chunks = std::move(state.chunks);
  }
  job.launch = [placement](RuntimeContext& r) { gqa::launch_prefill(r, *placement); };
  return job;
}

PlannedJob plan_batch_job(RuntimeContext& rt, const JobDescriptor& d, const TensorRegions& at) {
  gqa::BatchConfig c;
  take_shape(d, c);
  c.lens = d.lens;
  if (c.lens.empty()) throw workloads::ConfigError("the length list is empty: a batch needs at least one request");
  c.s = *std::max_element(c.lens.begin(), c.lens.end());
  c.page_rows = d.page_rows;
  c.devices = {SipId(0)};
  take_placement(d, rt.system().topology(), c);
  auto plan = std::make_shared<const gqa::BatchPlan>(gqa::plan_decode_batch(rt, c, nullptr, at));
  const std::uint64_t g = c.g(), t_q = c.t_q, b = c.lens.size();
  std::vector<std::uint64_t> first(b, 0);  // each request's first row in K and V
  for (std::size_t r = 1; r < b; ++r) first[r] = first[r - 1] + c.lens[r - 1];
  const std::uint64_t total = first.back() + c.lens.back();
  PlannedJob job;
  job.kernel = "gqa_decode_batch";
  gqa::AttentionShape all = c;  // Q and O [B * H_q, T_q, d]; K and V [H_kv, sum(L), d]
  all.h_q = static_cast<std::uint32_t>(b * c.h_q);
  all.s = total;
  job.layout = empty_layout(all);
  JobLayout& l = job.layout;
  l.q.shape = l.o.shape = {static_cast<std::int64_t>(b), c.h_q, c.t_q, c.d};
  const AddressMap& map = rt.system().sip(SipId(0)).address_map();
  std::uint64_t h = 0;
  for (const auto& params : plan->params)
    for (const gqa::DecodeGroup& grp : params->groups) {
      // Q and O rows: request, then the group's query head, then position.
      const auto qo = [&](std::uint64_t r) {
        const std::uint64_t request = r / (g * t_q), j = r / t_q % g, pos = r % t_q;
        return (request * c.h_q + h * g + j) * t_q + pos;
      };
      // K and V rows: each rank's pages in slot order, padding after the last.
      const auto kv = [&](std::uint64_t r) {
        const std::uint64_t rank = r / plan->rank_rows, slot = r % plan->rank_rows / c.page_rows;
        if (slot >= plan->kv.ranks[rank].size()) return kNoRow;
        const gqa::Page& page = plan->kv.ranks[rank][slot];
        const std::uint64_t i = r % c.page_rows;
        return i < page.rows ? h * total + first[page.request] + page.row0 + i : kNoRow;
      };
      add_group(l, grp, qo, kv, map);
      ++h;
    }
  job.launch = [plan](RuntimeContext& r) { gqa::launch_decode_batch(r, *plan); };
  return job;
}

// Every pair of tensors (and taken bytes) that share bytes of a channel: Overlap.
void check_overlap(const std::vector<std::pair<std::string, const HbmRegion*>>& regions,
                   const std::vector<TakenBytes>& taken) {
  std::vector<TakenBytes> spans = taken;
  for (const auto& [name, region] : regions)
    for (const auto& [channel, end] : region->end)
      if (end > region->base) spans.push_back({name, channel, region->base, end});
  for (std::size_t i = 0; i < spans.size(); ++i)
    for (std::size_t j = i + 1; j < spans.size(); ++j) {
      const TakenBytes &a = spans[i], &b = spans[j];
      if (a.what != b.what && a.channel == b.channel && a.begin < b.end && b.begin < a.end)
        throw JobError(ErrorCode::Overlap, a.what + " [" + units::format_hex(a.begin) + ", " + units::format_hex(a.end) + ") and " + b.what + " [" +
                                               units::format_hex(b.begin) + ", " + units::format_hex(b.end) + ") share bytes in the channel of " +
                                               a.channel.str());
    }
}

}  // namespace

PlannedJob plan_job(RuntimeContext& rt, const JobDescriptor& d, const std::vector<TakenBytes>& taken) {
  const std::uint64_t capacity = rt.system().topology().cube.hbm.capacity;
  std::vector<std::pair<std::string, std::uint64_t>> offsets = {{"q", d.q}, {"k", d.k}, {"v", d.v}, {"o", d.o}};
  if (d.kernel == Kernel::GqaPrefill) offsets.emplace_back("state", d.state);
  for (const auto& [name, offset] : offsets) {
    if (offset % kShardAlign != 0)
      throw JobError(ErrorCode::TensorAlign, "tensor " + name + " at offset " + units::format_hex(offset) + " is not a multiple of " +
                                                 std::to_string(kShardAlign) + " bytes");
    if (offset >= capacity)
      throw JobError(ErrorCode::TensorRange, "tensor " + name + " at offset " + units::format_hex(offset) +
                                                 " is outside its channels (" + units::format_hex(capacity) + " bytes each)");
  }
  HbmRegion q(d.q), k(d.k), v(d.v), o(d.o), state(d.state);
  const TensorRegions at{&q, &k, &v, &o, &state};
  PlannedJob job;
  try {
    switch (d.kernel) {
      case Kernel::GqaDecode: job = plan_decode_job(rt, d, at); break;
      case Kernel::GqaPrefill: job = plan_prefill_job(rt, d, at); break;
      case Kernel::GqaDecodeBatch: job = plan_batch_job(rt, d, at); break;
    }
  } catch (const workloads::ConfigError& e) {
    throw JobError(ErrorCode::Shape, e.what());
  } catch (const RunError& e) {  // a tensor past the end of its channel
    throw JobError(ErrorCode::TensorRange, e.what());
  } catch (const std::exception& e) {  // anything else the shape's checks let through
    throw JobError(ErrorCode::Shape, e.what());
  }
  check_overlap({{"q", &q}, {"k", &k}, {"v", &v}, {"o", &o}, {"state", &state}}, taken);
  return job;
}

std::vector<std::uint8_t> layout_table(const JobLayout& l) {
  std::vector<std::uint8_t> out(kTableHeaderBytes);
  auto put = [&out](std::size_t at, auto v) { std::memcpy(out.data() + at, &v, sizeof v); };
  std::uint32_t tensor = 0, entries = 0;
  for (const TensorMap* m : {&l.q, &l.k, &l.v, &l.o, &l.state}) {
    for (const Chunk& c : m->chunks) {
      const std::size_t at = out.size();
      out.resize(at + kTableEntryBytes);
      put(at, tensor);
      put(at + 4, std::uint32_t{0});
      put(at + 8, c.first_row);
      put(at + 16, c.rows);
      put(at + 24, c.address);
      ++entries;
    }
    ++tensor;
  }
  put(0, entries);
  put(4, static_cast<std::uint32_t>(kTableEntryBytes));
  put(8, static_cast<std::uint64_t>(out.size()));
  return out;
}

}  // namespace kb::vp
