// gmi.bench.actors_place's humanoid_v4 (place.cuh), in a file of its own so the tasks compile in parallel.
#include "place.cuh"

void place_bench::place_humanoid_v4(std::ofstream& out, const std::vector<int>& core_counts, double seconds,
                                 int envs_per_group) {
  place<gmi::envs::humanoid_v4>(out, core_counts, seconds, envs_per_group);
}
