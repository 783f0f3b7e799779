#pragma once
// Task names -> task types: the compile-time list of gmi's benchmark tasks, and visit_task, which calls a
// generic callable with the type a run-time name stands for (for flags and config files).

#include <array>
#include <optional>
#include <string>
#include <string_view>
#include <tuple>
#include <type_traits>
#include <utility>

#include <gmi/core/error.hpp>
#include <gmi/envs/ant.hpp>
#include <gmi/envs/ant_v4.hpp>
#include <gmi/envs/anymal.hpp>
#include <gmi/envs/ball_balance.hpp>
#include <gmi/envs/cartpole.hpp>
#include <gmi/envs/cartpole_discrete.hpp>
#include <gmi/envs/humanoid.hpp>
#include <gmi/envs/humanoid_v4.hpp>
#include <gmi/envs/ingenuity.hpp>
#include <gmi/envs/long_track.hpp>
#include <gmi/envs/lq_proxy.hpp>
#include <gmi/envs/pendulum.hpp>
#include <gmi/envs/point_reach.hpp>
#include <gmi/envs/quadcopter.hpp>
#include <gmi/envs/renamed_tasks.hpp>
#include <gmi/envs/sparse_reach.hpp>
#include <gmi/envs/spring_chain.hpp>

namespace gmi::envs {

// The paper's tasks (and the pendulum), then the learning suite's tasks of other reward shapes and scales
// (bench/learning/run_suite.sh, docs/learning.md), then the tasks simulated by gmi::physics (ant_v4, humanoid_v4,
// anymal, ant, humanoid; docs/envs.md).
using all_tasks = std::tuple<cartpole, pendulum, ball_balance, quadcopter, ingenuity, ant_proxy, anymal_proxy,
                             humanoid_proxy, franka_cabinet_proxy, shadow_hand_proxy, point_reach, sparse_reach,
                             long_track, spring_chain, cartpole_discrete, ant_v4, humanoid_v4, anymal, ant,
                             humanoid>;

// Whether a task runs gmi::physics (a rigid-body simulation per step: far slower on the host than the others).
template <class Task>
inline constexpr bool is_physics_task = requires { typename Task::sim; };

inline constexpr std::size_t task_count = std::tuple_size_v<all_tasks>;

// The names, in all_tasks order.
inline constexpr std::array<std::string_view, task_count> task_names = []<std::size_t... I>(std::index_sequence<I...>) {
  return std::array<std::string_view, task_count>{std::tuple_element_t<I, all_tasks>::name...};
}(std::make_index_sequence<task_count>{});

// The paper's environment count per task (seed 000 table); the pendulum, not in the paper, gets Cartpole's, and
// the learning suite's own tasks 4096.
template <class Task>
constexpr int paper_num_envs() {
  constexpr std::string_view n = Task::name;
  if (n == "cartpole" || n == "pendulum") return 512;
  if (n == "ant_proxy") return 1024;
  if (n == "anymal_proxy") return 4000;
  if (n == "franka_cabinet_proxy") return 2048;
  if (n == "quadcopter") return 8192;
  return 4096;  // ball_balance, humanoid_proxy, ingenuity, shadow_hand_proxy, ant_v4, humanoid_v4, anymal, ant,
               // humanoid
}

namespace detail {
[[noreturn]] inline void unknown_task(std::string_view name) {
  if (const std::string renamed = renamed_task(name); !renamed.empty()) throw gmi::config_error(renamed);
  std::string allowed = "one of";
  for (std::size_t i = 0; i < task_names.size(); ++i) allowed += (i ? ", " : " ") + std::string(task_names[i]);
  throw gmi::config_error(gmi::got_need("task", name, allowed));
}
}  // namespace detail

// Calls f.template operator()<Task>() for the task named `name` and returns its result; an unknown name throws
// config_error listing the known ones (an old name: what it is called now, envs/renamed_tasks.hpp).
template <class F>
decltype(auto) visit_task(std::string_view name, F&& f) {
  using result = decltype(f.template operator()<cartpole>());
  return [&]<std::size_t... I>(std::index_sequence<I...>) -> result {
    if constexpr (std::is_void_v<result>) {
      bool found = ((name == task_names[I] ? (f.template operator()<std::tuple_element_t<I, all_tasks>>(), true)
                                           : false) || ...);
      if (!found) detail::unknown_task(name);
    } else {
      std::optional<result> out;
      ((name == task_names[I] ? (out.emplace(f.template operator()<std::tuple_element_t<I, all_tasks>>()), true)
                              : false) || ...);
      if (!out) detail::unknown_task(name);
      return std::move(*out);
    }
  }(std::make_index_sequence<task_count>{});
}

// Calls f.template operator()<Task>() for every task, in all_tasks order.
template <class F>
void for_each_task(F&& f) {
  [&]<std::size_t... I>(std::index_sequence<I...>) { (f.template operator()<std::tuple_element_t<I, all_tasks>>(), ...); }(
      std::make_index_sequence<task_count>{});
}

}  // namespace gmi::envs
