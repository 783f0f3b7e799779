// gmi.bench.actors_place's anymal (place.cuh), in a file of its own so the tasks compile in parallel.
#include "place.cuh"

void place_bench::place_anymal(std::ofstream& out, const std::vector<int>& core_counts, double seconds,
                               int envs_per_group) {
  place<gmi::envs::anymal>(out, core_counts, seconds, envs_per_group);
}
