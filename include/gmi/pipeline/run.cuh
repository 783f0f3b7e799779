#pragma once
// gmi::run<Pipeline>(argc, argv): the main() of a gmi program. Flags fill a train_config on top of the pipeline's
// defaults (cli.hpp), then gmi::train (or gmi::serve for the serving layout) runs it; SIGINT/SIGTERM stop it
// cleanly. Returns the process's exit code: 0; 2 for a bad flag or option (one line); 1 for a failure, a diverged
// training or GMIs that ended with different weights; 128 + the signal after SIGINT/SIGTERM.

#include <csignal>
#include <cstdio>
#include <cstdlib>

#include <gmi/core/error.hpp>
#include <gmi/pipeline/cli.hpp>
#include <gmi/pipeline/defaults.hpp>
#include <gmi/pipeline/train.cuh>
#include <gmi/runtime/gmis.hpp>

namespace gmi {

template <class Pipeline>
int run(int argc, char** argv) {
  // An off-policy trainer has its own flags and layout (run_offpolicy.cuh).
  if constexpr (gmi::trainer_is_off_policy<typename Pipeline::trainer>()) return detail::run_offpolicy<Pipeline>(argc, argv);
  train_config<Pipeline> config = default_config<Pipeline>();
  if (const auto code = parse_cli(argc, argv, config)) return *code;
  const char* program = argc > 0 ? argv[0] : "gmi";
  std::signal(SIGINT, detail::on_stop_signal);
  std::signal(SIGTERM, detail::on_stop_signal);
  try {
    if constexpr (Pipeline::layout_type::trains) return train<Pipeline>(config).exit_code;
    else return serve<Pipeline>(config).exit_code;
  } catch (const gmi::config_error& e) {
    std::fprintf(stderr, "%s: %s\n", program, detail::with_flag_name(e.what()).c_str());
    return 2;
  } catch (const runtime::gmi_failed& e) {
    std::fprintf(stderr, "%s: %s\n", program, e.what());
    if (detail::hosts_failed.load()) {  // a GMI thread may still wait on a host that is gone: no normal exit
      std::fflush(nullptr);
      std::_Exit(1);
    }
    return 1;
  } catch (const gmi::error& e) {
    std::fprintf(stderr, "%s: %s\n", program, e.describe().c_str());
    return 1;
  }
}

}  // namespace gmi
