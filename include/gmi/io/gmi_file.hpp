#pragma once
// The .gmi checkpoint file: save() writes an io::checkpoint atomically with a CRC-32C, load() refuses a damaged one.
//
// The .gmi checkpoint file (version 1; all integers little-endian):
//   [0, 8)     magic "GMICKPT\0"
//   [8, 12)    u32 format version (1)
//   [12, 16)   u32 reserved, 0
//   [16, 24)   u64 H: bytes of the JSON header, a multiple of 8 (padded with spaces)
//   [24, 32)   u64 F: bytes of the whole file, checksum included
//   [32, 32+H) JSON header {"format": "gmi checkpoint", "tensors": [{"name", "dtype", "shape", "offset", "bytes"}...],
//              "meta": {...}}; dtype is one of f32 f64 i32 i64 u32 u64 u8, offset counts from the payload start
//   [32+H, F-4) payload: the tensors in table order, each starting 8-byte aligned, zero padding between
//   [F-4, F)   u32 CRC-32C (Castagnoli) of bytes [0, F-4)
// load() checks, in order: magic, version, size against F, checksum, then the JSON and every tensor's range.

#include <gmi/io/checkpoint.hpp>
#include <gmi/io/crc32c.hpp>
#include <gmi/io/file_io.hpp>

namespace gmi::io {

inline constexpr std::array<char, 8> checkpoint_magic = {'G', 'M', 'I', 'C', 'K', 'P', 'T', '\0'};
inline constexpr std::uint32_t checkpoint_format_version = 1;
inline constexpr std::size_t checkpoint_preamble_bytes = 32;
inline constexpr std::size_t checkpoint_checksum_bytes = 4;

// Writes ck to path atomically: `<path>.tmp.<pid>` next to it, fsync, rename over path, fsync the directory.
inline void save(const checkpoint& ck, const std::filesystem::path& path) {
  if (!ck.meta.is_object()) {
    throw config_error(
        detail::got_need_text(file_label("checkpoint", path) + " meta", ck.meta.type_name(), "a JSON object"));
  }
  // ordered_json: name first, meta last, so `head -c 300 last.gmi` reads naturally.
  nlohmann::ordered_json table = nlohmann::ordered_json::array();
  std::uint64_t payload = 0;
  for (const tensor& t : ck.tensors()) {
    table.push_back({{"name", t.name},
                     {"dtype", name_of(t.type)},
                     {"shape", t.shape},
                     {"offset", payload},
                     {"bytes", t.bytes.size()}});
    payload = detail::align8(payload + t.bytes.size());
  }
  const nlohmann::ordered_json header = {
      {"format", "gmi checkpoint"}, {"tensors", std::move(table)}, {"meta", nlohmann::ordered_json(ck.meta)}};
  std::string text = detail::dump_header(header, "checkpoint", path);
  detail::pad_to_8(text, checkpoint_preamble_bytes);
  const std::uint64_t file_bytes = checkpoint_preamble_bytes + text.size() + payload + checkpoint_checksum_bytes;

  std::array<std::byte, checkpoint_preamble_bytes> preamble{};
  std::memcpy(preamble.data(), checkpoint_magic.data(), checkpoint_magic.size());
  detail::put_u32(preamble.data() + 8, checkpoint_format_version);
  detail::put_u64(preamble.data() + 16, text.size());
  detail::put_u64(preamble.data() + 24, file_bytes);

  atomic_file_writer out(path, "checkpoint");
  crc32c crc;
  const auto put = [&](const void* data, std::size_t size) {
    crc.update(data, size);
    out.write(data, size);
  };
  put(preamble.data(), preamble.size());
  put(text.data(), text.size());
  constexpr std::array<std::byte, 8> zeros{};
  for (const tensor& t : ck.tensors()) {
    put(t.bytes.data(), t.bytes.size());
    put(zeros.data(), detail::align8(t.bytes.size()) - t.bytes.size());
  }
  std::array<std::byte, 4> checksum{};
  detail::put_u32(checksum.data(), crc.value());
  out.write(checksum.data(), checksum.size());
  out.commit();
}

// Reads a checkpoint written by save(); config_error naming the file and the problem when it is missing, not a
// checkpoint, of another format version, truncated, corrupted (checksum) or inconsistent.
inline checkpoint load(const std::filesystem::path& path) {
  const std::vector<std::byte> file = read_file(path, "checkpoint");
  const auto refuse = [&](const std::string& problem) {
    return config_error(file_label("checkpoint", path) + ": " + problem);
  };
  const std::size_t size = file.size();
  constexpr std::size_t smallest = checkpoint_preamble_bytes + checkpoint_checksum_bytes;

  const std::size_t magic_bytes = std::min(size, checkpoint_magic.size());
  if (std::memcmp(file.data(), checkpoint_magic.data(), magic_bytes) != 0 || size == 0) {
    if (size == 0) throw refuse("file is 0 bytes, need at least " + std::to_string(smallest) + "; the file is empty");
    throw refuse("not a gmi checkpoint (first bytes got \"" + detail::printable(file.data(), magic_bytes) +
                 "\", need \"GMICKPT\\x00\")");
  }
  if (size < smallest) {
    throw refuse("file is " + std::to_string(size) + " bytes, need at least " + std::to_string(smallest) +
                 "; the file is truncated");
  }
  const std::uint32_t version = detail::get_u32(file.data() + 8);
  if (version != checkpoint_format_version) {
    throw refuse(got_need("format version", version,
                          std::to_string(checkpoint_format_version) + " (the version this build of gmi reads)"));
  }
  const std::uint64_t file_bytes = detail::get_u64(file.data() + 24);
  if (file_bytes != size) {
    throw refuse("file is " + std::to_string(size) + " bytes, header says " + std::to_string(file_bytes) +
                 (size < file_bytes ? "; the file is truncated" : "; the file has extra bytes at its end"));
  }
  const std::uint32_t need_crc = detail::get_u32(file.data() + size - checkpoint_checksum_bytes);
  const std::uint32_t got_crc = crc32c_of(file.data(), size - checkpoint_checksum_bytes);
  if (got_crc != need_crc) {
    throw refuse("checksum (CRC-32C): got " + detail::hex32(got_crc) + ", need " + detail::hex32(need_crc) +
                 "; the file is corrupted");
  }
  // Past the checksum the file is what save() wrote, or a crafted one: still check everything before using it.
  const std::uint64_t header_bytes = detail::get_u64(file.data() + 16);
  if (header_bytes > size - smallest) {
    throw refuse(got_need(
        "header length", header_bytes,
        "at most " + std::to_string(size - smallest) + " (what the file holds besides preamble and checksum)"));
  }
  const auto* header_begin = reinterpret_cast<const char*>(file.data() + checkpoint_preamble_bytes);
  nlohmann::json header;
  try {
    header = nlohmann::json::parse(header_begin, header_begin + header_bytes);
  } catch (const nlohmann::json::exception& e) {
    throw refuse(std::string("header is not valid JSON (") + e.what() + ")");
  }
  const std::byte* payload = file.data() + checkpoint_preamble_bytes + header_bytes;
  const std::uint64_t payload_bytes = size - smallest - header_bytes;

  checkpoint ck;
  try {
    if (!header.is_object() || !header.contains("tensors") || !header["tensors"].is_array()) {
      throw refuse("header: got " + header.dump().substr(0, 80) + ", need an object with a \"tensors\" array");
    }
    std::size_t i = 0;
    for (const nlohmann::json& entry : header["tensors"]) {
      const std::string where = "header tensor " + std::to_string(i++);
      tensor t;
      t.name = entry.at("name").get<std::string>();
      const std::string type = entry.at("dtype").get<std::string>();
      const std::optional<dtype> parsed = parse_dtype(type);
      if (!parsed)
        throw refuse(got_need(where + " \"" + t.name + "\" dtype", type, "one of f32 f64 i32 i64 u32 u64 u8"));
      t.type = *parsed;
      t.shape = entry.at("shape").get<tensor_shape>();
      const auto offset = entry.at("offset").get<std::uint64_t>();
      const auto bytes = entry.at("bytes").get<std::uint64_t>();
      if (offset > payload_bytes || bytes > payload_bytes - offset) {
        throw refuse(where + " \"" + t.name + "\": bytes [" + std::to_string(offset) + ", " +
                     std::to_string(offset + bytes) + ") out of range, need within the payload's " +
                     std::to_string(payload_bytes) + " bytes");
      }
      t.bytes.assign(payload + offset, payload + offset + bytes);
      ck.add(std::move(t));
    }
    const nlohmann::json meta = header.value("meta", nlohmann::json::object());
    if (!meta.is_object()) throw refuse(detail::got_need_text("header meta", meta.type_name(), "a JSON object"));
    ck.meta = meta;
    ck.origin_ = path.string();  // set last: messages while loading already name the file
  } catch (const nlohmann::json::exception& e) {
    throw refuse(std::string("header does not describe tensors as gmi writes them (") + e.what() + ")");
  } catch (const gmi::config_error& e) {
    if (std::string_view(e.what()).starts_with("checkpoint \"")) throw;
    throw refuse(std::string("header: ") + e.what());
  }
  return ck;
}


// Size and closing CRC-32C of a .gmi file just saved, read back from its last 4 bytes (not recomputed): what a
// manifest of several files records.
struct stored_crc {
  std::uint64_t bytes = 0;
  std::uint32_t crc32c = 0;
};
[[nodiscard]] inline stored_crc read_stored_crc(const std::filesystem::path& file) {
  const int fd = ::open(file.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) throw gmi::error(file_label("checkpoint", file) + ": cannot open after saving it");
  const off_t end = ::lseek(fd, 0, SEEK_END);
  std::array<std::byte, 4> tail{};
  const bool ok = end >= 4 && ::pread(fd, tail.data(), 4, end - 4) == 4;
  ::close(fd);
  if (!ok) throw gmi::error(file_label("checkpoint", file) + ": too short after saving it");
  return {static_cast<std::uint64_t>(end), detail::get_u32(tail.data())};
}

}  // namespace gmi::io
