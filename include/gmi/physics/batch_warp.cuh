#pragma once
// A tile of lanes per environment for built-in models (sizes known at compile time): 8, 16 or 32 consecutive lanes
// of a warp step one environment (batch_warp_stages.cuh spreads every stage over them), so a warp steps 4, 2 or 1
// environments. The model's words and each environment's pipeline arrays live in shared memory, qpos, qvel and
// ctrl in global memory (element-major, as in batch_local.cuh). Optionally the three largest arrays, the
// constraint rows' J, M^-1 J' and block couplings (efc_J, efc_W, efc_A4), live in a global slot per resident tile
// instead, which cuts the shared memory per environment by 43 to 62 % for the tasks' models (docs/physics.md,
// "Tiles narrower than a warp, and shared memory per environment") so more environments are resident per SM. The grid holds only as many blocks as are resident at once and each
// tile loops over environments, so the slots are few. The results are the thread-per-env step's (step.hpp) up to
// the compiler's contractions at every width and in either place. Needs nvcc.

#include <cuda_runtime_api.h>

#include <cstddef>
#include <string>
#include <vector>

#include <gmi/core/cuda_try.hpp>
#include <gmi/core/error.hpp>
#include <gmi/cuda/buffer.hpp>
#include <gmi/physics/batch_warp_stages.cuh>
#include <gmi/physics/builtin_task.hpp>
#include <gmi/physics/step_path.hpp>

// Registers a thread of the tile kernels (this one and rl/physics_env_step.cuh's) may use (0, the default: ptxas's
// choice, as before caps existed). A cap trades spills to local memory for more environments resident per SM (the
// kernels are register-bound); no cap has been measured faster yet (docs/physics.md), so none is the default.
// -DGMI_PHYSICS_TILE_MAX_REGISTERS=N sets one, and the bench lines carry it.
#ifndef GMI_PHYSICS_TILE_MAX_REGISTERS
#define GMI_PHYSICS_TILE_MAX_REGISTERS 0
#endif
#if GMI_PHYSICS_TILE_MAX_REGISTERS > 0
#define GMI_PHYSICS_TILE_BOUNDS __maxnreg__(GMI_PHYSICS_TILE_MAX_REGISTERS)
#else
#define GMI_PHYSICS_TILE_BOUNDS
#endif

namespace gmi::physics {

// The launch the occupancy calculator picks for a layout: environments per block (whole warps where they fit),
// threads, dynamic shared memory, and how many blocks and environments one SM holds at once.
struct tile_plan {
  tile_layout layout;
  int envs_per_block = 0;
  int threads = 0;
  std::size_t shared_bytes = 0;
  int blocks_per_sm = 0;
  int resident_envs_per_sm = 0;
  int registers_per_thread = 0;  // the kernel's, as compiled
};

namespace detail {

// Words of the model table and reals of one environment's arrays, each rounded up to 16 bytes.
template <class M>
constexpr std::size_t warp_table_words = (sizeof(M::words) / 4 + 3) / 4 * 4;
template <class M>
constexpr std::size_t warp_scratch_reals = (builtin_sim<M>::scratch_reals + 3) / 4 * 4;
// Reals of the arrays a spilling layout keeps in a global slot: efc_J and efc_W (nefc_max x nv each), efc_A4.
template <class M>
constexpr std::size_t spill_rows_reals =
    2 * static_cast<std::size_t>(M::sizes().nefc_max) * M::sizes().nv + 4 * static_cast<std::size_t>(M::sizes().nefc_max);
template <class M>
constexpr std::size_t spill_slot_reals = (spill_rows_reals<M> + 3) / 4 * 4;
// Reals of one environment's shared-memory block in a layout.
template <class M>
constexpr std::size_t tile_shared_reals(bool spill) {
  return spill ? (builtin_sim<M>::scratch_reals - spill_rows_reals<M> + 3) / 4 * 4 : warp_scratch_reals<M>;
}

// One environment's arrays: all in `shared` (make_layout's offsets), or with efc_J, efc_W and efc_A4 in `slot`
// (in that order) and the rest packed in `shared` in make_layout's order without them. Fields placed before efc_J
// keep make_layout's offsets either way (the tasks' kinematics pass over the same scratch writes only those).
template <class M>
__device__ inline data<float> bind_tile_data(float* shared, float* slot) {
  constexpr data_layout l = make_layout(M::sizes());
  if (slot == nullptr) return data_of(l, shared, 1, 0);
  constexpr std::size_t nj = static_cast<std::size_t>(M::sizes().nefc_max) * M::sizes().nv;
  constexpr std::size_t na = 4 * static_cast<std::size_t>(M::sizes().nefc_max);
  data<float> d;
#define GMI_PHYSICS_BIND_PACKED(name, len) \
  d.name = strided<float>{shared + l.name - (l.name > l.efc_J ? 2 * nj : 0) - (l.name > l.efc_A4 ? na : 0), 1};
  GMI_PHYSICS_DATA_FIELDS(GMI_PHYSICS_BIND_PACKED)
#undef GMI_PHYSICS_BIND_PACKED
  d.efc_J = strided<float>{slot, 1};
  d.efc_W = strided<float>{slot + nj, 1};
  d.efc_A4 = strided<float>{slot + 2 * nj, 1};
  return d;
}

// The block's model words: copied by all its threads as 32-bit integers (the table mixes int and float words).
template <class M>
__device__ inline void copy_table(float* words, const float* table) {
  constexpr int table_words = static_cast<int>(sizeof(M::words) / 4);
  const unsigned* from = reinterpret_cast<const unsigned*>(table);
  unsigned* to = reinterpret_cast<unsigned*>(words);
  for (int k = threadIdx.x; k < table_words; k += blockDim.x) to[k] = from[k];
  __syncthreads();
}

// Environments blockIdx.x * epb + tile, then a grid's worth further on, with a tile of `lanes` lanes each; tiles
// past epb in the block's last warp stay idle. slots: spill_slot_reals<M> per tile of the grid, or null.
template <class M>
__global__ void GMI_PHYSICS_TILE_BOUNDS warp_step_envs(model_options opts, const float* table, float* qpos,
                                                       float* qvel, const float* ctrl, int n, int substeps,
                                                       int lanes, int epb, float* slots) {
  using sim = builtin_sim<M>;
  extern __shared__ float4 shared_words[];
  float* words = reinterpret_cast<float*>(shared_words);
  copy_table<M>(words, table);
  const tile t = this_tile(lanes);
  const int mine = static_cast<int>(threadIdx.x) / lanes;
  if (mine >= epb) return;  // the whole tile
  const model_view<float> m = view_of_words(M::sizes(), opts, words);
  const int global_tile = static_cast<int>(blockIdx.x) * epb + mine;
  float* shared = words + warp_table_words<M> + static_cast<std::size_t>(mine) * tile_shared_reals<M>(slots != nullptr);
  float* slot = slots ? slots + static_cast<std::size_t>(global_tile) * spill_slot_reals<M> : nullptr;
  const data<float> d = bind_tile_data<M>(shared, slot);
  const std::size_t un = static_cast<std::size_t>(n);
  for (int e = global_tile; e < n; e += static_cast<int>(gridDim.x) * epb) {
    const std::size_t i = static_cast<std::size_t>(e);
    for (int k = t.lane; k < sim::nq; k += lanes) d.qpos[k] = qpos[k * un + i];
    for (int k = t.lane; k < sim::nv; k += lanes) {
      d.qvel[k] = qvel[k * un + i];
      d.qfrc_applied[k] = 0.0f;
    }
    for (int k = t.lane; k < sim::nu; k += lanes) d.ctrl[k] = ctrl[k * un + i];
    if (t.lane == 0) {
      d.time[0] = 0.0f;
      d.prev_nefc[0] = 0.0f;
    }
    t.sync();
    for (int s = 0; s < substeps; ++s) tile_step<sim::colliders>(m, d, t);
    for (int k = t.lane; k < sim::nq; k += lanes) qpos[k * un + i] = d.qpos[k];
    for (int k = t.lane; k < sim::nv; k += lanes) qvel[k * un + i] = d.qvel[k];
    t.sync();
  }
}

// The occupancy calculator's best launch of `kernel` for a layout: environments per block from 32 / lanes (one
// warp) up to what the shared memory and 1024 threads allow, keeping the one that holds the most environments per
// SM (the smaller block on a tie); envs_per_block > 0 asks for that size instead. Sets the kernel's dynamic shared
// memory attribute to the device's opt-in size.
template <class Kernel>
tile_plan plan_tiles(Kernel kernel, tile_layout layout, std::size_t table_bytes, std::size_t bytes_per_env,
                     int envs_per_block = 0) {
  gmi::require(valid_tile_lanes(layout.lanes), "physics warp path lanes per environment", layout.lanes,
               "8, 16 or 32");
  int dev = 0, optin = 0;
  GMI_CUDA_TRY(cudaGetDevice(&dev));
  GMI_CUDA_TRY(cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, dev));
  const std::size_t room = static_cast<std::size_t>(optin);
  gmi::require(room >= table_bytes + bytes_per_env, "physics warp path shared memory per block", optin,
               ">= " + std::to_string(table_bytes + bytes_per_env) + " bytes (the model and one environment)");
  const int per_warp = 32 / layout.lanes;
  const std::size_t fit_shared = (room - table_bytes) / bytes_per_env;
  const int fit = static_cast<int>(fit_shared < std::size_t(1024 / layout.lanes) ? fit_shared : 1024 / layout.lanes);
  gmi::require(envs_per_block >= 0 && envs_per_block <= fit, "physics warp path environments per block",
               envs_per_block, "0 (the best) or 1.." + std::to_string(fit) + " (shared memory, 1024 threads)");
  // The device's whole opt-in size: every layout's launches of this kernel fit under it.
  GMI_CUDA_TRY(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, optin));
  cudaFuncAttributes attributes{};
  GMI_CUDA_TRY(cudaFuncGetAttributes(&attributes, kernel));
  tile_plan best;
  best.layout = layout;
  auto consider = [&](int epb) {
    tile_plan p;
    p.layout = layout;
    p.envs_per_block = epb;
    p.threads = (epb * layout.lanes + 31) / 32 * 32;
    p.shared_bytes = table_bytes + static_cast<std::size_t>(epb) * bytes_per_env;
    GMI_CUDA_TRY(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&p.blocks_per_sm, kernel, p.threads, p.shared_bytes));
    p.resident_envs_per_sm = p.blocks_per_sm * epb;
    p.registers_per_thread = attributes.numRegs;
    if (p.resident_envs_per_sm > best.resident_envs_per_sm) best = p;
  };
  if (envs_per_block > 0) {
    consider(envs_per_block);
  } else {
    if (fit < per_warp) consider(fit);
    for (int epb = per_warp; epb <= fit; epb += per_warp) consider(epb);
  }
  gmi::require(best.resident_envs_per_sm > 0, "physics warp path blocks resident per SM", 0,
               ">= 1 (registers or shared memory exhausted)");
  return best;
}

// Blocks of a launch over n environments: enough for n, at most as many as are resident at once.
inline int tile_grid(const tile_plan& p, std::size_t n, int sm_count) {
  const std::size_t need = (n + p.envs_per_block - 1) / p.envs_per_block;
  const std::size_t resident = static_cast<std::size_t>(p.blocks_per_sm) * static_cast<std::size_t>(sm_count);
  return static_cast<int>(need < resident ? need : resident);
}
}  // namespace detail

// num_envs environments of the built-in model M, a tile of layout.lanes lanes each, in the layout of local_batch
// (batch_local.cuh): element-major qpos (nq x n), qvel and ctrl; every environment starts at qpos0, at rest,
// controls zero. envs_per_block 0 lets the occupancy calculator pick (the most environments resident per SM);
// max_blocks > 0 caps the grid below the resident count (each tile then steps more environments in turn).
template <class M>
class warp_batch {
 public:
  using sim = builtin_sim<M>;
  warp_batch(int num_envs, cudaStream_t s, int envs_per_block = 0, tile_layout layout = {}, int max_blocks = 0)
      : n_(num_envs) {
    gmi::require(max_blocks >= 0, "physics warp_batch max_blocks", max_blocks, ">= 0 (0: the resident count)");
    gmi::require(num_envs >= 1, "physics warp_batch num_envs", num_envs, ">= 1");
    plan_ = detail::plan_tiles(detail::warp_step_envs<M>, layout, table_bytes(), scratch_bytes_per_env(layout),
                               envs_per_block);
    int dev = 0;
    GMI_CUDA_TRY(cudaGetDevice(&dev));
    GMI_CUDA_TRY(cudaDeviceGetAttribute(&sms_, cudaDevAttrMultiProcessorCount, dev));
    grid_ = detail::tile_grid(plan_, static_cast<std::size_t>(num_envs), sms_);
    if (max_blocks > 0 && max_blocks < grid_) grid_ = max_blocks;
    if (layout.spill_rows)
      slots_ = gmi::cuda::device_buffer<float>(static_cast<std::size_t>(grid_) * plan_.envs_per_block *
                                               detail::spill_slot_reals<M>);
    const std::vector<float> t = sim::table();
    table_ = gmi::cuda::device_buffer<float>(t.size());
    GMI_CUDA_TRY(cudaMemcpyAsync(table_.data(), t.data(), t.size() * sizeof(float), cudaMemcpyHostToDevice, s));
    const model_view<float> host = sim::view(t.data());  // the same words on the host, for qpos0
    const std::size_t n = static_cast<std::size_t>(num_envs);
    std::vector<float> q(static_cast<std::size_t>(sim::nq) * n);
    for (int k = 0; k < sim::nq; ++k)
      for (std::size_t e = 0; e < n; ++e) q[k * n + e] = host.qpos0[k];
    qpos_ = gmi::cuda::device_buffer<float>(q.size());
    qvel_ = gmi::cuda::device_buffer<float>(static_cast<std::size_t>(sim::nv) * n);
    ctrl_ = gmi::cuda::device_buffer<float>(static_cast<std::size_t>(sim::nu > 0 ? sim::nu : 1) * n);
    GMI_CUDA_TRY(cudaMemcpyAsync(qpos_.data(), q.data(), q.size() * sizeof(float), cudaMemcpyHostToDevice, s));
    GMI_CUDA_TRY(cudaMemsetAsync(qvel_.data(), 0, qvel_.size() * sizeof(float), s));
    GMI_CUDA_TRY(cudaMemsetAsync(ctrl_.data(), 0, ctrl_.size() * sizeof(float), s));
    GMI_CUDA_TRY(cudaStreamSynchronize(s));  // the host vectors go out of scope here
  }

  // substeps physics steps of every environment.
  void step(cudaStream_t s, int substeps = 1) {
    detail::warp_step_envs<M><<<grid_, plan_.threads, plan_.shared_bytes, s>>>(
        M::options(), table_.data(), qpos_.data(), qvel_.data(), ctrl_.data(), n_, substeps, plan_.layout.lanes,
        plan_.envs_per_block, plan_.layout.spill_rows ? slots_.data() : nullptr);
    GMI_CUDA_TRY(cudaGetLastError());
  }
  [[nodiscard]] int num_envs() const { return n_; }
  [[nodiscard]] const tile_plan& plan() const { return plan_; }
  [[nodiscard]] int envs_per_block() const { return plan_.envs_per_block; }
  [[nodiscard]] int warps_per_block() const { return plan_.threads / 32; }
  [[nodiscard]] int blocks() const { return grid_; }
  [[nodiscard]] float* qpos() { return qpos_.data(); }
  [[nodiscard]] float* qvel() { return qvel_.data(); }
  [[nodiscard]] float* ctrl() { return ctrl_.data(); }
  // Global memory per environment (state and controls; the pipeline is in shared memory while a tile runs, and
  // the spilled rows' slots belong to the resident tiles, not to environments: spill_bytes()).
  [[nodiscard]] std::size_t bytes_per_env() const { return (sim::nq + sim::nv + sim::nu) * sizeof(float); }
  [[nodiscard]] std::size_t spill_bytes() const { return slots_.size() * sizeof(float); }
  [[nodiscard]] static constexpr std::size_t table_bytes() { return detail::warp_table_words<M> * sizeof(float); }
  // Shared memory of one environment's arrays: all of them, or without the spilled rows.
  [[nodiscard]] static constexpr std::size_t scratch_bytes_per_env(tile_layout layout = {}) {
    return detail::tile_shared_reals<M>(layout.spill_rows) * sizeof(float);
  }
  [[nodiscard]] std::size_t shared_bytes() const { return plan_.shared_bytes; }

 private:
  int n_;
  int sms_ = 0, grid_ = 0;
  tile_plan plan_;
  gmi::cuda::device_buffer<float> table_, slots_;
  gmi::cuda::device_buffer<float> qpos_, qvel_, ctrl_;
};

}  // namespace gmi::physics
