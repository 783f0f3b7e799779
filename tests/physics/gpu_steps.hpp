#pragma once
// Host-compiler entry to the device batch for the GPU test (the kernels live in gpu_steps.cu).
#include <vector>

#include <gmi/physics/model.hpp>

namespace gmi::test {
// Steps n environments of m on the device `steps` times from the given element-major qpos (nq x n), qvel
// (nv x n) and ctrl (nu x n); returns the final qpos and qvel, element-major.
void run_physics_on_device(const gmi::physics::model<float>& m, int n, std::vector<float>& qpos,
                           std::vector<float>& qvel, const std::vector<float>& ctrl, int steps);
}  // namespace gmi::test
