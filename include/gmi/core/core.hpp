#pragma once
// core/: errors, status/result, spans, a bytes fingerprint (FNV-1a), the counter-based RNG, settings from the environment. Standard C++ only.
#include <gmi/core/cuda_try.hpp>
#include <gmi/core/env_var.hpp>
#include <gmi/core/error.hpp>
#include <gmi/core/hash.hpp>
#include <gmi/core/hd.hpp>
#include <gmi/core/rng.hpp>
#include <gmi/core/span.hpp>
#include <gmi/core/status.hpp>
#include <gmi/core/version.hpp>
