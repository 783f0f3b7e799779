#pragma once
// A warp per environment for built-in models (sizes known at compile time): the model's words and each
// environment's pipeline arrays live in shared memory, qpos, qvel and ctrl in global memory (element-major, as in
// batch_local.cuh). The tree-serial stages (kinematics, subtree inertias, bias forces, factorizations,
// integration) run on lane 0; the stages with independent items spread over the lanes: body inertias and dof
// motions (lane per body, per joint), mass-matrix rows (lane per dof), geom frames, collision (lane per geom
// pair, two passes and a scan keep the serial contact order), contact rows (lane per contact), the rows'
// responses M^-1 J' and block couplings (lane per row), the warm start, and inside every Gauss-Seidel block the
// row gradients (lane per row), the four-variable QP (lane per active set) and the update of J M^-1 f (lane per
// dof). Each lane's arithmetic is the serial one in the serial order, so the result follows the thread-per-env
// step (step.hpp) up to the compiler's contractions. Also removes thread-per-env's divergence: a warp no longer
// waits for the slowest of 32 environments' solver sweeps. Needs nvcc.

#include <cuda_runtime_api.h>

#include <cstddef>
#include <string>
#include <vector>

#include <gmi/core/cuda_try.hpp>
#include <gmi/core/error.hpp>
#include <gmi/cuda/buffer.hpp>
#include <gmi/physics/builtin_task.hpp>
#include <gmi/physics/constraints.hpp>
#include <gmi/physics/detail/small_qp.hpp>
#include <gmi/physics/step.hpp>

namespace gmi::physics {

namespace detail {
constexpr unsigned full_warp = 0xffffffffu;

// Inclusive prefix sum over the warp's lanes.
__device__ inline int warp_inclusive_sum(int x, int lane) {
  for (int o = 1; o < 32; o <<= 1) {
    const int y = __shfl_up_sync(full_warp, x, o);
    if (lane >= o) x += y;
  }
  return x;
}

__device__ inline int warp_sum(int x) {
  for (int o = 16; o > 0; o >>= 1) x += __shfl_xor_sync(full_warp, x, o);
  return x;
}

// Geom frames and contacts: lane per geom, then lane per pair. Pass one counts each pair's contacts, a scan gives
// each pair its first slot, pass two writes; contacts past the capacity are dropped as the serial collide drops.
__device__ inline void warp_collide(const model_view<float>& m, const data<float>& d, int lane) {
  for (int g = lane; g < m.size.ngeom; g += 32) geom_frames(m, d, g);
  __syncwarp();
  const int cap = m.size.ncon_max;
  int base = 0;
  for (int p0 = 0; p0 < m.size.npair; p0 += 32) {
    const int p = p0 + lane;
    int count = 0;
    if (p < m.size.npair) {
      slot_sink<float> counter{nullptr, cap, p, 0};
      collide_pair(m, d, p, counter);
      count = counter.added;
    }
    const int incl = warp_inclusive_sum(count, lane);
    const int first = base + incl - count;
    if (count > 0 && first < cap) {
      slot_sink<float> writer{&d, cap, p, first};
      collide_pair(m, d, p, writer);
    }
    base += __shfl_sync(full_warp, incl, 31);
  }
  if (lane == 0) d.ncon[0] = float(base < cap ? base : cap);
  __syncwarp();
}

// Contact rows after the limit rows: lane per contact, row offsets by a scan; a contact whose rows pass nefc_max
// and every later one are dropped (the serial loop stops there).
__device__ inline void warp_contact_rows(const model_view<float>& m, const data<float>& d, int lane) {
  const int ncon = static_cast<int>(d.ncon[0]);
  int base = static_cast<int>(d.nefc[0]), kept = 0;
  for (int c0 = 0; c0 < ncon; c0 += 32) {
    const int c = c0 + lane;
    const int p = c < ncon ? static_cast<int>(d.con_pair[c]) : 0;
    const int rows = c < ncon ? (m.pair_condim[p] == 1 ? 1 : 4) : 0;
    const int incl = warp_inclusive_sum(rows, lane);
    const int r0 = base + incl - rows;
    const bool fits = c < ncon && r0 + rows <= m.size.nefc_max;
    if (fits) {
      int nth = 0;  // index among the pair's contacts (consecutive)
      while (c - nth - 1 >= 0 && static_cast<int>(d.con_pair[c - nth - 1]) == p) ++nth;
      contact_rows(m, d, c, r0, nth);
    }
    kept += warp_sum(fits ? rows : 0);
    base += __shfl_sync(full_warp, incl, 31);
  }
  __syncwarp();
  if (lane == 0) d.nefc[0] = d.nefc[0] + float(kept);
  __syncwarp();
}

// The block QP of constraints.hpp's sweep with one active set per lane (masks 1..15); every lane returns x.
__device__ inline void warp_block_qp(const float* h, const float* c, float* x, int lane) {
  int idx[4], k = 0;
  float y[4], objective = 0.0f;
  const int mask = lane + 1;
  bool ok = mask < 16 && qp_candidate(4, h, c, mask, idx, k, y, objective);
  // The serial loop keeps the first mask of least objective below 0 (that of x = 0).
  float best = ok && objective < 0.0f ? objective : 0.0f;
  int who = ok && objective < 0.0f ? mask : 0;
  for (int o = 16; o > 0; o >>= 1) {
    const float ob = __shfl_xor_sync(full_warp, best, o);
    const int ow = __shfl_xor_sync(full_warp, who, o);
    if (qp_prefer(ob, ow, best, who)) {
      best = ob;
      who = ow;
    }
  }
  float mine[4] = {0.0f, 0.0f, 0.0f, 0.0f};
  if (mask == who) {
    for (int r = 0; r < k; ++r) mine[idx[r]] = y[r];
  }
  for (int i = 0; i < 4; ++i) x[i] = who == 0 ? 0.0f : __shfl_sync(full_warp, mine[i], who - 1);
}

// constraints.hpp's solve_constraints over the warp: the same rows, forces and sweeps.
__device__ inline void warp_solve_constraints(const model_view<float>& m, const data<float>& d,
                                              strided<float> qacc_smooth, int lane) {
  const int nv = m.size.nv;
  const int nefc = static_cast<int>(d.nefc[0]);
  for (int r = lane; r < nefc; r += 32) row_response(m, d, r);
  __syncwarp();
  const int np = static_cast<int>(d.prev_nefc[0]);
  for (int r = lane; r < nefc; r += 32) {
    if (d.efc_block[r] == 4.0f) block_couplings(m, d, r);
    d.efc_force[r] = warm_force(d, r, np);
  }
  __syncwarp();
  for (int i = lane; i < nv; i += 32) {
    float col = qacc_smooth[i];
    for (int r = 0; r < nefc; ++r) {
      const float f = d.efc_force[r];
      if (f != 0.0f) col += f * d.efc_W[r * nv + i];
    }
    d.efc_col[i] = col;
  }
  __syncwarp();
  int sweeps = 0;
  for (int it = 0; it < m.iterations && nefc > 0; ++it) {
    ++sweeps;
    float change = 0.0f, scale = 0.0f;
    for (int r = 0; r < nefc;) {
      const int size = d.efc_block[r] == 4.0f ? 4 : 1;
      // Lane b < size: row r + b's gradient, in the serial order.
      float gb = 0.0f;
      if (lane < size) {
        gb = d.efc_R[r + lane] * d.efc_force[r + lane] - d.efc_aref[r + lane];
        for (int i = 0; i < nv; ++i) gb += d.efc_J[(r + lane) * nv + i] * d.efc_col[i];
      }
      float g[4], f[4], x[4];
      for (int b = 0; b < 4; ++b) {
        g[b] = __shfl_sync(full_warp, gb, b);
        f[b] = b < size ? d.efc_force[r + b] : 0.0f;
      }
      if (size == 1) {
        x[0] = f[0] - g[0] / d.efc_AR[r];
        x[0] = x[0] > 0.0f ? x[0] : 0.0f;
      } else {
        float h[16], c[4];
        for (int i = 0; i < 4; ++i) {
          c[i] = g[i];
          for (int j = 0; j < 4; ++j) h[4 * i + j] = d.efc_A4[4 * r + 4 * i + j] + (i == j ? d.efc_R[r + i] : 0.0f);
        }
        for (int i = 0; i < 4; ++i) {
          for (int j = 0; j < 4; ++j) c[i] -= h[4 * i + j] * f[j];
        }
        warp_block_qp(h, c, x, lane);
      }
      __syncwarp();  // every lane has read the forces and J M^-1 f before they change
      for (int b = 0; b < size; ++b) {
        const float delta = x[b] - f[b];
        if (delta != 0.0f) {
          for (int i = lane; i < nv; i += 32) d.efc_col[i] += delta * d.efc_W[(r + b) * nv + i];
          if (lane == 0) d.efc_force[r + b] = x[b];
        }
        change = fabsf(delta) > change ? fabsf(delta) : change;
        scale = x[b] > scale ? x[b] : scale;
      }
      __syncwarp();
      r += size;
    }
    if (change <= m.tolerance * (1.0f + scale)) break;
  }
  for (int r = lane; r < nefc; r += 32) {
    d.prev_key[r] = d.efc_key[r];
    d.prev_force[r] = d.efc_force[r];
  }
  for (int i = lane; i < nv; i += 32) {
    float q = 0.0f;
    for (int r = 0; r < nefc; ++r) q += d.efc_J[r * nv + i] * d.efc_force[r];
    d.qfrc_constraint[i] = q;
  }
  __syncwarp();
  if (lane == 0) {
    d.solver_sweeps[0] = float(sweeps);
    d.prev_nefc[0] = float(nefc);
  }
  __syncwarp();
}

// step.hpp's step over one warp (d in memory every lane sees).
__device__ inline void warp_step(const model_view<float>& m, const data<float>& d, int lane) {
  const int nv = m.size.nv;
  if (lane == 0) {
    kinematics(m, d);
    for (int k = 0; k < 10; ++k) d.cinert[k] = 0;
  }
  __syncwarp();
  for (int b = 1 + lane; b < m.size.nbody; b += 32) body_inertia(m, d, b);
  for (int j = lane; j < m.size.njnt; j += 32) dof_motions(m, d, j);
  __syncwarp();
  warp_collide(m, d, lane);
  if (lane == 0) {
    composite_inertias(m, d);
    velocities(m, d);
    bias_forces(m, d);
    passive_forces(m, d);
    actuation(m, d);
    for (int i = 0; i < nv; ++i) {
      d.qacc[i] = d.qfrc_passive[i] - d.qfrc_bias[i] + d.qfrc_applied[i] + d.qfrc_actuator[i];
    }
    d.nefc[0] = 0;
    add_limit_rows(m, d);
  }
  __syncwarp();
  for (int i = lane; i < nv; i += 32) mass_matrix_row(m, d, i);
  __syncwarp();
  const int first_contact_row = static_cast<int>(d.nefc[0]);
  warp_contact_rows(m, d, lane);
  if (d.nefc[0] > 0.0f) {
    if (lane == 0) {
      factor(m, d.qM, d.qLDc, static_cast<const float*>(nullptr), 0.0f);
      for (int i = 0; i < nv; ++i) d.qfrc_constraint[i] = d.qacc[i];
      solve(m, d.qLDc, d.qfrc_constraint);
    }
    __syncwarp();
    warp_solve_constraints(m, d, d.qfrc_constraint, lane);
  } else if (lane == 0) {
    for (int i = 0; i < nv; ++i) d.qfrc_constraint[i] = 0;
    d.prev_nefc[0] = 0;
    d.solver_sweeps[0] = 0;
  }
  if (lane == 0) {
    contact_forces(m, d, first_contact_row);
    for (int i = 0; i < nv; ++i) d.qacc[i] += d.qfrc_constraint[i];
    factor(m, d.qM, d.qLD, m.dof_damping, m.timestep);
    solve(m, d.qLD, d.qacc);
    const float h = m.timestep;
    for (int i = 0; i < nv; ++i) d.qvel[i] += h * d.qacc[i];
    integrate_positions(m, d.qpos, d.qvel, h);
    d.time[0] += h;
  }
  __syncwarp();
}

// Words of the model table and reals of one environment's arrays, each rounded up to 16 bytes.
template <class M>
constexpr std::size_t warp_table_words = (sizeof(M::words) / 4 + 3) / 4 * 4;
template <class M>
constexpr std::size_t warp_scratch_reals = (builtin_sim<M>::scratch_reals + 3) / 4 * 4;

template <class M>
__global__ void warp_step_envs(model_options opts, const float* table, float* qpos, float* qvel, const float* ctrl,
                               int n, int substeps) {
  using sim = builtin_sim<M>;
  extern __shared__ float4 shared_words[];
  float* words = reinterpret_cast<float*>(shared_words);
  constexpr int table_words = static_cast<int>(sizeof(M::words) / 4);
  // As 32-bit integers: the table mixes int and float words, and a copy must keep every bit.
  const unsigned* from = reinterpret_cast<const unsigned*>(table);
  unsigned* to = reinterpret_cast<unsigned*>(words);
  for (int k = threadIdx.x; k < table_words; k += blockDim.x) to[k] = from[k];
  __syncthreads();
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const int e = blockIdx.x * (blockDim.x >> 5) + warp;
  if (e >= n) return;  // the whole warp
  const model_view<float> m = view_of_words(M::sizes(), opts, words);
  float* scratch = words + warp_table_words<M> + static_cast<std::size_t>(warp) * warp_scratch_reals<M>;
  const data<float> d = data_of(make_layout(M::sizes()), scratch, 1, 0);
  const std::size_t i = static_cast<std::size_t>(e);
  for (int k = lane; k < sim::nq; k += 32) d.qpos[k] = qpos[k * static_cast<std::size_t>(n) + i];
  for (int k = lane; k < sim::nv; k += 32) {
    d.qvel[k] = qvel[k * static_cast<std::size_t>(n) + i];
    d.qfrc_applied[k] = 0.0f;
  }
  for (int k = lane; k < sim::nu; k += 32) d.ctrl[k] = ctrl[k * static_cast<std::size_t>(n) + i];
  if (lane == 0) {
    d.time[0] = 0.0f;
    d.prev_nefc[0] = 0.0f;
  }
  __syncwarp();
  for (int s = 0; s < substeps; ++s) warp_step(m, d, lane);
  for (int k = lane; k < sim::nq; k += 32) qpos[k * static_cast<std::size_t>(n) + i] = d.qpos[k];
  for (int k = lane; k < sim::nv; k += 32) qvel[k * static_cast<std::size_t>(n) + i] = d.qvel[k];
}
}  // namespace detail

// num_envs environments of the built-in model M, a warp each, in the layout of local_batch (batch_local.cuh):
// element-major qpos (nq x n), qvel and ctrl; every environment starts at qpos0, at rest, controls zero.
// warps_per_block 0 picks the most that fit the device's shared memory (at most 8).
template <class M>
class warp_batch {
 public:
  using sim = builtin_sim<M>;
  warp_batch(int num_envs, cudaStream_t s, int warps_per_block = 0) : n_(num_envs) {
    gmi::require(num_envs >= 1, "physics warp_batch num_envs", num_envs, ">= 1");
    int dev = 0, optin = 0;
    GMI_CUDA_TRY(cudaGetDevice(&dev));
    GMI_CUDA_TRY(cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, dev));
    gmi::require(static_cast<std::size_t>(optin) >= table_bytes() + scratch_bytes_per_env(),
                 "physics warp_batch shared memory per block", optin,
                 ">= " + std::to_string(table_bytes() + scratch_bytes_per_env()) + " bytes (one environment)");
    const std::size_t fit = (static_cast<std::size_t>(optin) - table_bytes()) / scratch_bytes_per_env();
    if (warps_per_block == 0) warps_per_block = static_cast<int>(fit < 8 ? fit : 8);
    gmi::require(warps_per_block >= 1 && static_cast<std::size_t>(warps_per_block) <= fit,
                 "physics warp_batch warps_per_block", warps_per_block,
                 "1.." + std::to_string(fit) + " (shared memory)");
    warps_ = warps_per_block;
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
    // Per launch: batches of one model with other block sizes share the kernel and its attribute.
    GMI_CUDA_TRY(cudaFuncSetAttribute(detail::warp_step_envs<M>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                      static_cast<int>(shared_bytes())));
    const int blocks = (n_ + warps_ - 1) / warps_;
    detail::warp_step_envs<M><<<blocks, 32 * warps_, shared_bytes(), s>>>(M::options(), table_.data(), qpos_.data(),
                                                                         qvel_.data(), ctrl_.data(), n_, substeps);
    GMI_CUDA_TRY(cudaGetLastError());
  }
  [[nodiscard]] int num_envs() const { return n_; }
  [[nodiscard]] int warps_per_block() const { return warps_; }
  [[nodiscard]] float* qpos() { return qpos_.data(); }
  [[nodiscard]] float* qvel() { return qvel_.data(); }
  [[nodiscard]] float* ctrl() { return ctrl_.data(); }
  // Global memory per environment (state and controls; the pipeline is in shared memory while a warp runs).
  [[nodiscard]] std::size_t bytes_per_env() const { return (sim::nq + sim::nv + sim::nu) * sizeof(float); }
  [[nodiscard]] static constexpr std::size_t table_bytes() { return detail::warp_table_words<M> * sizeof(float); }
  [[nodiscard]] static constexpr std::size_t scratch_bytes_per_env() {
    return detail::warp_scratch_reals<M> * sizeof(float);
  }
  [[nodiscard]] std::size_t shared_bytes() const { return table_bytes() + warps_ * scratch_bytes_per_env(); }

 private:
  int n_;
  int warps_ = 1;
  gmi::cuda::device_buffer<float> table_;
  gmi::cuda::device_buffer<float> qpos_, qvel_, ctrl_;
};

}  // namespace gmi::physics
