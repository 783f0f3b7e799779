// libFuzzer harness for gmi::physics's MJCF loader: any input either loads or throws gmi::config_error; a model
// that loads is also stepped a few times (the stages must stay inside their arrays for every model the loader
// accepts). Anything else (a crash, a sanitizer report, another exception) is a finding. Built and run by
// run_mjcf_fuzz.sh.
#include <cstddef>
#include <cstdint>
#include <source_location>
#include <string>
#include <vector>

#if !defined(__cpp_lib_source_location)
// clang 14 lacks __builtin_source_location, so libstdc++ 12's <source_location> defines nothing under it. gmi's
// errors only carry the location; this stand-in (empty locations) lets the harness build with Debian's clang-14.
namespace std {
struct source_location {
  static constexpr source_location current() noexcept { return {}; }
  constexpr const char* file_name() const noexcept { return ""; }
  constexpr const char* function_name() const noexcept { return ""; }
  constexpr unsigned line() const noexcept { return 0; }
  constexpr unsigned column() const noexcept { return 0; }
};
}  // namespace std
#endif

#include <gmi/core/error.hpp>
#include <gmi/physics/physics.hpp>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* bytes, std::size_t size) {
  namespace ph = gmi::physics;
  try {
    ph::model<double> m = ph::load_mjcf_string(std::string(reinterpret_cast<const char*>(bytes), size), "fuzz.xml");
    // Memory safety is the question here, not convergence: a few sweeps reach every line of the solver.
    m.iterations = m.iterations < 5 ? m.iterations : 5;
    const ph::data_layout layout = ph::make_layout(m.size);
    std::vector<double> buffer(layout.reals_per_env, 0.0);
    const ph::data<double> d = ph::data_of(layout, buffer.data(), 1, 0);
    for (int i = 0; i < m.size.nq; ++i) d.qpos[i] = m.qpos0[i];
    for (int i = 0; i < m.size.nu; ++i) d.ctrl[i] = 0.5;
    for (int s = 0; s < 3; ++s) ph::step(m.view(), d);
  } catch (const gmi::config_error&) {
    // A refusal: the expected outcome for most inputs.
  }
  return 0;
}
