// HBM <-> TCM: rows of a device tensor as a `ref`, loaded or stored by the DMA.
#include "kernels/tl/ctx.h"

namespace kb::tl {

RowRange Ctx::shard_rows(const DeviceTensor& t) const {
  if (t.device() != sip()) return {};
  const ShardPlacement* sh = t.shard_at(cube(), pe());
  return sh ? sh->rows : RowRange{};
}

namespace {
Shape rows_shape(const DeviceTensor& t, std::uint64_t rows) {
  Shape s{static_cast<std::int64_t>(rows)};
  if (t.shape().size() > 1) s.insert(s.end(), t.shape().begin() + 1, t.shape().end());
  return s;
}
}  // namespace

Tensor Ctx::ref(const DeviceTensor& t, RowRange rows) {
  Tensor x = hbm_rows("ref", t, rows);
  record_cpu("ref", "ref", t.name());
  return x;
}

Tensor Ctx::hbm_rows(std::string_view op, const DeviceTensor& t, RowRange rows) const {
  if (!t.valid()) fail(op, "empty device tensor");
  if (t.device() != sip())
    fail(op, "'" + t.name() + "' lives on sip" + std::to_string(t.device().value) + "; this PE is on sip" +
                 std::to_string(sip().value));
  // The rows must lie in one shard: this PE's own copy if it holds them, else the first
  // shard that does (its HBM is reached over the cube fabric or the NOC).
  auto holds = [&](const ShardPlacement* p) {
    return p && p->rows.count > 0 && rows.begin >= p->rows.begin && rows.end() <= p->rows.end();
  };
  const ShardPlacement* sh = t.shard_at(cube(), pe());
  if (!holds(sh)) {
    sh = nullptr;
    for (const ShardPlacement& p : t.placements())
      if (holds(&p)) {
        sh = &p;
        break;
      }
  }
  if (!sh)
    fail(op, "rows [" + std::to_string(rows.begin) + ", " + std::to_string(rows.end()) + ") of '" + t.name() +
                 "' " + shape_text(t.shape()) + " do not lie within one shard (placed " + t.policy().describe() +
                 ")");
  auto r = std::make_shared<HbmRef>();
  r->tensor = t;
  r->rows = rows;
  r->address = map_.hbm(sh->cube.value, sh->pe.value,
                        sh->offset + (rows.begin - sh->rows.begin) * t.row_bytes());
  Tensor x;
  x.ref_ = std::move(r);
  x.shape_ = rows_shape(t, rows.count);
  x.dtype_ = t.dtype();
  return x;
}

Tensor Ctx::load(const DeviceTensor& t, RowRange rows, const Tensor* into) {
  const Tensor src = hbm_rows("load", t, rows);
  charge("load");
  Tensor x;
  if (into) {
    check(*into, "load", "into");
    check_contiguous(*into, "load");
    if (into->dtype() != t.dtype() || into->cols() != src.cols() || into->rows() < src.rows())
      fail("load", "into is " + shape_text(into->shape()) + " " + dtype_name(into->dtype()) + ", rows of '" +
                       t.name() + "' are " + shape_text(src.shape()) + " " + dtype_name(t.dtype()));
    prepare_write(*into);
    x = *into;
    x.shape_ = src.shape_;
  } else {
    x = alloc(src.shape_, t.dtype(), Arena::Scratch, t.name());
  }
  std::erase_if(stores_, [](const PendingStore& st) { return st.cmd->done; });
  for (const PendingStore& st : stores_)
    if (st.tensor == &t.placements() && st.rows.begin < rows.end() && rows.begin < st.rows.end())
      block_on(*st.cmd, [&] { return "a store to rows of '" + t.name() + "' before loading them"; });
  add_writer(x, issue_dma(Command::Kind::DmaRead, "load", src.ref_->address, t, x));
  return x;
}

void Ctx::store(const DeviceTensor& t, RowRange rows, const Tensor& x) {
  const Name op = "store";
  const Tensor dst = hbm_rows(op, t, rows);
  charge("store");
  consume(x, op);
  if (x.is_ref()) fail(op, "the value stored must be in TCM, not a ref");
  check_contiguous(x, op);
  if (x.dtype() != t.dtype())
    fail(op, std::string("dtype mismatch: storing ") + dtype_name(x.dtype()) + " into " +
                 dtype_name(t.dtype()) + " tensor '" + t.name() + "' (cast it first)");
  if (x.elements() != dst.elements() || x.cols() != dst.cols())
    fail(op, "shape mismatch: value " + shape_text(x.shape()) + " into rows of '" + t.name() +
                 "' shaped " + shape_text(dst.shape()));
  const Command& cmd = issue_dma(Command::Kind::DmaWrite, op, dst.ref_->address, t, x);
  add_reader(x, cmd);
  stores_.push_back({&t.placements(), rows, CommandHandle(cmd)});
}

Command& Ctx::issue_dma(Command::Kind kind, Name op, std::uint64_t address, const DeviceTensor& t,
                        const Tensor& x) {
  Command c;
  c.kind = kind;
  c.address = address;
  c.bytes = x.bytes();
  if (data_) c.tcm = pe_.tcm.data(view_of(x).offset);
  OpRecord r;
  r.engine = "dma";
  r.kind = op;
  r.bytes = c.bytes;
  r.tensor = t.name();
  r.shape = shape_text(x.shape());
  return issue(std::move(c), std::move(r));
}

}  // namespace kb::tl
