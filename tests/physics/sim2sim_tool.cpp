// gmi.tool.sim2sim: a policy trained by gmi on its physics, evaluated on gmi::physics (host) and on MuJoCo (CPU,
// Debian's libmujoco, double) with the same MJCF file, start states, observation and reward code (sim2sim.hpp).
// Usage: gmi.tool.sim2sim --checkpoint FILE [--task NAME (default: the checkpoint's)] [--episodes 16] [--seed 1]
//        [--max-steps N (default: the task's)] [--compare-steps 10] [--threads 0 (all)] [--obs-clip 5]
//        [--mjcf FILE (default: the task's built-in model)] [--torso-mass-scale 1 (MuJoCo's root body, a check)]
// Prints one JSON line {"bench":"sim2sim","task":..,"episodes":N,"return_gmi":..,"return_mujoco":..,"ratio":..,
// "len_gmi":..,"len_mujoco":..,...,"git":..,"device":"host"} and a human line with the ratio against 0.9.
// Bad input (a missing or damaged checkpoint, one of another task or network, a bad flag): one line, exit 2.
#include <nlohmann/json.hpp>

#include <cstdio>
#include <cstdlib>
#include <exception>
#include <string>

#include "sim2sim.hpp"

namespace {

[[noreturn]] void bad(const std::string& line) {
  std::fprintf(stderr, "gmi.tool.sim2sim: %s\n", line.c_str());
  std::exit(2);
}

template <class T>
T number(const std::string& flag, const std::string& text) {
  try {
    std::size_t used = 0;
    const long double v = std::stold(text, &used);
    if (used == text.size()) return static_cast<T>(v);
  } catch (const std::exception&) {
  }
  bad(flag + ": got \"" + text + "\", need a number");
}

gmi::sim2sim::options parse(int argc, char** argv) {
  gmi::sim2sim::options o;
  o.builtin_dir = GMI_BUILTIN_MODELS;
  for (int k = 1; k < argc; ++k) {
    const std::string flag = argv[k];
    if (flag == "--help" || flag == "-h") {
      std::printf("gmi.tool.sim2sim --checkpoint FILE [--task NAME] [--episodes 16] [--seed 1] [--max-steps N] "
                  "[--compare-steps 10] [--threads 0] [--obs-clip 5] [--mjcf FILE] [--torso-mass-scale 1]\n");
      std::exit(0);
    }
    if (k + 1 >= argc) bad(flag + ": got no value, need a flag followed by its value");
    const std::string value = argv[++k];
    if (flag == "--checkpoint") o.checkpoint = value;
    else if (flag == "--task") o.task = value;
    else if (flag == "--mjcf") o.mjcf = value;
    else if (flag == "--episodes") o.episodes = number<int>(flag, value);
    else if (flag == "--seed") o.seed = number<std::uint64_t>(flag, value);
    else if (flag == "--max-steps") o.max_steps = number<int>(flag, value);
    else if (flag == "--compare-steps") o.compare_steps = number<int>(flag, value);
    else if (flag == "--threads") o.threads = number<unsigned>(flag, value);
    else if (flag == "--obs-clip") o.obs_clip = number<float>(flag, value);
    else if (flag == "--torso-mass-scale") o.torso_mass_scale = number<double>(flag, value);
    else bad("flag: got \"" + flag + "\", need one of --checkpoint --task --episodes --seed --max-steps "
             "--compare-steps --threads --obs-clip --mjcf --torso-mass-scale");
  }
  if (o.checkpoint.empty()) bad("--checkpoint: got nothing, need a .gmi file saved by an example's --checkpoint");
  return o;
}

}  // namespace

int main(int argc, char** argv) {
  const gmi::sim2sim::options o = parse(argc, argv);
  gmi::sim2sim::result r;
  try {
    r = gmi::sim2sim::compare_task(gmi::io::load(o.checkpoint), o);
  } catch (const gmi::config_error& e) {
    bad(e.what());
  }
  const char* rev = std::getenv("GMI_GIT_REVISION");
  const nlohmann::ordered_json line = {{"bench", "sim2sim"},
                                       {"task", r.task},
                                       {"metric", "return_ratio"},
                                       {"episodes", r.episodes},
                                       {"return_gmi", r.return_gmi},
                                       {"return_mujoco", r.return_mujoco},
                                       {"ratio", r.ratio()},
                                       {"len_gmi", r.len_gmi},
                                       {"len_mujoco", r.len_mujoco},
                                       {"same_end", r.same_end},
                                       {"early_obs_diff", r.early_obs_diff},
                                       {"compare_steps", o.compare_steps},
                                       {"seed", o.seed},
                                       {"torso_mass_scale", o.torso_mass_scale},
                                       {"mujoco", mj_versionString()},
                                       {"git", rev && *rev ? rev : "unknown"},
                                       {"device", "host"}};
  std::printf("%s\n", line.dump().c_str());
  std::printf("sim2sim %s: return on MuJoCo %.2f / on gmi %.2f = %.3f (target >= 0.9: %s); episode length %.1f vs %.1f "
              "over %d episodes, %d ended at the same step; first %d steps' observations within %.3g\n",
              r.task.c_str(), r.return_mujoco, r.return_gmi, r.ratio(),
              !(r.return_gmi > 0) ? "undefined, the return on gmi is not positive" : r.ratio() >= 0.9 ? "met" : "NOT met",
              r.len_mujoco, r.len_gmi, r.episodes, r.same_end, o.compare_steps, r.early_obs_diff);
  return 0;
}
