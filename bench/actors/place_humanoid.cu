// gmi.bench.actors_place's humanoid (place.cuh), in a file of its own so the tasks compile in parallel.
#include "place.cuh"

void place_bench::place_humanoid(std::ofstream& out, const std::vector<int>& core_counts, double seconds,
                                 int envs_per_group) {
  place<gmi::envs::humanoid>(out, core_counts, seconds, envs_per_group);
}
