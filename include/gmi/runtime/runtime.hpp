#pragma once
// The runtime: a GMI's identity, the launcher and supervisors (processes or threads), the GMI API (context),
// and the glue to partition backends.

#include <gmi/runtime/context.hpp>
#include <gmi/runtime/crash_report.hpp>
#include <gmi/runtime/identity.hpp>
#include <gmi/runtime/launcher.hpp>
#include <gmi/runtime/gmis.hpp>
#include <gmi/runtime/partitioned.hpp>
#include <gmi/runtime/segment.hpp>
#include <gmi/runtime/supervisor.hpp>
#include <gmi/runtime/trace.hpp>
