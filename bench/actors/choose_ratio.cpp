// gmi.bench.actors_choose_ratio: the planner's choice over a ratio sweep's result lines (plan::choose_ratio), one
// line per goal that has data, with the chosen point's value against the sweep's best:
//   gmi.bench.actors_choose_ratio SWEEP.jsonl OUT.jsonl [tolerance]
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>

#include <nlohmann/json.hpp>

#include <gmi/plan/ratio.hpp>

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: %s SWEEP.jsonl OUT.jsonl [tolerance]\n", argv[0]);
    return 2;
  }
  try {
    std::ifstream in(argv[1]);
    gmi::require(bool(in), "sweep file", std::string(argv[1]), "a readable file");
    const double tolerance = argc > 3 ? std::stod(argv[3]) : 0.0;
    const auto points = gmi::plan::ratio_points_from_lines(in, argv[1]);
    std::ofstream out(argv[2], std::ios::app);
    const char* git = std::getenv("GMI_GIT_REVISION");
    for (const auto goal : {gmi::plan::ratio_goal::throughput, gmi::plan::ratio_goal::efficiency}) {
      double best = 0;
      for (const auto& p : points)
        if (const auto v = gmi::plan::ratio_value(p, goal)) best = std::max(best, *v);
      if (best <= 0) {
        std::printf("{\"bench\":\"cpu_gpu_ratio_choice\",\"goal\":\"%s\",\"absent\":\"no point has it\"}\n",
                    gmi::plan::ratio_goal_name(goal));
        continue;
      }
      const auto c = gmi::plan::choose_ratio(points, goal, tolerance);
      const double v = *gmi::plan::ratio_value(c.chosen, goal);
      const nlohmann::json line = {{"bench", "cpu_gpu_ratio_choice"},
                                   {"goal", gmi::plan::ratio_goal_name(goal)},
                                   {"tolerance", tolerance},
                                   {"points", points.size()},
                                   {"cores_per_gmi", c.chosen.cores_per_gmi},
                                   {"envs_per_core", c.chosen.envs_per_core},
                                   {"gmis_per_gpu", c.chosen.gmis_per_gpu},
                                   {"value", v},
                                   {"best_value", best},
                                   {"fraction_of_best", v / best},
                                   {"git", git ? git : ""}};
      out << line.dump() << "\n";
      std::printf("%s\n", line.dump().c_str());
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "gmi.bench.actors_choose_ratio: %s\n", e.what());
    return 2;
  }
  return 0;
}
