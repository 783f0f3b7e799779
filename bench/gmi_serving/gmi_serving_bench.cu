// gmi.bench.gmi_serving: the paper's serving experiment on one GPU, for every task of the table. Each task
// serves with its Isaac-Gym-size policy (Cartpole 32-32 fused one thread per env; the others through cuBLAS
// TF32 layers plus one sample-and-step kernel) at its paper env count N per GMI, on k = 1, 2, 4, 8 GMIs under
//   none           k threads of one process, each on its own stream (time slicing + hardware scheduler);
//   green_context  k threads, each on a green-context slice of the SMs;
//   mps            k processes (re-exec of this binary), each an MPS client with 100/k % of the SMs;
// beside gmi's single instance at the paper count (N envs) and a single instance with the same total (k x N).
// Every configuration is one launch with --reps windows, each behind a barrier of all GMIs; the figure is the
// median window (all GMIs' steps over the longest GMI's window). GPM SM activity/occupancy sits beside it.
#include <gmi/gmi.hpp>
#include <gmi/rl/batched_serving.cuh>

#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

namespace {

namespace envs = gmi::envs;
namespace nn = gmi::nn;

// The policy each task serves with: rl_games' Isaac Gym sizes, the anchor's where the anchor has the task.
template <class Task> struct hidden_of { using type = nn::layers<256, 128, 64>; };  // ant, anymal, franka
template <> struct hidden_of<envs::cartpole> { using type = nn::layers<32, 32>; };
template <> struct hidden_of<envs::ball_balance> { using type = nn::layers<128, 64, 32>; };
template <> struct hidden_of<envs::quadcopter> { using type = nn::layers<256, 256, 128>; };
template <> struct hidden_of<envs::ingenuity> { using type = nn::layers<256, 256, 128>; };
template <> struct hidden_of<envs::humanoid_proxy> { using type = nn::layers<200, 400, 100>; };
template <> struct hidden_of<envs::shadow_hand_proxy> { using type = nn::layers<512, 512, 512, 256>; };

// A Gaussian policy for continuous actions, a categorical one for a task with num_actions.
template <class Task>
using net_of = std::conditional_t<gmi::has_discrete_actions<Task>,
                                  nn::categorical_actor_critic<Task::obs_dim, gmi::policy_outputs<Task>(),
                                                               typename hidden_of<Task>::type>,
                                  nn::gaussian_actor_critic<Task::obs_dim, Task::act_dim, typename hidden_of<Task>::type>>;

// serve/synchronize/num_envs over either serving engine.
struct engine {
  virtual ~engine() = default;
  virtual void serve(int steps) = 0;
  virtual void synchronize() = 0;
  [[nodiscard]] virtual int num_envs() const = 0;
  [[nodiscard]] virtual const char* path() const = 0;
};
template <class E>
struct engine_of final : engine {
  template <class... A>
  explicit engine_of(A&&... a) : e(std::forward<A>(a)...) {}
  void serve(int steps) override { e.serve(steps); }
  void synchronize() override { e.synchronize(); }
  [[nodiscard]] int num_envs() const override { return e.num_envs(); }
  [[nodiscard]] const char* path() const override {
    if constexpr (requires { E::path_name; }) return E::path_name;
    else return "fused_thread_per_env";
  }
  E e;
};

template <class Task>
std::unique_ptr<engine> make_engine(int n, std::uint64_t seed, gmi::exec::cuda on) {
  if constexpr (std::is_same_v<Task, envs::cartpole>) {
    return std::make_unique<engine_of<gmi::rl::ppo_trainer<Task, net_of<Task>, gmi::exec::cuda>>>(
        n, seed, gmi::rl::ppo_config{}, typename Task::params{}, on);
  } else {
    return std::make_unique<engine_of<gmi::rl::batched_server<Task, net_of<Task>>>>(n, seed, on);
  }
}

// One configuration, as the launcher hands it to its GMIs (threads read it directly, processes from GMI_BENCH_JOB).
struct job {
  std::string task, partition;
  int num_envs = 0, gmis = 1, reps = 3;
  double seconds = 0.5;

  [[nodiscard]] std::string encode() const {
    std::ostringstream o;
    o << task << ' ' << partition << ' ' << num_envs << ' ' << gmis << ' ' << reps << ' ' << seconds;
    return o.str();
  }
  static job decode(const std::string& s) {
    job j;
    std::istringstream in(s);
    if (!(in >> j.task >> j.partition >> j.num_envs >> j.gmis >> j.reps >> j.seconds)) {
      throw gmi::config_error(gmi::got_need("GMI_BENCH_JOB", s, "\"task partition envs gmis reps seconds\""));
    }
    return j;
  }
  [[nodiscard]] gmi::runtime::gmis_config config() const {
    gmi::runtime::gmis_config c;
    c.partition = partition;
    c.gpus = {0};
    c.gmis_per_gpu = gmis;
    c.env = {{"GMI_BENCH_JOB", encode()}};
    return c;
  }
};

constexpr int steps_per_launch = 200;

void work(const job& j, gmi::runtime::context& ctx, gmi::runtime::binding& b) {
  envs::visit_task(j.task, [&]<class Task>() {
    auto e = make_engine<Task>(j.num_envs, 1 + static_cast<std::uint64_t>(ctx.rank()), gmi::exec::cuda{.stream = b.stream()});
    gmi::serve_and_report(ctx, b, *e, j.seconds, steps_per_launch, nullptr, j.reps);
  });
}

const char* path_of(const std::string& task) {
  return envs::visit_task(task, [&]<class Task>() {
    return std::is_same_v<Task, envs::cartpole> ? "fused_thread_per_env" : "batched_tf32";
  });
}

gmi::gmi_serving_total measure(const job& j) {
  const auto report = gmi::runtime::launch_gmis(j.config(), [&j](gmi::runtime::context& ctx, gmi::runtime::binding& b) {
    work(j, ctx, b);
  });
  return gmi::collect_serving(report);
}

std::vector<std::string> split_list(const std::string& s) {
  std::vector<std::string> out;
  std::stringstream in(s);
  for (std::string item; std::getline(in, item, ',');) {
    if (!item.empty()) out.push_back(item);
  }
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"gmi.bench.gmi_serving: k GMIs serving each task on one GPU (none, green_context, mps)",
               "gmi.bench.gmi_serving"};
  int reps = 3, num_envs = 0;
  double seconds = 0.5;
  std::string out, run_id, tasks_flag = "cartpole,ball_balance,quadcopter,ingenuity,ant_proxy,anymal_proxy,"
                                        "humanoid_proxy,franka_cabinet_proxy,shadow_hand_proxy";
  std::string ks_flag = "1,2,4,8", modes_flag = "none,green_context,mps";
  app.add_option("--tasks", tasks_flag, "comma-separated task names")->capture_default_str();
  app.add_option("--gmis", ks_flag, "comma-separated GMI counts per GPU")->capture_default_str();
  app.add_option("--partitions", modes_flag, "comma-separated partition backends")->capture_default_str();
  app.add_option("--num-envs", num_envs, "environments per GMI (0: the task's paper count)")->check(CLI::Range(0, 1 << 20));
  app.add_option("--reps", reps, "windows per configuration")->check(CLI::Range(1, 20))->capture_default_str();
  app.add_option("--seconds", seconds, "seconds per window")->check(CLI::Range(0.05, 60.0))->capture_default_str();
  app.add_option("--out", out, "append result lines here");
  app.add_option("--run-id", run_id, "run id shared with runs beside this one (the anchor's)");
  if (const auto code = gmi::runtime::parse_flags(app, argc, argv)) return *code;
  setenv("NCCL_NVLS_ENABLE", "0", 1);

  // A GMI process of an MPS configuration: run this GMI and leave.
  if (const auto id = gmi::runtime::this_gmi()) {
    const char* encoded = std::getenv("GMI_BENCH_JOB");
    if (!encoded) {
      std::fprintf(stderr, "gmi.bench.gmi_serving: GMI process without GMI_BENCH_JOB\n");
      return 2;
    }
    const job j = job::decode(encoded);
    return gmi::runtime::run_gmi_process(j.config(), *id, [&j](gmi::runtime::context& ctx, gmi::runtime::binding& b) {
      work(j, ctx, b);
    });
  }

  try {
    if (const auto gpus = gmi::cuda::device_count(); !gpus) {
      std::fprintf(stderr, "gmi.bench.gmi_serving: needs a GPU: %s\n", gpus.error().message().c_str());
      return 1;
    }
    auto run = gmi::metrics::describe_run();
    if (!run_id.empty()) run.run_id = run_id;
    gmi::metrics::jsonl_log log = out.empty() ? gmi::metrics::jsonl_log{} : gmi::metrics::jsonl_log(out);
    auto emit = [&](nlohmann::json l) {
      std::cout << l.dump() << std::endl;
      log.write(l);
    };
    std::vector<int> ks;
    for (const auto& k : split_list(ks_flag)) ks.push_back(std::stoi(k));
    const auto tasks = split_list(tasks_flag);
    const auto modes = split_list(modes_flag);
    for (const auto& t : tasks) envs::visit_task(t, [&]<class>() {});  // unknown names fail before any run
    for (const auto& task : tasks) {
      const int n = num_envs > 0 ? num_envs : envs::visit_task(task, [&]<class T>() { return envs::paper_num_envs<T>(); });
      auto line = [&](const std::string& partition, int k, int envs, const gmi::gmi_serving_total& t) {
        auto l = gmi::metrics::result_line(run, "serving", "gmi", "steps_per_s", gmi::metrics::summarize(t.window_steps_per_s));
        l["task"] = task;
        l["num_envs"] = envs;
        l["gmis_per_gpu"] = k;
        l["gpus"] = 1;
        l["partition"] = partition;
        l["gmi_processes"] = partition == "mps";
        l["path"] = path_of(task);
        nlohmann::json per = nlohmann::json::array();
        for (const auto& g : t.per_gmi) per.push_back({{"steps_per_s", g.steps_per_s}, {"sms", g.sm_count}});
        l["per_gmi"] = per;
        gmi::put_sm_activity(l, t.gpm);
        return l;
      };
      auto run_job = [&](const std::string& partition, int k, int envs) -> std::optional<gmi::gmi_serving_total> {
        job j{task, partition, envs, k, reps, seconds};
        try {
          return measure(j);
        } catch (const gmi::runtime::gmi_failed& e) {
          if (e.info().rank < 0) throw;  // the launcher itself was stopped (SIGINT/SIGTERM): stop the benchmark
          std::fprintf(stderr, "gmi.bench.gmi_serving: %s on %d GMIs (%s): %s\n", task.c_str(), k, partition.c_str(),
                       e.what());
          return std::nullopt;
        } catch (const gmi::error& e) {
          std::fprintf(stderr, "gmi.bench.gmi_serving: %s on %d GMIs (%s): %s\n", task.c_str(), k, partition.c_str(),
                       e.what());
          return std::nullopt;
        }
      };
      const auto single = run_job("none", 1, n);
      if (!single) continue;
      {
        auto l = line("none", 1, n, *single);
        l["config"] = "single_instance_paper_envs";
        emit(l);
      }
      for (int k : ks) {
        std::optional<gmi::gmi_serving_total> same = single;
        if (k > 1) {
          same = run_job("none", 1, k * n);
          if (same) {
            auto l = line("none", 1, k * n, *same);
            l["config"] = "single_instance_same_total_envs";
            l["same_total_as_gmis"] = k;
            emit(l);
          }
        }
        for (const auto& mode : modes) {
          if (k == 1 && mode == "none") continue;  // that is the single instance above
          const auto r = run_job(mode, k, n);
          if (!r) continue;
          auto l = line(mode, k, n, *r);
          l["config"] = "gmis";
          l["single_instance_paper_envs_steps_per_s"] = single->steps_per_s;
          l["ratio_to_single_instance_paper_envs"] = r->steps_per_s / single->steps_per_s;
          if (same) {
            l["single_instance_same_total_envs_steps_per_s"] = same->steps_per_s;
            l["ratio_to_single_instance_same_total_envs"] = r->steps_per_s / same->steps_per_s;
          }
          emit(l);
        }
      }
    }
    return 0;
  } catch (const gmi::error& e) {
    std::fprintf(stderr, "gmi.bench.gmi_serving: %s\n", e.describe().c_str());
    return 1;
  }
}
