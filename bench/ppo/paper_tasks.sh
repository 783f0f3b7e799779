# Sourced by the bench scripts that run the paper's nine tasks: paper_n (the paper's env count per task, seed
# 000's table; gmi::envs::paper_num_envs) and binary <task> (that task's PPO example under $build).
declare -A paper_n=([cartpole]=512 [ball_balance]=4096 [quadcopter]=8192 [ingenuity]=4096 [ant_proxy]=1024
                    [anymal_proxy]=4000 [humanoid_proxy]=4096 [franka_cabinet_proxy]=2048 [shadow_hand_proxy]=4096)
binary() {
  if [ "$1" = cartpole ]; then echo "$build/examples/cartpole_ppo/gmi.example.cartpole_ppo"
  else echo "$build/examples/task_ppo/gmi.example.$1_ppo"; fi
}
# check_task_names <script> <tasks...> / check_task_binaries <script> <tasks...>: one line and exit 2 for a task
# that is not one of the nine, or whose example is not built under $build; check_tasks does both.
check_task_names() {
  local script=$1 t; shift
  for t in "$@"; do
    [ -n "${paper_n[$t]:-}" ] || { echo "$script: task: got $t, need one of ${!paper_n[*]}" >&2; exit 2; }
  done
}
check_task_binaries() {
  local script=$1 t; shift
  for t in "$@"; do
    [ -x "$(binary "$t")" ] || { echo "$script: no $(binary "$t") (build with -DGMI_BUILD_ALL_TASK_EXAMPLES=ON)" >&2; exit 2; }
  done
}
check_tasks() {
  check_task_names "$@"
  check_task_binaries "$@"
}
