#pragma once
// Host-side slices of a model's weights (nn.Linear's [out, in] layout) as the placements
// deal them to the PEs: a linear's columns of W^T, rows of W^T, stacked shards.
#include <cstdint>
#include <vector>

#include "base/npy.h"

namespace kb::workloads {

// W^T's columns `rows` of W [out, in] (a row index past `out`: a zero column): [in, rows].
HostTensor columns_of(const HostTensor& w, const std::vector<std::int64_t>& rows);
// W's columns `cols` as rows: [cols, out] (a column past `in`: a zero row).
HostTensor rows_of_columns(const HostTensor& w, const std::vector<std::int64_t>& cols);
// Rows [first, first + count) and columns [col, col + cols) of t (rows or columns past its
// end: zeros).
HostTensor block_of(const HostTensor& t, std::int64_t first, std::int64_t count, std::int64_t col,
                    std::int64_t cols);
// a's and b's columns side by side (equal rows).
HostTensor side_by_side(const HostTensor& a, const HostTensor& b);
// The parts one after another (equal columns).
HostTensor stacked(const std::vector<HostTensor>& parts);
// first, first + 1, ..., first + count - 1.
std::vector<std::int64_t> run_of(std::int64_t first, std::int64_t count);

}  // namespace kb::workloads
