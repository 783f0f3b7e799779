#pragma once
// The exact minimiser of 1/2 x'Hx + c'x over x >= 0 for up to four variables (H symmetric positive definite):
// the block step of the constraint solve for one pyramidal contact. Every active set is tried; each candidate
// is feasible, and the one of least objective is the unique minimiser.

#include <gmi/core/hd.hpp>

namespace gmi::physics::detail {

// Solves the k x k system a y = b in place (Gaussian elimination; a positive definite needs no pivoting).
template <class T>
GMI_HD inline bool solve_small(int k, T* a, T* b) {
  for (int p = 0; p < k; ++p) {
    if (!(a[p * k + p] > T(0))) return false;
    for (int r = p + 1; r < k; ++r) {
      const T f = a[r * k + p] / a[p * k + p];
      for (int c = p; c < k; ++c) a[r * k + c] -= f * a[p * k + c];
      b[r] -= f * b[p];
    }
  }
  for (int p = k - 1; p >= 0; --p) {
    for (int c = p + 1; c < k; ++c) b[p] -= a[p * k + c] * b[c];
    b[p] /= a[p * k + p];
  }
  return true;
}

// x = argmin over x >= 0 of 1/2 x'Hx + c'x, n <= 4, H row-major n x n.
template <class T>
GMI_HD void nonnegative_qp(int n, const T* h, const T* c, T* x) {
  T best = T(0);  // x = 0 has objective 0
  for (int i = 0; i < n; ++i) x[i] = 0;
  for (int mask = 1; mask < (1 << n); ++mask) {
    int idx[4];
    int k = 0;
    for (int i = 0; i < n; ++i) {
      if (mask & (1 << i)) idx[k++] = i;
    }
    T a[16], y[4];
    for (int r = 0; r < k; ++r) {
      for (int s = 0; s < k; ++s) a[r * k + s] = h[idx[r] * n + idx[s]];
      y[r] = -c[idx[r]];
    }
    if (!solve_small(k, a, y)) continue;
    bool feasible = true;
    for (int r = 0; r < k; ++r) feasible = feasible && y[r] >= T(0);
    if (!feasible) continue;
    // On the free set H_SS y = -c_S, so the objective is 1/2 c_S' y.
    T objective = 0;
    for (int r = 0; r < k; ++r) objective += T(0.5) * c[idx[r]] * y[r];
    if (objective < best) {
      best = objective;
      for (int i = 0; i < n; ++i) x[i] = 0;
      for (int r = 0; r < k; ++r) x[idx[r]] = y[r];
    }
  }
}

}  // namespace gmi::physics::detail
