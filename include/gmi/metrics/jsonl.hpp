#pragma once
// A JSON-lines log: one JSON object per line, appended and flushed, so a crashed run keeps every line written.

#include <nlohmann/json.hpp>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>

#include <gmi/core/error.hpp>

namespace gmi::metrics {

class jsonl_log {
 public:
  jsonl_log() = default;  // disabled: write() does nothing
  explicit jsonl_log(const std::filesystem::path& path) : path_(path) {
    if (path.has_parent_path()) {
      std::error_code ec;
      std::filesystem::create_directories(path.parent_path(), ec);
    }
    out_.open(path, std::ios::app);
    if (!out_) {
      throw gmi::config_error(gmi::got_need("metrics file", path.string(),
                                            std::string("a writable path (") + std::strerror(errno) + ")"));
    }
  }

  [[nodiscard]] bool enabled() const { return out_.is_open(); }
  [[nodiscard]] const std::filesystem::path& path() const { return path_; }

  void write(const nlohmann::json& line) {
    if (!out_.is_open()) return;
    out_ << line.dump() << '\n';
    out_.flush();
    if (!out_) throw gmi::config_error("metrics file " + path_.string() + ": write failed (disk full?)");
  }

 private:
  std::filesystem::path path_;
  std::ofstream out_;
};

}  // namespace gmi::metrics
