#pragma once
// Command-line parsing with gmi's exit convention: --help exits 0; a bad flag prints one line naming the flag,
// the value and what is allowed, and exits 2.

#include <CLI/CLI.hpp>

#include <cstdio>
#include <optional>

namespace gmi::runtime {

// std::nullopt: go on; otherwise the process exit code to return now.
inline std::optional<int> parse_flags(CLI::App& app, int argc, char** argv) {
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp&) {
    std::fputs(app.help().c_str(), stdout);
    return 0;
  } catch (const CLI::CallForAllHelp&) {
    std::fputs(app.help("", CLI::AppFormatMode::All).c_str(), stdout);
    return 0;
  } catch (const CLI::CallForVersion& v) {
    std::puts(v.what());
    return 0;
  } catch (const CLI::ParseError& e) {
    std::fprintf(stderr, "%s: %s\n", app.get_name().empty() ? "gmi" : app.get_name().c_str(), e.what());
    return 2;
  }
  return std::nullopt;
}

}  // namespace gmi::runtime
