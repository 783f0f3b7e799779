#pragma once
// nn/: networks with compile-time sizes, action heads, Adam and running normalizers. Under nvcc the batched
// CUDA paths (.cuh) are added.
#include <gmi/nn/activation.hpp>
#include <gmi/nn/actor_critic.hpp>
#include <gmi/nn/adam.hpp>
#include <gmi/nn/heads.hpp>
#include <gmi/nn/layers.hpp>
#include <gmi/nn/mlp.hpp>
#include <gmi/nn/network_config.hpp>
#include <gmi/nn/normalizer.hpp>
#if defined(__CUDACC__)
#include <gmi/nn/adam.cuh>
#include <gmi/nn/lt_linear.cuh>
#include <gmi/nn/lt_mlp.cuh>
#include <gmi/nn/mlp.cuh>
#include <gmi/nn/normalizer.cuh>
#endif
