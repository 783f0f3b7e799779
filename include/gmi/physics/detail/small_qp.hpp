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

// The candidate of one active set (mask: the free variables): y on the free set (in mask order) and its
// objective, when H_SS y = -c_S is solvable with y >= 0; false otherwise.
template <class T>
GMI_HD inline bool qp_candidate(int n, const T* h, const T* c, int mask, int* idx, int& k, T* y, T& objective) {
  k = 0;
  for (int i = 0; i < n; ++i) {
    if (mask & (1 << i)) idx[k++] = i;
  }
  T a[16];
  for (int r = 0; r < k; ++r) {
    for (int s = 0; s < k; ++s) a[r * k + s] = h[idx[r] * n + idx[s]];
    y[r] = -c[idx[r]];
  }
  if (!solve_small(k, a, y)) return false;
  bool feasible = true;
  for (int r = 0; r < k; ++r) feasible = feasible && y[r] >= T(0);
  if (!feasible) return false;
  // On the free set H_SS y = -c_S, so the objective is 1/2 c_S' y.
  objective = 0;
  for (int r = 0; r < k; ++r) objective += T(0.5) * c[idx[r]] * y[r];
  return true;
}

// Whether candidate (objective ob, mask ow; ow 0: none) replaces (best, who) where the serial loop below would
// keep it: a lower objective, or an equal one from an earlier mask; candidates from every mask may come in any
// order (a warp's lanes reduce them pairwise).
template <class T>
GMI_HD inline bool qp_prefer(T ob, int ow, T best, int who) {
  return ow != 0 && (who == 0 || ob < best || (ob == best && ow < who));
}

// x = argmin over x >= 0 of 1/2 x'Hx + c'x, n <= 4, H row-major n x n.
template <class T>
GMI_HD void nonnegative_qp(int n, const T* h, const T* c, T* x) {
  T best = T(0);  // x = 0 has objective 0
  for (int i = 0; i < n; ++i) x[i] = 0;
  for (int mask = 1; mask < (1 << n); ++mask) {
    int idx[4], k = 0;
    T y[4], objective = 0;
    if (!qp_candidate(n, h, c, mask, idx, k, y, objective)) continue;
    if (objective < best) {
      best = objective;
      for (int i = 0; i < n; ++i) x[i] = 0;
      for (int r = 0; r < k; ++r) x[idx[r]] = y[r];
    }
  }
}

}  // namespace gmi::physics::detail
