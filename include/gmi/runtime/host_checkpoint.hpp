#pragma once
// Checkpoints of a multi-host run: every GMI saves its own .gmi file (io::save: CRC-32C at its end, atomic write)
// on its host, each host's first GMI writes a host manifest of its GMIs' files, and global rank 0 writes the job
// manifest of every host's files once all are complete (their sizes and CRCs travel through the host sum). A run
// that dies while saving leaves the previous manifests and files usable.
//
//   PATH                      job manifest {"format": "gmi multi-host checkpoint manifest", "version": 1,
//                             "iteration", "hosts", "gmis_per_host", "files": [{"host", "rank", "file", "bytes",
//                             "crc32c"}...]}; written on host 0
//   PATH.host<h>              host h's manifest, the same fields over its own files; written on host h
//   PATH.iter<N>.gmi<r>       global rank r's state at iteration N, written on its host
// With a file system every host sees, all of it is in one folder; with local disks each host holds its own files
// and host manifest, and host 0 the job manifest.

#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include <gmi/core/error.hpp>
#include <gmi/io/checkpoint.hpp>
#include <gmi/io/file_io.hpp>
#include <gmi/io/gmi_file.hpp>

namespace gmi::runtime {

inline constexpr const char* host_manifest_format = "gmi multi-host checkpoint manifest";

struct host_checkpoint_file {
  int host = 0, rank = 0;
  std::string file;  // name in the manifest's folder
  std::uint64_t bytes = 0;
  std::uint32_t crc32c = 0;
  friend bool operator==(const host_checkpoint_file&, const host_checkpoint_file&) = default;
};

struct host_checkpoint_manifest {
  std::uint64_t iteration = 0;
  int hosts = 1, gmis_per_host = 1;
  std::vector<host_checkpoint_file> files;  // by global rank
};

[[nodiscard]] inline std::filesystem::path host_checkpoint_path(const std::filesystem::path& manifest, std::uint64_t it,
                                                                int rank) {
  std::filesystem::path p = manifest;
  p += ".iter" + std::to_string(it) + ".gmi" + std::to_string(rank);
  return p;
}

inline void write_host_manifest(const host_checkpoint_manifest& m, const std::filesystem::path& path) {
  nlohmann::json files = nlohmann::json::array();
  for (const auto& f : m.files) {
    char crc[16];
    std::snprintf(crc, sizeof crc, "%08x", f.crc32c);
    files.push_back({{"host", f.host}, {"rank", f.rank}, {"file", f.file}, {"bytes", f.bytes}, {"crc32c", crc}});
  }
  const nlohmann::json j = {{"format", host_manifest_format}, {"version", 1},         {"iteration", m.iteration},
                            {"hosts", m.hosts},                {"gmis_per_host", m.gmis_per_host}, {"files", files}};
  const std::string text = j.dump(1) + "\n";
  io::atomic_file_writer out(path, "multi-host checkpoint manifest");
  out.write(text.data(), text.size());
  out.commit();
}

// Reads a job or host manifest; config_error naming the file when it is not one.
[[nodiscard]] inline host_checkpoint_manifest read_host_manifest(const std::filesystem::path& path) {
  const auto label = io::file_label("multi-host checkpoint manifest", path);
  const std::vector<std::byte> bytes = io::read_file(path, "multi-host checkpoint manifest");
  host_checkpoint_manifest m;
  try {
    const auto j = nlohmann::json::parse(reinterpret_cast<const char*>(bytes.data()),
                                         reinterpret_cast<const char*>(bytes.data()) + bytes.size());
    if (!j.is_object() || j.value("format", std::string()) != host_manifest_format) {
      throw config_error(label + ": not a multi-host checkpoint manifest (no \"format\": \"" +
                         std::string(host_manifest_format) + "\")");
    }
    m.iteration = j.at("iteration").get<std::uint64_t>();
    m.hosts = j.at("hosts").get<int>();
    m.gmis_per_host = j.at("gmis_per_host").get<int>();
    for (const auto& f : j.at("files")) {
      m.files.push_back({f.at("host").get<int>(), f.at("rank").get<int>(), f.at("file").get<std::string>(),
                         f.at("bytes").get<std::uint64_t>(),
                         static_cast<std::uint32_t>(std::stoul(f.at("crc32c").get<std::string>(), nullptr, 16))});
    }
  } catch (const nlohmann::json::exception& e) {
    throw config_error(label + ": " + got_need("contents", e.what(), "the fields a gmi run writes"));
  }
  return m;
}

// A GMI's place for save_on_hosts: its global rank, the job's GMIs, its host, and the sum over every GMI of every
// host (host_gmi::sum, gpu_hosts::sum), which every GMI calls at the same point. (runtime/multihost.hpp has the
// overload that takes a host_gmi.)
struct host_saver {
  int rank = 0, world = 1, host = 0;
  std::function<void(double*, std::size_t)> sum;
};

// Every GMI of every host calls it at the same iteration with its own state. Returns once this GMI's file is
// saved and, on the hosts' first GMIs, their manifests are written (rank 0: the job manifest, after every file).
inline void save_on_hosts(const host_saver& g, const io::checkpoint& state, const std::filesystem::path& path,
                          std::uint64_t iteration, int gmis_per_host) {
  const std::filesystem::path file = host_checkpoint_path(path, iteration, g.rank);
  io::save(state, file);
  const io::stored_crc saved = io::read_stored_crc(file);
  // Each GMI fills its own slots (size, CRC): the sum over every GMI is every file's record, exactly (< 2^53).
  std::vector<double> records(static_cast<std::size_t>(g.world) * 2, 0.0);
  records[static_cast<std::size_t>(g.rank) * 2] = static_cast<double>(saved.bytes);
  records[static_cast<std::size_t>(g.rank) * 2 + 1] = static_cast<double>(saved.crc32c);
  g.sum(records.data(), records.size());
  host_checkpoint_manifest m;
  m.iteration = iteration;
  m.gmis_per_host = gmis_per_host;
  m.hosts = g.world / gmis_per_host;
  for (int r = 0; r < g.world; ++r) {
    m.files.push_back({r / gmis_per_host, r, host_checkpoint_path(path, iteration, r).filename().string(),
                       static_cast<std::uint64_t>(records[static_cast<std::size_t>(r) * 2]),
                       static_cast<std::uint32_t>(records[static_cast<std::size_t>(r) * 2 + 1])});
  }
  if (g.rank % gmis_per_host == 0) {
    host_checkpoint_manifest mine = m;
    std::erase_if(mine.files, [&](const host_checkpoint_file& f) { return f.host != g.host; });
    std::filesystem::path host_path = path;
    host_path += ".host" + std::to_string(g.host);
    write_host_manifest(mine, host_path);
  }
  if (g.rank == 0) write_host_manifest(m, path);
}
// The manifest host `host` resumes from: the job manifest at `path` where this host sees it (a shared file
// system), else its own host manifest (PATH.host<h>, local disks). config_error naming PATH when neither exists.
[[nodiscard]] inline std::filesystem::path manifest_for_host(const std::filesystem::path& path, int host) {
  std::filesystem::path mine = path;
  mine += ".host" + std::to_string(host);
  if (std::filesystem::exists(path)) return path;
  if (std::filesystem::exists(mine)) return mine;
  throw config_error(got_need(io::file_label("--resume", path), "missing", "a job manifest, or " + mine.string() +
                                                                             " on this host"));
}

// Loads global rank `rank`'s state named by a manifest (job or host), checking its size and CRC against the
// manifest; config_error naming the file when they differ.
[[nodiscard]] inline io::checkpoint load_from_hosts(const std::filesystem::path& path, int rank) {
  const host_checkpoint_manifest m = read_host_manifest(path);
  for (const auto& f : m.files) {
    if (f.rank != rank) continue;
    const std::filesystem::path file = path.parent_path() / f.file;
    const io::stored_crc stored = io::read_stored_crc(file);
    if (stored.bytes != f.bytes || stored.crc32c != f.crc32c) {
      throw config_error(got_need(io::file_label("checkpoint", file) + " size/CRC",
                                  std::to_string(stored.bytes) + "/" + std::to_string(stored.crc32c),
                                  std::to_string(f.bytes) + "/" + std::to_string(f.crc32c) + " (the manifest's)"));
    }
    return io::load(file);
  }
  throw config_error(got_need(io::file_label("multi-host checkpoint manifest", path) + " ranks",
                              std::to_string(m.files.size()) + " files without rank " + std::to_string(rank),
                              "a file for every GMI of the run"));
}

}  // namespace gmi::runtime
