# Sourced by bench/sac's per-task device scripts (device_humanoid_v4.sh, device_pendulum.sh), from the repository root.
# need_int SCRIPT WHAT VALUE LO HI: exits 2 with one line unless VALUE is an integer in LO..HI.
need_int() {
  [[ "$3" =~ ^[0-9]+$ && "$3" -ge "$4" && "$3" -le "$5" ]] ||
    { echo "$1: $2: got $3, need an integer in $4..$5" >&2; exit 2; }
}
# sac_script_start BUILD_DEFAULT: the result lines' name (sac), the build folder ($BUILD, else BUILD_DEFAULT),
# device_common.sh's out, lines, device, git and run id; a fresh $out/sac for logs and metrics; JOBS (default 16);
# task_build.sh's start_task_build, task_run and task_build_done.
sac_script_start() {
  name=sac
  export BUILD=${BUILD:-$1}
  # shellcheck source=bench/physics/device_common.sh
  source "$(dirname "${BASH_SOURCE[0]}")/../physics/device_common.sh"
  logs="$out/sac"
  mkdir -p "$logs"
  rm -f "$lines" "$logs"/*.jsonl
  export JOBS=${JOBS:-16}
  # shellcheck source=bench/sac/task_build.sh
  source "$root/bench/sac/task_build.sh"
}
