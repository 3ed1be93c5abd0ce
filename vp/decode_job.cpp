#include "vp/decode_job.h"

#include <memory>

namespace kb::vp {

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

// Adds the chunks of one head's device tensor, whose row r is host row first + r.
void add_chunks(TensorMap& m, const DeviceTensor& t, std::uint64_t first, const AddressMap& map) {
  for (const ShardPlacement& p : t.placements())
    if (p.rows.count > 0)
      m.chunks.push_back({map.hbm(p.cube.value, p.pe.value, p.offset), first + p.rows.begin, p.rows.count});
}

}  // namespace

DecodeJob add_decode_job(Accelerator& accelerator, gqa::DecodeConfig c) {
  c.devices = {SipId(0)};
  c.simulate.clear();
  auto plan = std::make_shared<const gqa::DecodePlan>(gqa::plan_decode(accelerator.runtime(), c, nullptr));
  const std::uint32_t m_rows = (c.h_q / c.h_kv) * c.t_q;
  const auto h_q = static_cast<std::int64_t>(c.h_q), h_kv = static_cast<std::int64_t>(c.h_kv);
  const auto t_q = static_cast<std::int64_t>(c.t_q), s = static_cast<std::int64_t>(c.s);
  const auto d = static_cast<std::int64_t>(c.d);
  DecodeJob job;
  job.q = map_of("q", {h_q, t_q, d}, c.dtype);
  job.k = map_of("k", {h_kv, s, d}, c.dtype);
  job.v = map_of("v", {h_kv, s, d}, c.dtype);
  job.o = map_of("o", {h_q, t_q, d}, c.dtype);
  const AddressMap& map = accelerator.address_map();
  std::uint64_t head = 0;
  for (const auto& params : plan->params)
    for (const gqa::DecodeGroup& g : params->groups) {
      add_chunks(job.q, g.q, head * m_rows, map);
      add_chunks(job.k, g.k, head * c.s, map);
      add_chunks(job.v, g.v, head * c.s, map);
      add_chunks(job.o, g.o, head * m_rows, map);
      ++head;
    }
  job.id = accelerator.add_job("gqa_decode", [plan](RuntimeContext& rt) { gqa::launch_decode(rt, *plan); });
  return job;
}

}  // namespace kb::vp
