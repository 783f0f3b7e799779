#pragma once
// Host-callable entry points into the CUDA side of the comm GPU tests (doctest files are host-compiled).
#include <cstddef>
#include <string>

namespace gmi_test {
// Max |device sum - host sum| of m random buffers of `count` floats starting `offset` floats into their
// allocations (offset 1 forces the unvectorised path).
double reduce_kernel_error(int m, std::size_t count, std::size_t offset);
// m GMIs as threads of this process (green contexts when the driver has them, else the primary context),
// hierarchical allreduce in sharing::in_process mode; returns wrong elements, sets used_green.
std::size_t threads_hierarchical(int m, std::size_t count, int rounds, bool& used_green, std::string& error,
                                 bool copy_back = true, bool every_gmi = true);
}  // namespace gmi_test
