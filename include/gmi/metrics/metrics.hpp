#pragma once
// metrics/: JSON-lines logs, progress lines, repetition summaries and result-line identity.
#include <gmi/metrics/jsonl.hpp>
#include <gmi/metrics/progress.hpp>
#include <gmi/metrics/run_info.hpp>
#include <gmi/metrics/summary.hpp>
