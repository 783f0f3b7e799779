#pragma once
// num_envs environments of one model stepped on host threads (gmi::exec::host) by the same per-environment
// stages as the device path. Each environment's arrays form one contiguous block here (threads own whole
// blocks, so no two threads write one cache line), where the device batch interleaves environments instead.

#include <cstddef>
#include <vector>

#include <gmi/core/error.hpp>
#include <gmi/exec/host.hpp>
#include <gmi/physics/data.hpp>
#include <gmi/physics/model.hpp>
#include <gmi/physics/step.hpp>

namespace gmi::physics {

template <class T>
class host_batch {
 public:
  host_batch(model<T> m, int num_envs, gmi::exec::host policy = {})
      : model_(std::move(m)), layout_(make_layout(model_.size)), n_(num_envs), policy_(std::move(policy)) {
    gmi::require(num_envs >= 1, "physics host_batch num_envs", num_envs, ">= 1");
    data_.assign(layout_.reals_per_env * static_cast<std::size_t>(num_envs), T(0));
    reset();
  }

  // Every environment at qpos0, at rest, controls and applied forces zero, time 0.
  void reset() {
    std::fill(data_.begin(), data_.end(), T(0));
    for (int e = 0; e < n_; ++e) {
      const data<T> d = env(e);
      for (int k = 0; k < model_.size.nq; ++k) d.qpos[k] = model_.qpos0[k];
    }
  }
  // substeps physics steps of every environment.
  void step(int substeps = 1) {
    const model_view<T> v = model_.view();
    gmi::exec::for_each(policy_, static_cast<std::size_t>(n_), [&](std::size_t e) {
      const data<T> d = env(static_cast<int>(e));
      for (int k = 0; k < substeps; ++k) gmi::physics::step(v, d);
    });
  }

  // One environment's arrays (read its state, write its controls).
  [[nodiscard]] data<T> env(int e) {
    return data_of(layout_, data_.data() + static_cast<std::size_t>(e) * layout_.reals_per_env, 1, 0);
  }
  [[nodiscard]] int num_envs() const { return n_; }
  [[nodiscard]] const model<T>& physics_model() const { return model_; }

 private:
  model<T> model_;
  data_layout layout_;
  int n_;
  gmi::exec::host policy_;
  std::vector<T> data_;
};

}  // namespace gmi::physics
