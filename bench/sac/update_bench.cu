// The bare SAC update on one GPU (rl::sac_device_trainer::update, no environment steps between updates): Ant's
// sizes (obs 27, act 8), SAC's usual networks (two hidden layers of 256), at each batch of --batches, launched
// kernel by kernel and replayed as one captured CUDA graph. The replay is filled by the trainer's own collection
// (a warm-up of uniform actions) first; every rep times --updates updates from the first enqueue to the stream's
// end. One JSON line per (case, impl, metric): updates_per_s and samples_per_s (updates x batch), median of --reps.
#include <gmi/envs/ant_v4.hpp>
#include <gmi/rl/sac.cuh>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

namespace {

std::string g_run_id = "local", g_device = "unknown", g_git = GMI_GIT_REVISION;
std::ofstream g_file;

void emit(const std::string& c, const char* impl, const char* metric, double med, double lo, double hi, int batch) {
  char line[1024];
  std::snprintf(line, sizeof line,
                "{\"bench\": \"sac_update\", \"case\": \"%s\", \"impl\": \"%s\", \"metric\": \"%s\", \"median\": %.6g, "
                "\"min\": %.6g, \"max\": %.6g, \"batch\": %d, \"hidden\": 256, \"task\": \"ant_v4\", \"device\": \"%s\", "
                "\"git\": \"%s\", \"run_id\": \"%s\"}",
                c.c_str(), impl, metric, med, lo, hi, batch, g_device.c_str(), g_git.c_str(), g_run_id.c_str());
  std::puts(line);
  std::fflush(stdout);
  if (g_file) g_file << line << '\n' << std::flush;
}

using env = gmi::envs::ant_v4;
using trainer = gmi::rl::sac_device_trainer<env, gmi::rl::sac_networks<env::obs_dim, env::act_dim, 256>>;

void bench(int batch, bool graph, int updates, int reps) {
  gmi::rl::sac_config c;
  c.batch = batch;
  c.replay_capacity = std::max<std::size_t>(100000, 4 * std::size_t(batch));
  c.warmup_steps = std::max<std::size_t>(2048, 2 * std::size_t(batch));
  c.cuda_graph = graph;
  const int envs = 256;
  auto t = std::make_unique<trainer>(c, envs, 7);
  while (t->env_steps() < c.warmup_steps) t->step();  // uniform actions: no update yet
  for (int i = 0; i < 20; ++i) t->update();           // warm-up: plans, the capture
  (void)t->last_update();
  std::vector<double> rate;
  for (int r = 0; r < reps; ++r) {
    const auto a = std::chrono::steady_clock::now();
    for (int i = 0; i < updates; ++i) t->update();
    (void)t->last_update();  // waits for the stream
    rate.push_back(updates / std::chrono::duration<double>(std::chrono::steady_clock::now() - a).count());
  }
  std::sort(rate.begin(), rate.end());
  const std::string name = "ant_b" + std::to_string(batch);
  const char* impl = graph ? "graph" : "launches";
  const double med = rate[rate.size() / 2];
  emit(name, impl, "updates_per_s", med, rate.front(), rate.back(), batch);
  emit(name, impl, "samples_per_s", med * batch, rate.front() * batch, rate.back() * batch, batch);
  if (graph && t->graph_updates() + 1 != t->updates())
    std::fprintf(stderr, "gmi.bench.sac_update: %s: %llu of %llu updates replayed (expected all but the first)\n",
                 name.c_str(), static_cast<unsigned long long>(t->graph_updates()),
                 static_cast<unsigned long long>(t->updates()));
}

// An integer in [lo, hi] from a flag's text; else config_error "<what>: got <text>, need an integer in lo..hi".
int parse_int(const std::string& text, const char* what, int lo, int hi) {
  std::size_t used = 0;
  long v = lo - 1L;
  try {
    v = std::stol(text, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  gmi::require(used == text.size() && v >= lo && v <= hi, what, text,
               "an integer in " + std::to_string(lo) + ".." + std::to_string(hi));
  return int(v);
}

std::vector<int> parse_batches(const std::string& v) {
  std::vector<int> out;
  std::stringstream ss(v);
  std::string item;
  while (std::getline(ss, item, ','))
    out.push_back(parse_int(item, "gmi.bench.sac_update --batches entry", 1, 65536));
  gmi::require(!out.empty(), "gmi.bench.sac_update --batches", v, "a comma-separated list such as 256,4096");
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  std::string batches = "256,4096", impls = "both";
  int updates = 500, reps = 5;
  try {
    for (int i = 1; i < argc; i += 2) {
      const std::string k = argv[i];
      gmi::require(i + 1 < argc, "gmi.bench.sac_update flag " + k, "no value", "a value after it");
      const std::string v = argv[i + 1];
      if (k == "--run-id") g_run_id = v;
      else if (k == "--device") g_device = v;
      else if (k == "--git") g_git = v;
      else if (k == "--out") g_file.open(v, std::ios::app);
      else if (k == "--batches") batches = v;
      else if (k == "--impls") impls = v;
      else if (k == "--updates") updates = parse_int(v, "gmi.bench.sac_update --updates", 1, 1000000);
      else if (k == "--reps") reps = parse_int(v, "gmi.bench.sac_update --reps", 1, 100);
      else
        gmi::require(false, "gmi.bench.sac_update flag", k,
                     "one of --run-id --device --git --out --batches --impls --updates --reps");
    }
    const std::vector<int> bs = parse_batches(batches);
    gmi::require(impls == "both" || impls == "launches" || impls == "graph", "gmi.bench.sac_update --impls", impls,
                 "both, launches or graph");
    int devices = 0;
    if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) {
      std::fprintf(stderr, "gmi.bench.sac_update: no CUDA device: skipped\n");
      return 77;
    }
    for (int b : bs) {
      if (impls != "graph") bench(b, false, updates, reps);
      if (impls != "launches") bench(b, true, updates, reps);
    }
  } catch (const gmi::config_error& e) {
    std::fprintf(stderr, "%s\n", e.what());
    return 2;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "gmi.bench.sac_update: %s\n", e.what());
    return 1;
  }
  return 0;
}
