#include "models/pe/pe_math.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>

namespace kb {

PeMath::PeMath(const sc_core::sc_module_name& name, const Topology& topo, PeTcm& tcm)
    : PeEngine(name, topo, 1, Cause::Math), tcm_(tcm) {
  const std::vector<std::string>& keys = Topology::math_ops();
  if (keys.size() != kMathActs)
    throw std::logic_error("the activity meter counts " + std::to_string(kMathActs) +
                           " MATH ops, the topology has " + std::to_string(keys.size()));
  for (std::size_t op = 0; op < kMathOps; ++op) {
    const auto key = std::find(keys.begin(), keys.end(), math_cost_key(static_cast<MathOp>(op)));
    act_of_[op] = act_index(Act::MathOps) + static_cast<std::size_t>(key - keys.begin());
  }
}

std::uint64_t PeMath::cycles_for(MathOp op, std::uint64_t elements, std::uint32_t reduce_width) const {
  std::optional<std::uint64_t>& cost = op_cycles_.at(static_cast<std::size_t>(op));
  if (!cost) cost = cost_of(topo_.pe.math.cycles, math_cost_key(op));
  return topo_.math_cycles_at(*cost, elements, reduce_width);
}

void PeMath::start(tlm::tlm_generic_payload& gp, Command& cmd) {
  add_work(0, cmd.elements);
  tally(act_of_[static_cast<std::size_t>(cmd.op)], cmd.elements);
  tally(Act::TcmRead, cmd.in0.bytes() + cmd.in1.bytes() + cmd.in2.bytes());
  tally(Act::TcmWrite, cmd.out.bytes());
  finish_after(gp, cycles(cycles_for(cmd.op, cmd.elements, cmd.reduce_width)));
}

void PeMath::completed(Command& cmd) {
  if (cmd.data) compute(tcm_, cmd);
}

namespace {

// Element (r, c) of a view held as fp32, broadcasting a 1-row or 1-column operand.
struct Operand {
  std::vector<float> v;
  std::uint32_t rows = 0, cols = 0;
  float at(std::uint32_t r, std::uint32_t c) const {
    return v[static_cast<std::size_t>(rows == 1 ? 0 : r) * cols + (cols == 1 ? 0 : c)];
  }
};

Operand load(PeTcm& tcm, const TcmView& view) {
  if (view.rows == 0) return {};
  return {tcm.read(view), view.rows, view.cols};
}

}  // namespace

void PeMath::compute(PeTcm& tcm, const Command& cmd) {
  const TcmView& o = cmd.out;
  std::vector<float> out(o.elements());
  const Operand x = load(tcm, cmd.in0), y = load(tcm, cmd.in1), z = load(tcm, cmd.in2);
  auto each = [&](auto f) {
    for (std::uint32_t r = 0; r < o.rows; ++r)
      for (std::uint32_t c = 0; c < o.cols; ++c) out[static_cast<std::size_t>(r) * o.cols + c] = f(r, c);
  };
  switch (cmd.op) {
    case MathOp::Add: each([&](auto r, auto c) { return x.at(r, c) + y.at(r, c); }); break;
    case MathOp::Sub: each([&](auto r, auto c) { return x.at(r, c) - y.at(r, c); }); break;
    case MathOp::Mul: each([&](auto r, auto c) { return x.at(r, c) * y.at(r, c); }); break;
    case MathOp::Fma: each([&](auto r, auto c) { return std::fma(x.at(r, c), y.at(r, c), z.at(r, c)); }); break;
    case MathOp::Div: each([&](auto r, auto c) { return x.at(r, c) / y.at(r, c); }); break;
    case MathOp::Maximum: each([&](auto r, auto c) { return std::max(x.at(r, c), y.at(r, c)); }); break;
    case MathOp::Exp: each([&](auto r, auto c) { return std::exp(x.at(r, c)); }); break;
    case MathOp::Rsqrt: each([&](auto r, auto c) { return 1.0f / std::sqrt(x.at(r, c)); }); break;
    case MathOp::Where: each([&](auto r, auto c) { return x.at(r, c) != 0 ? y.at(r, c) : z.at(r, c); }); break;
    case MathOp::Copy: each([&](auto r, auto c) { return x.at(r, c); }); break;
    case MathOp::Scale: each([&](auto r, auto c) { return x.at(r, c) * cmd.scalar; }); break;
    case MathOp::Fill: each([&](auto, auto) { return cmd.scalar; }); break;
    case MathOp::Trans: each([&](auto r, auto c) { return x.at(c, r); }); break;
    case MathOp::ExpDiff:
      each([&](auto r, auto c) {
        const float a = x.at(r, c), b = y.at(r, c);
        return std::isinf(a) && a < 0 ? 0.0f : std::exp(a - b);
      });
      break;
    case MathOp::CausalBias:
    case MathOp::CausalMask:
      each([&](auto r, auto c) {
        const std::int64_t q = cmd.q_pos0 + static_cast<std::int64_t>(r % cmd.q_period);
        const float keep = cmd.op == MathOp::CausalMask ? x.at(r, c) : 0.0f;
        return cmd.k_pos0 + static_cast<std::int64_t>(c) > q ? -std::numeric_limits<float>::infinity() : keep;
      });
      break;
    case MathOp::RowArgMax: {
      // out is [rows, 1] or [1, cols]: the index along the reduced axis, as a float (exact
      // below 2^24).
      std::vector<float> best(out.size(), -std::numeric_limits<float>::infinity());
      std::fill(out.begin(), out.end(), 0.0f);
      for (std::uint32_t r = 0; r < x.rows; ++r)
        for (std::uint32_t c = 0; c < x.cols; ++c) {
          const std::size_t at = o.cols == 1 ? r : c;
          if (x.at(r, c) > best[at]) {
            best[at] = x.at(r, c);
            out[at] = static_cast<float>(o.cols == 1 ? c : r);
          }
        }
      break;
    }
    case MathOp::RowMax:
    case MathOp::RowSum: {
      const bool is_max = cmd.op == MathOp::RowMax;
      const float init = is_max ? -std::numeric_limits<float>::infinity() : 0.0f;
      std::fill(out.begin(), out.end(), init);
      // out is [rows, 1] (reduce along a row) or [1, cols] (reduce down a column).
      for (std::uint32_t r = 0; r < x.rows; ++r)
        for (std::uint32_t c = 0; c < x.cols; ++c) {
          float& acc = out[o.cols == 1 ? r : c];
          const float v = x.at(r, c);
          acc = is_max ? std::max(acc, v) : acc + v;
        }
      break;
    }
  }
  tcm.write(o, out.data());
}

}  // namespace kb
