#pragma once
// The batched device path: a model's pools copied to the device once (device_model), and num_envs
// environments' data element-major in one device array (batch), stepped by a kernel with one thread per
// environment that runs the same per-environment stages as the host. Needs nvcc.

#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstddef>
#include <vector>

#include <gmi/core/error.hpp>
#include <gmi/cuda/buffer.hpp>
#include <gmi/exec/cuda.cuh>
#include <gmi/physics/data.hpp>
#include <gmi/physics/model.hpp>
#include <gmi/physics/step.hpp>

namespace gmi::physics {

// A model's arrays in device memory and the view the kernels read.
template <class T>
class device_model {
 public:
  device_model(const model<T>& m, cudaStream_t s) {
    const std::vector<int> ints = m.int_pool();
    const std::vector<T> reals = m.real_pool();
    ints_ = gmi::cuda::device_buffer<int>(std::max<std::size_t>(ints.size(), 1));
    reals_ = gmi::cuda::device_buffer<T>(std::max<std::size_t>(reals.size(), 1));
    GMI_CUDA_TRY(cudaMemcpyAsync(ints_.data(), ints.data(), ints.size() * sizeof(int), cudaMemcpyHostToDevice, s));
    GMI_CUDA_TRY(cudaMemcpyAsync(reals_.data(), reals.data(), reals.size() * sizeof(T), cudaMemcpyHostToDevice, s));
    GMI_CUDA_TRY(cudaStreamSynchronize(s));  // the host vectors go out of scope here
    view_ = m.view_of_pools(ints_.data(), reals_.data());
  }
  [[nodiscard]] const model_view<T>& view() const { return view_; }
  [[nodiscard]] std::size_t bytes() const { return ints_.size() * sizeof(int) + reals_.size() * sizeof(T); }

 private:
  gmi::cuda::device_buffer<int> ints_;
  gmi::cuda::device_buffer<T> reals_;
  model_view<T> view_{};
};

namespace detail {
// Kernel bodies as named types (device lambdas in templates trip nvcc's captureless-lambda warnings).
template <class T>
struct reset_envs {
  model_view<T> m;
  data_layout l;
  T* base;
  int n;
  GMI_DEVICE void operator()(std::size_t i) const {
    const data<T> d = data_of(l, base, n, static_cast<int>(i));
    for (std::size_t k = 0; k < l.reals_per_env; ++k) base[k * n + i] = T(0);
    for (int k = 0; k < m.size.nq; ++k) d.qpos[k] = m.qpos0[k];
  }
};

template <class T>
struct step_envs {
  model_view<T> m;
  data_layout l;
  T* base;
  int n;
  int substeps;
  GMI_DEVICE void operator()(std::size_t i) const {
    const data<T> d = data_of(l, base, n, static_cast<int>(i));
    for (int k = 0; k < substeps; ++k) step(m, d);
  }
};
}  // namespace detail

// num_envs environments of one model on the device. Array `a` of data_layout holds element k of environment e
// at field(l.a)[k * num_envs + e].
template <class T>
class batch {
 public:
  batch(const model<T>& m, int num_envs, cudaStream_t s)
      : model_(m, s), layout_(make_layout(m.size)), n_(num_envs) {
    gmi::require(num_envs >= 1, "physics batch num_envs", num_envs, ">= 1");
    data_ = gmi::cuda::device_buffer<T>(layout_.reals_per_env * static_cast<std::size_t>(num_envs));
    reset(s);
  }

  // Every environment at qpos0, at rest, controls and applied forces zero, time 0.
  void reset(cudaStream_t s) {
    gmi::exec::for_each(gmi::exec::cuda{s}, static_cast<std::size_t>(n_),
                        detail::reset_envs<T>{model_.view(), layout_, data_.data(), n_});
  }
  // substeps physics steps of every environment.
  void step(cudaStream_t s, int substeps = 1, int block_size = 128) {
    gmi::exec::cuda p{s};
    p.block_size = block_size;
    gmi::exec::for_each(p, static_cast<std::size_t>(n_),
                        detail::step_envs<T>{model_.view(), layout_, data_.data(), n_, substeps});
  }

  [[nodiscard]] int num_envs() const { return n_; }
  [[nodiscard]] const data_layout& layout() const { return layout_; }
  [[nodiscard]] const model_view<T>& model_view_on_device() const { return model_.view(); }
  // Start of one array of the layout (pass an offset such as layout().qpos) in device memory.
  [[nodiscard]] T* field(std::size_t offset) { return data_.data() + offset * static_cast<std::size_t>(n_); }
  [[nodiscard]] T* all() { return data_.data(); }
  // Device memory per environment (its data; the model is shared).
  [[nodiscard]] std::size_t bytes_per_env() const { return layout_.reals_per_env * sizeof(T); }

 private:
  device_model<T> model_;
  data_layout layout_;
  int n_;
  gmi::cuda::device_buffer<T> data_;
};

}  // namespace gmi::physics
