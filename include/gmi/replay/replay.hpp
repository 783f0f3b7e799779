#pragma once
// gmi::replay, host side: table specs, samplers, removers, rate limiters, snapshots, the host table and shards.
// The device table (device memory + mapped pinned overflow, samplers as kernels) is <gmi/replay/device_table.cuh>.

#include <gmi/replay/host_table.hpp>
#include <gmi/replay/rate_limiter.hpp>
#include <gmi/replay/sharded.hpp>
#include <gmi/replay/snapshot.hpp>
#include <gmi/replay/spec.hpp>
