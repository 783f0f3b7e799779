#pragma once
// The hosts' agreement on where a multi-host job (re)starts: every host's launcher, with no GMI running, reports
// the iteration of its own host manifest (PATH.host<h>); the job resumes from the lowest of them, the last
// checkpoint every host completed. Every host reads its GMIs' files of that iteration whole (io::load), rewrites
// its host manifest for it, and host 0 rewrites the job manifest (PATH) from every host's sizes and CRCs, so the
// manifests on disk agree with what the next attempt loads. A host without a manifest makes the job start over
// (from scratch or the user's --resume). Used by run_on_hosts before a restart and, with resume_existing, at the
// start (rerunning a job resumes it). The files of older iterations are kept: the lowest may be one save behind.

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include <gmi/core/error.hpp>
#include <gmi/io/gmi_file.hpp>
#include <gmi/runtime/host_checkpoint.hpp>

namespace gmi::runtime {

// Every host's `bytes` bytes into `all` (hosts x bytes, in host order); empty for a one-host job.
using host_gather = std::function<void(const void* mine, void* all, std::size_t bytes)>;

struct checkpoint_place {
  int host = 0, hosts = 1, gmis_per_host = 1;
};

namespace detail {
struct agree_row {
  std::int64_t iteration = -1;  // this host's manifest; -1: none
  std::int32_t bad = 0;
  char why[244] = {};  // bad: one line
};
inline void set_why(agree_row& r, const std::string& line) {
  r.bad = 1;
  std::snprintf(r.why, sizeof r.why, "%s", line.c_str());
}
template <class T>
std::vector<T> gather_rows(const host_gather& gather, const T& mine, int hosts) {
  std::vector<T> all(static_cast<std::size_t>(hosts));
  if (hosts == 1 || !gather) all[0] = mine;
  else gather(&mine, all.data(), sizeof(T));
  return all;
}
inline std::filesystem::path host_manifest_path(const std::filesystem::path& path, int host) {
  std::filesystem::path p = path;
  p += ".host" + std::to_string(host);
  return p;
}
}  // namespace detail

// Every host calls it at the same point. Returns the iteration every host resumes from (the manifests at `path`
// then name it), or nullopt when some host has no checkpoint yet. Throws config_error with the same line on every
// host when a host's manifest is of another job shape or a file of the agreed iteration is missing or damaged.
[[nodiscard]] inline std::optional<std::uint64_t> agree_on_checkpoint(const std::filesystem::path& path,
                                                                      const checkpoint_place& at,
                                                                      const host_gather& gather) {
  detail::agree_row mine;
  const std::filesystem::path my_manifest = detail::host_manifest_path(path, at.host);
  try {
    if (std::filesystem::exists(my_manifest)) {
      const host_checkpoint_manifest m = read_host_manifest(my_manifest);
      if (m.hosts != at.hosts || m.gmis_per_host != at.gmis_per_host) {
        detail::set_why(mine, got_need(io::file_label("checkpoint", my_manifest) + " hosts x GMIs",
                                       std::to_string(m.hosts) + " x " + std::to_string(m.gmis_per_host),
                                       std::to_string(at.hosts) + " x " + std::to_string(at.gmis_per_host) + " (this job's)"));
      } else {
        mine.iteration = static_cast<std::int64_t>(m.iteration);
      }
    }
  } catch (const std::exception& e) {
    detail::set_why(mine, e.what());
  }
  const auto rows = detail::gather_rows(gather, mine, at.hosts);
  for (int h = 0; h < at.hosts; ++h) {
    const auto& r = rows[static_cast<std::size_t>(h)];
    if (r.bad) throw config_error("resuming on host " + std::to_string(h) + ": " + std::string(r.why));
  }
  std::int64_t lowest = rows[0].iteration;
  for (const auto& r : rows) lowest = std::min(lowest, r.iteration);
  if (lowest < 0) return std::nullopt;
  const auto it = static_cast<std::uint64_t>(lowest);

  // This host's files of that iteration, each whole (size and CRC at its end), then every host's records.
  struct record {
    std::uint64_t bytes = 0, crc = 0;
  };
  std::vector<record> records(static_cast<std::size_t>(at.gmis_per_host) + 1);  // the last: 1 when one is bad
  std::string bad;
  for (int k = 0; k < at.gmis_per_host && bad.empty(); ++k) {
    const std::filesystem::path file = host_checkpoint_path(path, it, at.host * at.gmis_per_host + k);
    try {
      if (!std::filesystem::exists(file)) throw config_error(io::file_label("checkpoint", file) + ": missing");
      (void)io::load(file);  // read whole: its CRC-32C and contents checked, not only its last 4 bytes
      const io::stored_crc c = io::read_stored_crc(file);
      records[static_cast<std::size_t>(k)] = {c.bytes, c.crc32c};
    } catch (const std::exception& e) {
      bad = e.what();
    }
  }
  detail::agree_row status;
  if (!bad.empty()) detail::set_why(status, bad);
  const auto statuses = detail::gather_rows(gather, status, at.hosts);
  for (int h = 0; h < at.hosts; ++h) {
    const auto& r = statuses[static_cast<std::size_t>(h)];
    if (r.bad) {
      throw config_error("resuming at iteration " + std::to_string(it) + " (every host's last checkpoint) on host " +
                         std::to_string(h) + ": " + std::string(r.why));
    }
  }
  std::vector<record> every(records.size() * static_cast<std::size_t>(at.hosts));
  if (at.hosts == 1 || !gather) every = records;
  else gather(records.data(), every.data(), records.size() * sizeof(record));

  host_checkpoint_manifest m;
  m.iteration = it;
  m.hosts = at.hosts;
  m.gmis_per_host = at.gmis_per_host;
  for (int h = 0; h < at.hosts; ++h) {
    for (int k = 0; k < at.gmis_per_host; ++k) {
      const int rank = h * at.gmis_per_host + k;
      const record& r = every[static_cast<std::size_t>(h) * records.size() + static_cast<std::size_t>(k)];
      m.files.push_back({h, rank, host_checkpoint_path(path, it, rank).filename().string(), r.bytes,
                         static_cast<std::uint32_t>(r.crc)});
    }
  }
  host_checkpoint_manifest own = m;
  std::erase_if(own.files, [&](const host_checkpoint_file& f) { return f.host != at.host; });
  write_host_manifest(own, my_manifest);
  if (at.host == 0) write_host_manifest(m, path);
  // No host loads before every manifest is rewritten (a shared file system: host 0's job manifest).
  const std::int32_t done = 1;
  (void)detail::gather_rows(gather, done, at.hosts);
  return it;
}

}  // namespace gmi::runtime
