#pragma once
// Activation functions as tag types: f(x) and the derivative expressed through the output y = f(x), so the
// backward pass needs only the stored layer outputs (not the pre-activations).

#include <concepts>

#include <gmi/core/hd.hpp>
#include <gmi/nn/detail/math.hpp>

namespace gmi::nn {

struct activation_tag {};

struct identity {
  using activation_concept = activation_tag;
  template <class T>
  GMI_HD static T f(T x) {
    return x;
  }
  template <class T>
  GMI_HD static T grad_from_output(T) {
    return T(1);
  }
};

// ELU with alpha = 1 (torch.nn.ELU default): x for x > 0, exp(x) - 1 otherwise; f' = y + 1 on the left.
struct elu {
  using activation_concept = activation_tag;
  template <class T>
  GMI_HD static T f(T x) {
    return x > T(0) ? x : detail::expm1_(x);
  }
  template <class T>
  GMI_HD static T grad_from_output(T y) {
    return y > T(0) ? T(1) : y + T(1);
  }
};

struct relu {
  using activation_concept = activation_tag;
  template <class T>
  GMI_HD static T f(T x) {
    return x > T(0) ? x : T(0);
  }
  template <class T>
  GMI_HD static T grad_from_output(T y) {
    return y > T(0) ? T(1) : T(0);
  }
};

// Named tanh_act so that an unqualified tanh() inside gmi::nn still means the function.
struct tanh_act {
  using activation_concept = activation_tag;
  template <class T>
  GMI_HD static T f(T x) {
    return detail::tanh_(x);
  }
  template <class T>
  GMI_HD static T grad_from_output(T y) {
    return T(1) - y * y;
  }
};

template <class A>
concept activation = requires(float x, double d) {
  typename A::activation_concept;
  { A::f(x) } -> std::same_as<float>;
  { A::grad_from_output(x) } -> std::same_as<float>;
  { A::f(d) } -> std::same_as<double>;
};

static_assert(activation<elu> && activation<relu> && activation<tanh_act> && activation<identity>);
static_assert(!activation<int>);

}  // namespace gmi::nn
