#pragma once
// gmi::physics: articulated rigid-body dynamics shaped like MuJoCo (a flat read-only model, per-environment
// data, the forward pipeline as one header per stage), loaded from an MJCF subset. Host-only umbrella; the
// batched device path is batch.cuh.

#include <gmi/physics/actuation.hpp>
#include <gmi/physics/crb.hpp>
#include <gmi/physics/data.hpp>
#include <gmi/physics/collision.hpp>
#include <gmi/physics/constraints.hpp>
#include <gmi/physics/factor.hpp>
#include <gmi/physics/host_batch.hpp>
#include <gmi/physics/integrate.hpp>
#include <gmi/physics/kinematics.hpp>
#include <gmi/physics/limits.hpp>
#include <gmi/physics/math.hpp>
#include <gmi/physics/mjcf.hpp>
#include <gmi/physics/model.hpp>
#include <gmi/physics/passive.hpp>
#include <gmi/physics/rne.hpp>
#include <gmi/physics/step.hpp>
