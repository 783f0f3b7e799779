#pragma once
// Safetensors files: export_safetensors writes an io::checkpoint's tensors so PyTorch
// (safetensors.torch.load_file) can read them; load_safetensors reads ours or PyTorch's.

#include <gmi/io/checkpoint.hpp>

namespace gmi::io {

// Which tensors export_safetensors writes; an empty filter keeps all.
using tensor_filter = std::function<bool(std::string_view name)>;

// Keeps tensors whose name starts with one of the prefixes: names_starting_with({"policy.", "obs_norm."}).
[[nodiscard]] inline tensor_filter names_starting_with(std::vector<std::string> prefixes) {
  return [prefixes = std::move(prefixes)](std::string_view name) {
    return std::any_of(prefixes.begin(), prefixes.end(), [&](const std::string& p) { return name.starts_with(p); });
  };
}

// Writes the tensors that `keep` selects as a safetensors file (atomically, like save): u64 N, N bytes of JSON
// header padded with spaces to a multiple of 8, then the data, contiguous in header order. Meta goes into
// "__metadata__" as strings (non-string values as their JSON text), with "format": "pt" unless meta sets it:
// transformers-style loaders look for it.
inline void export_safetensors(const checkpoint& ck, const std::filesystem::path& path,
                               const tensor_filter& keep = {}) {
  std::vector<const tensor*> chosen;
  for (const tensor& t : ck.tensors()) {
    if (!keep || keep(t.name)) chosen.push_back(&t);
  }
  // Wider elements first (stable, so same-width tensors keep their order): the data section starts 8-byte
  // aligned, so every tensor then starts aligned to its element size, which zero-copy readers need.
  std::stable_sort(chosen.begin(), chosen.end(),
                   [](const tensor* a, const tensor* b) { return size_of(a->type) > size_of(b->type); });

  if (!ck.meta.is_object()) {
    throw config_error(
        detail::got_need_text(file_label("safetensors", path) + " meta", ck.meta.type_name(), "a JSON object"));
  }
  nlohmann::ordered_json header = nlohmann::ordered_json::object();
  nlohmann::ordered_json metadata = nlohmann::ordered_json::object();
  if (!ck.meta.contains("format")) metadata["format"] = "pt";
  for (const auto& [key, value] : ck.meta.items()) {
    metadata[key] = value.is_string() ? value.get<std::string>() : detail::dump_header(value, "safetensors", path);
  }
  header["__metadata__"] = std::move(metadata);
  std::uint64_t offset = 0;
  for (const tensor* t : chosen) {
    header[t->name] = {{"dtype", safetensors_name_of(t->type)},
                       {"shape", t->shape},
                       {"data_offsets", {offset, offset + t->bytes.size()}}};
    offset += t->bytes.size();
  }
  std::string text = detail::dump_header(header, "safetensors", path);
  detail::pad_to_8(text, 8);
  std::array<std::byte, 8> length{};
  detail::put_u64(length.data(), text.size());

  atomic_file_writer out(path, "safetensors");
  out.write(length.data(), length.size());
  out.write(text.data(), text.size());
  for (const tensor* t : chosen) out.write(t->bytes.data(), t->bytes.size());
  out.commit();
}

// Reads a safetensors file (ours or PyTorch's) of the dtypes gmi holds; tensors in header order, meta from
// "__metadata__" (values stay strings). config_error naming the file and the problem otherwise.
inline checkpoint load_safetensors(const std::filesystem::path& path) {
  const std::vector<std::byte> file = read_file(path, "safetensors");
  const auto refuse = [&](const std::string& problem) {
    return config_error(file_label("safetensors", path) + ": " + problem);
  };
  if (file.size() < 8) {
    throw refuse("file is " + std::to_string(file.size()) + " bytes, need at least 8 (the header length)");
  }
  const std::uint64_t header_bytes = detail::get_u64(file.data());
  if (header_bytes > file.size() - 8) {
    throw refuse("file is " + std::to_string(file.size()) + " bytes, header length says at least " +
                 std::to_string(header_bytes) + " + 8; the file is truncated or not safetensors");
  }
  const auto* header_begin = reinterpret_cast<const char*>(file.data() + 8);
  nlohmann::ordered_json header;
  try {
    header = nlohmann::ordered_json::parse(header_begin, header_begin + header_bytes);
  } catch (const nlohmann::json::exception& e) {
    throw refuse(std::string("header is not valid JSON (") + e.what() + ")");
  }
  if (!header.is_object()) throw refuse(detail::got_need_text("header", header.type_name(), "a JSON object"));
  const std::byte* data = file.data() + 8 + header_bytes;
  const std::uint64_t data_bytes = file.size() - 8 - header_bytes;

  checkpoint ck;
  try {
    for (const auto& [name, entry] : header.items()) {
      if (name == "__metadata__") {
        for (const auto& [key, value] : entry.items()) ck.meta[key] = value.get<std::string>();
        continue;
      }
      const std::string type = entry.at("dtype").get<std::string>();
      const std::optional<dtype> parsed = parse_safetensors_dtype(type);
      if (!parsed) {
        throw refuse(got_need("tensor \"" + name + "\" dtype", type,
                              "one of F32 F64 I32 I64 U32 U64 U8 (the types gmi checkpoints hold)"));
      }
      tensor t{name, *parsed, entry.at("shape").get<tensor_shape>(), {}};
      const auto offsets = entry.at("data_offsets").get<std::vector<std::uint64_t>>();
      if (offsets.size() != 2 || offsets[0] > offsets[1] || offsets[1] > data_bytes) {
        throw refuse("tensor \"" + name + "\": data_offsets " + entry.at("data_offsets").dump() +
                     " out of range, need [begin, end] within the data section's " + std::to_string(data_bytes) +
                     " bytes");
      }
      t.bytes.assign(data + offsets[0], data + offsets[1]);
      ck.add(std::move(t));
    }
    ck.origin_ = path.string();
  } catch (const nlohmann::json::exception& e) {
    throw refuse(std::string("header does not describe tensors as safetensors does (") + e.what() + ")");
  } catch (const gmi::config_error& e) {
    if (std::string_view(e.what()).starts_with("safetensors \"")) throw;
    throw refuse(std::string("header: ") + e.what());
  }
  return ck;
}


}  // namespace gmi::io
