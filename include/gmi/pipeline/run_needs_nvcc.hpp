#pragma once
// gmi::run outside nvcc (<gmi/gmi.hpp> in a .cpp file compiled by the host compiler): gmi::run instantiates the
// CUDA paths (run.cuh), so calling it there fails to compile with a sentence saying how to build, instead of
// "'run' is not a member of 'gmi'". The host layers stay usable from a .cpp file.

namespace gmi {

template <class Pipeline>
int run(int, char**) {
  static_assert(sizeof(Pipeline) == 0,
                "gmi::run<Pipeline> needs nvcc: compile the file that calls it as CUDA (name it .cu, or "
                "set_source_files_properties(file PROPERTIES LANGUAGE CUDA)); the program still trains on host "
                "threads on a machine without a GPU (--device host)");
  return 2;
}

}  // namespace gmi
