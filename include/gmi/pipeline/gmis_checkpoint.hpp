#pragma once
// Checkpoints of synchronous training over many GMIs: one .gmi file per GMI (its whole trainer state) plus a small
// JSON manifest that rank 0 writes atomically once every GMI's file is complete. The manifest names the files
// of one iteration, so a run that dies while saving leaves the previous manifest and its files usable.
//
//   PATH                   manifest {"format": "gmi checkpoint manifest", "version": 1, "world", "gmis_per_gpu",
//                          "gpus", "iteration", "env_steps", "num_envs", "task", "run_id", "git",
//                          "files": [{"rank", "file", "bytes", "crc32c"}...]}; file names relative to PATH's folder
//   PATH.iter<N>.gmi<r>    rank r's trainer state at iteration N (io::save: CRC-32C at its end, atomic write)
//
// What is per GMI and what is shared: the weights, Adam moments and step, learning rate and the normalizers are
// the group's (identical on every GMI: rl::ppo_sync keeps them so); environment states, their RNG counters and
// the policy's sampling counters are each GMI's own. Every file holds both, so each GMI restores from its own
// file and a resumed group is again a group of replicas (set_sync re-broadcasts rank 0's weights, a no-op).

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <system_error>
#include <vector>

#include <nlohmann/json.hpp>

#include <gmi/core/error.hpp>
#include <gmi/io/gmi_file.hpp>
#include <gmi/io/safetensors.hpp>
#include <gmi/io/file_io.hpp>
#include <gmi/runtime/context.hpp>

namespace gmi {

struct gmis_manifest_file {
  int rank = 0;
  std::string file;            // name in the manifest's folder
  std::uint64_t bytes = 0;     // size of the .gmi file
  std::uint32_t crc32c = 0;    // the CRC-32C the .gmi file ends with
  friend bool operator==(const gmis_manifest_file&, const gmis_manifest_file&) = default;
};

struct gmis_manifest {
  int world = 0, gmis_per_gpu = 0, gpus = 0, num_envs = 0;
  std::uint64_t iteration = 0;
  double env_steps = 0;  // of the whole group, from iteration 0
  std::string task, run_id, git;
  std::vector<gmis_manifest_file> files;  // by rank
  friend bool operator==(const gmis_manifest&, const gmis_manifest&) = default;
};

inline constexpr const char* manifest_format = "gmi checkpoint manifest";
inline constexpr int manifest_version = 1;

// "ck.gmi.iter40.gmi2": rank r's file of iteration `it`, next to the manifest.
[[nodiscard]] inline std::filesystem::path gmis_checkpoint_file(const std::filesystem::path& manifest,
                                                                std::uint64_t it, int rank) {
  std::filesystem::path p = manifest;
  p += ".iter" + std::to_string(it) + ".gmi" + std::to_string(rank);
  return p;
}

// Size and closing CRC of a .gmi file just saved (read back from its last 4 bytes, not recomputed).
[[nodiscard]] inline gmis_manifest_file describe_saved(const std::filesystem::path& file, int rank) {
  gmis_manifest_file f;
  f.rank = rank;
  f.file = file.filename().string();
  const io::stored_crc stored = io::read_stored_crc(file);
  f.bytes = stored.bytes;
  f.crc32c = stored.crc32c;
  return f;
}

inline nlohmann::json to_json_manifest(const gmis_manifest& m) {
  nlohmann::json files = nlohmann::json::array();
  for (const auto& f : m.files) {
    char crc[16];
    std::snprintf(crc, sizeof crc, "%08x", f.crc32c);
    files.push_back({{"rank", f.rank}, {"file", f.file}, {"bytes", f.bytes}, {"crc32c", crc}});
  }
  return {{"format", manifest_format}, {"version", manifest_version}, {"world", m.world},
          {"gmis_per_gpu", m.gmis_per_gpu}, {"gpus", m.gpus}, {"iteration", m.iteration},
          {"env_steps", m.env_steps}, {"num_envs", m.num_envs}, {"task", m.task}, {"run_id", m.run_id},
          {"git", m.git}, {"files", files}};
}

// Writes the manifest atomically (temp file next to it, fsync, rename): readers see the old one or the new one.
inline void write_manifest(const gmis_manifest& m, const std::filesystem::path& path) {
  gmi::require(static_cast<int>(m.files.size()) == m.world, "checkpoint manifest files",
               std::to_string(m.files.size()), "one per GMI (" + std::to_string(m.world) + ")");
  const std::string text = to_json_manifest(m).dump(1) + "\n";
  gmi::io::atomic_file_writer out(path, "checkpoint manifest");
  out.write(text.data(), text.size());
  out.commit();
}

// True when `path` starts like a single-GMI .gmi checkpoint (io::save) rather than a manifest.
[[nodiscard]] inline bool is_single_checkpoint(const std::filesystem::path& path) {
  std::array<char, 8> head{};
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  const bool got = ::read(fd, head.data(), head.size()) == static_cast<ssize_t>(head.size());
  ::close(fd);
  return got && head == io::checkpoint_magic;
}

// Reads and checks a manifest's structure; config_error naming the file and the problem.
[[nodiscard]] inline gmis_manifest read_manifest(const std::filesystem::path& path) {
  const auto label = gmi::io::file_label("checkpoint manifest", path);
  if (is_single_checkpoint(path)) {
    throw config_error(label + ": got a checkpoint of 1 GMI (saved by a run on one GMI), need a manifest of a run "
                               "over GMIs (--checkpoint of a run with several GMIs)");
  }
  const std::vector<std::byte> bytes = gmi::io::read_file(path, "checkpoint manifest");
  gmis_manifest m;
  try {
    const auto j = nlohmann::json::parse(reinterpret_cast<const char*>(bytes.data()),
                                         reinterpret_cast<const char*>(bytes.data()) + bytes.size());
    if (!j.is_object() || j.value("format", std::string()) != manifest_format) {
      throw config_error(label + ": not a gmi checkpoint manifest (no \"format\": \"" + manifest_format + "\")");
    }
    const int version = j.at("version").get<int>();
    if (version != manifest_version) {
      throw config_error(label + ": " + got_need("version", version, std::to_string(manifest_version)));
    }
    m.world = j.at("world").get<int>();
    m.gmis_per_gpu = j.at("gmis_per_gpu").get<int>();
    m.gpus = j.at("gpus").get<int>();
    m.iteration = j.at("iteration").get<std::uint64_t>();
    m.env_steps = j.at("env_steps").get<double>();
    m.num_envs = j.at("num_envs").get<int>();
    m.task = j.at("task").get<std::string>();
    m.run_id = j.value("run_id", std::string());
    m.git = j.value("git", std::string());
    for (const auto& f : j.at("files")) {
      gmis_manifest_file e;
      e.rank = f.at("rank").get<int>();
      e.file = f.at("file").get<std::string>();
      e.bytes = f.at("bytes").get<std::uint64_t>();
      e.crc32c = static_cast<std::uint32_t>(std::stoul(f.at("crc32c").get<std::string>(), nullptr, 16));
      m.files.push_back(std::move(e));
    }
  } catch (const nlohmann::json::exception& e) {
    throw config_error(label + ": not a manifest gmi wrote (" + e.what() + ")");
  } catch (const std::invalid_argument&) {
    throw config_error(label + ": a file's crc32c is not hexadecimal");
  }
  if (m.world < 1 || static_cast<int>(m.files.size()) != m.world) {
    throw config_error(label + ": " + got_need("files", m.files.size(), "one per GMI (world " + std::to_string(m.world) + ")"));
  }
  for (int r = 0; r < m.world; ++r) {
    const auto& f = m.files[static_cast<std::size_t>(r)];
    if (f.rank != r || f.file.empty() || f.file.find('/') != std::string::npos) {
      throw config_error(label + ": " + got_need("files[" + std::to_string(r) + "]", "rank " + std::to_string(f.rank) +
                                                 " file \"" + f.file + "\"", "rank " + std::to_string(r) +
                                                 " and a file name in the manifest's folder"));
    }
  }
  return m;
}

// The path of rank r's file of manifest m read from `path`.
[[nodiscard]] inline std::filesystem::path file_of(const gmis_manifest& m, const std::filesystem::path& path, int rank) {
  return path.parent_path() / m.files.at(static_cast<std::size_t>(rank)).file;
}

// Every file the manifest names is there with the size and closing CRC it had when saved; config_error naming
// the first that is not (deleted, truncated, or rewritten by a save that never completed).
inline void check_complete(const gmis_manifest& m, const std::filesystem::path& path) {
  for (int r = 0; r < m.world; ++r) {
    const auto file = file_of(m, path, r);
    const auto& want = m.files[static_cast<std::size_t>(r)];
    std::error_code ec;
    if (!std::filesystem::is_regular_file(file, ec)) {
      throw config_error(gmi::io::file_label("checkpoint manifest", path) + ": GMI " + std::to_string(r) +
                         "'s file " + want.file + " is missing; the checkpoint is incomplete");
    }
    const gmis_manifest_file got = describe_saved(file, r);
    if (got.bytes != want.bytes || got.crc32c != want.crc32c) {
      char text[96];
      std::snprintf(text, sizeof text, "%llu bytes, CRC %08x", static_cast<unsigned long long>(got.bytes), got.crc32c);
      char need[96];
      std::snprintf(need, sizeof need, "%llu bytes, CRC %08x as the manifest says",
                    static_cast<unsigned long long>(want.bytes), want.crc32c);
      throw config_error(gmi::io::file_label("checkpoint manifest", path) + ": GMI " + std::to_string(r) + "'s file " +
                         want.file + ": got " + text + ", need " + need + "; the checkpoint is torn");
    }
  }
}

// --resume PATH for a run of `world` GMIs with `num_envs` environments each: the manifest, checked complete.
// A manifest of another GMI count is refused, not resharded: environment states and RNG streams belong to
// ranks, the group's minibatch is split by world, so no other count continues the same training.
[[nodiscard]] inline gmis_manifest manifest_for_resume(const std::filesystem::path& path, int world, int num_envs) {
  gmis_manifest m = read_manifest(path);
  if (m.world != world) {
    throw config_error(got_need("--resume " + path.string() + ": GMIs of the checkpoint", m.world,
                                std::to_string(world) + " (this run's GMIs; a checkpoint resumes on as many GMIs as "
                                                        "saved it: environment states are per GMI)"));
  }
  if (m.num_envs != num_envs) {
    throw config_error(got_need("--resume " + path.string() + ": environments per GMI of the checkpoint", m.num_envs,
                                std::to_string(num_envs) + " (this run's --num-envs)"));
  }
  check_complete(m, path);
  return m;
}

// The last complete checkpoint at `path`, or nullopt (why in *why): no manifest yet, or one that is damaged or
// incomplete. For the restart loop: a checkpoint that can not be trusted is never picked.
[[nodiscard]] inline std::optional<gmis_manifest> last_complete_checkpoint(const std::filesystem::path& path,
                                                                           std::string* why = nullptr) {
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) {
    if (why) *why = "no checkpoint saved yet";
    return std::nullopt;
  }
  try {
    gmis_manifest m = read_manifest(path);
    check_complete(m, path);
    return m;
  } catch (const gmi::error& e) {
    if (why) *why = e.what();
    return std::nullopt;
  }
}

// Removes the per-GMI files of `path` ("<name>.iter<N>.gmi<r>", and the temp files of a writer that was killed
// mid-save) that `keep` does not name: older generations, and the files of a save that never completed.
// Call it when no GMI is writing (rank 0 after the manifest, the restart loop between attempts). Returns how many.
inline int remove_unreferenced(const std::filesystem::path& path, const gmis_manifest* keep) {
  const std::filesystem::path dir = path.has_parent_path() ? path.parent_path() : std::filesystem::path(".");
  const std::string prefix = path.filename().string() + ".iter";
  int removed = 0;
  std::error_code ec;
  std::vector<std::filesystem::path> doomed;
  for (const auto& e : std::filesystem::directory_iterator(dir, ec)) {
    const std::string name = e.path().filename().string();
    if (!name.starts_with(prefix) || name.find(".gmi", prefix.size()) == std::string::npos) continue;
    const bool kept = keep && std::any_of(keep->files.begin(), keep->files.end(),
                                          [&](const gmis_manifest_file& f) { return f.file == name; });
    if (!kept) doomed.push_back(e.path());
  }
  for (const auto& p : doomed) {
    if (std::filesystem::remove(p, ec)) ++removed;
  }
  return removed;
}

// Every GMI of the group saves iteration trainer.iteration() (a collective: call it on every GMI at the same
// iteration). Each writes its own file, then one allreduce carries every file's size and CRC to rank 0 (the
// "all saved" signal); rank 0 writes the manifest and removes older generations. A save that fails on any GMI
// throws on every GMI, and rank 0 removes that iteration's files: the previous checkpoint stays the last one.
// Returns the manifest on rank 0, nullopt elsewhere.
template <class Trainer>
std::optional<gmis_manifest> save_gmis_checkpoint(runtime::context& ctx, Trainer& trainer,
                                                  const std::filesystem::path& path, gmis_manifest base,
                                                  const nlohmann::json& meta) {
  const std::uint64_t it = trainer.iteration();
  const int world = ctx.world(), rank = ctx.rank();
  const std::filesystem::path file = gmis_checkpoint_file(path, it, rank);
  std::vector<double> sizes(2 * static_cast<std::size_t>(world) + 1, 0.0);  // per rank: bytes, CRC; then failures
  std::string failed;
  try {
    io::checkpoint ck = trainer.save_state();
    for (const auto& [k, v] : meta.items()) ck.meta[k] = v;
    ck.meta["gmi_rank"] = rank;
    ck.meta["gmi_world"] = world;
    io::save(ck, file);
    const gmis_manifest_file d = describe_saved(file, rank);
    sizes[2 * static_cast<std::size_t>(rank)] = static_cast<double>(d.bytes);
    sizes[2 * static_cast<std::size_t>(rank) + 1] = static_cast<double>(d.crc32c);
  } catch (const gmi::error& e) {
    failed = e.what();
    sizes.back() = 1;
  }
  ctx.allreduce(std::span<double>(sizes), ctx.all());
  if (sizes.back() > 0) {
    if (rank == 0) {
      std::error_code ec;
      for (int r = 0; r < world; ++r) std::filesystem::remove(gmis_checkpoint_file(path, it, r), ec);
    }
    throw gmi::error(!failed.empty() ? failed
                                     : "checkpoint at iteration " + std::to_string(it) + ": the save failed on " +
                                           std::to_string(static_cast<int>(sizes.back())) + " other GMI(s)");
  }
  if (rank != 0) return std::nullopt;
  base.world = world;
  base.iteration = it;
  base.files.clear();
  for (int r = 0; r < world; ++r) {
    gmis_manifest_file f;
    f.rank = r;
    f.file = gmis_checkpoint_file(path, it, r).filename().string();
    f.bytes = static_cast<std::uint64_t>(sizes[2 * static_cast<std::size_t>(r)]);
    f.crc32c = static_cast<std::uint32_t>(sizes[2 * static_cast<std::size_t>(r) + 1]);
    base.files.push_back(std::move(f));
  }
  try {
    write_manifest(base, path);
  } catch (...) {  // the previous manifest stands; this iteration's files would be orphans
    std::error_code ec;
    for (int r = 0; r < world; ++r) std::filesystem::remove(gmis_checkpoint_file(path, it, r), ec);
    throw;
  }
  remove_unreferenced(path, &base);
  return base;
}

// Restores this GMI's trainer from its file of the manifest at `path` (before set_sync). Returns the iteration.
template <class Trainer>
std::uint64_t resume_gmi(runtime::context& ctx, Trainer& trainer, const std::filesystem::path& path) {
  const gmis_manifest m = manifest_for_resume(path, ctx.world(), trainer.num_envs());
  const io::checkpoint ck = io::load(file_of(m, path, ctx.rank()));
  const auto saved_at = ck.meta.value("iteration", std::uint64_t{0});
  gmi::require(saved_at == m.iteration, "checkpoint " + file_of(m, path, ctx.rank()).string() + " iteration",
               saved_at, std::to_string(m.iteration) + " (the manifest's)");
  trainer.load_state(ck);
  return m.iteration;
}

}  // namespace gmi
