#include "models/pe/pe_gemm.h"

#include <Eigen/Dense>

namespace kb {

using RowMajor = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

PeGemm::PeGemm(const sc_core::sc_module_name& name, const Topology& topo, PeTcm& tcm)
    : PeEngine(name, topo, 1, Cause::Gemm), tcm_(tcm) {}

std::uint64_t PeGemm::cycles_for(std::uint64_t m, std::uint64_t n, std::uint64_t k) const {
  const std::uint64_t r = topo_.pe.gemm.rows, c = topo_.pe.gemm.cols;
  return ((m + r - 1) / r) * ((n + c - 1) / c) * k + r + c;
}

void PeGemm::start(tlm::tlm_generic_payload& gp, Command& cmd) {
  add_work(0, 2ull * cmd.m * cmd.n * cmd.k);
  // Each operand read once from the TCM and the result written once (and read, to add to).
  tally(Act::Mac, std::uint64_t{cmd.m} * cmd.n * cmd.k);
  tally(Act::TcmRead, cmd.a.bytes() + cmd.b.bytes() + (cmd.accumulate ? cmd.c.bytes() : 0));
  tally(Act::TcmWrite, cmd.c.bytes());
  finish_after(gp, cycles(cycles_for(cmd.m, cmd.n, cmd.k)));
}

void PeGemm::completed(Command& cmd) {
  if (cmd.data) compute(tcm_, cmd);
}

void PeGemm::compute(PeTcm& tcm, const Command& cmd) {
  const std::uint32_t inner = cmd.trans_b ? cmd.b.cols : cmd.b.rows, n = cmd.trans_b ? cmd.b.rows : cmd.b.cols;
  if (cmd.a.cols != inner || cmd.c.rows != cmd.a.rows || cmd.c.cols != n)
    SC_REPORT_FATAL("kernbench", "GEMM command with inconsistent operand views");
  const std::vector<float> a = tcm.read(cmd.a), b = tcm.read(cmd.b);
  const Eigen::Map<const RowMajor> ma(a.data(), cmd.a.rows, cmd.a.cols);
  const Eigen::Map<const RowMajor> mb(b.data(), cmd.b.rows, cmd.b.cols);
  RowMajor c = cmd.trans_b ? RowMajor(ma * mb.transpose()) : RowMajor(ma * mb);
  if (cmd.accumulate) {
    const std::vector<float> prev = tcm.read(cmd.c);
    c += Eigen::Map<const RowMajor>(prev.data(), cmd.c.rows, cmd.c.cols);
  }
  tcm.write(cmd.c, c.data());
}

}  // namespace kb
