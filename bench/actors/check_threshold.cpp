// gmi.bench.actors_check_threshold: the placement threshold against training (actors/threshold_check.hpp). Reads
// gmi.bench.actors_train's or actors_place's lines and writes, per task, one line per point (actor core count and
// batch: the rule's ratio, which side trained faster, whether threshold T decides it right) and a summary with the
// thresholds that decide every point right (consistent_low < T <= consistent_high) and a suggested one:
//   gmi.bench.actors_check_threshold TRAIN.jsonl OUT.jsonl [threshold (default plan::default_placement_threshold)]
// Exit code 0 when T decides every point right, 1 when not, 2 on bad input.
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include <gmi/actors/threshold_check.hpp>
#include <gmi/plan/placement.hpp>

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: %s TRAIN.jsonl OUT.jsonl [threshold]\n", argv[0]);
    return 2;
  }
  try {
    std::ifstream in(argv[1]);
    gmi::require(bool(in), "actors_train file", std::string(argv[1]), "a readable file");
    const double threshold = argc > 3 ? std::stod(argv[3]) : gmi::plan::default_placement_threshold;
    const auto points = gmi::actors::threshold_points_from_lines(in, argv[1]);
    gmi::require(!points.empty(), std::string("points in ") + argv[1], 0,
                 ">= 1 (train lines of both impls and a placement line at one actor core count and batch)");
    std::ofstream out(argv[2], std::ios::app);
    const char* git = std::getenv("GMI_GIT_REVISION");
    auto emit = [&](const nlohmann::json& line) {
      out << line.dump() << "\n";
      std::printf("%s\n", line.dump().c_str());
    };
    bool all_right = true;
    for (const auto& [task, task_points, v] : gmi::actors::check_threshold_by_task(points, threshold)) {
      for (const auto& p : task_points) {
        emit({{"bench", "placement_threshold_point"}, {"task", task}, {"actor_cores", p.actor_cores},
              {"batch", p.batch}, {"cpu_sim_steps_per_s", p.cpu_sim}, {"gpu_sim_steps_per_s", p.gpu_sim},
              {"ratio", p.ratio()}, {"cpu_train_steps_per_s", p.cpu_train}, {"gpu_train_steps_per_s", p.gpu_train},
              {"faster_training", p.gpu_trains_faster() ? "gpu" : "cpu"},
              {"chosen", p.ratio() >= threshold ? "gpu" : "cpu"}, {"right", p.right_at(threshold)},
              {"threshold", threshold}, {"git", git ? git : ""}});
      }
      const auto suggested = v.suggested();
      all_right = all_right && v.right == v.points;
      emit({{"bench", "placement_threshold"}, {"task", task}, {"threshold", threshold}, {"points", v.points},
            {"right", v.right}, {"consistent_low", v.low},
            {"consistent_high", std::isinf(v.high) ? nlohmann::json(nullptr) : nlohmann::json(v.high)},
            {"suggested", suggested ? nlohmann::json(*suggested) : nlohmann::json(nullptr)}, {"git", git ? git : ""}});
    }
    return all_right ? 0 : 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "gmi.bench.actors_check_threshold: %s\n", e.what());
    return 2;
  }
}
