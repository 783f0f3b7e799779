#pragma once
// Loads a model from MJCF, MuJoCo's XML format, restricted to the subset docs/physics.md lists. Anything
// outside it, malformed XML, non-finite numbers and non-positive masses throw gmi::config_error with one line
// "<file>:<line>: <element> <what>: got X, need Y". The model comes out in double; cast<float>() for devices.

#include <fstream>
#include <sstream>
#include <string>

#include <gmi/core/error.hpp>
#include <gmi/physics/model.hpp>

#if __has_include(<pugixml.hpp>)
#include <pugixml.hpp>

#include <gmi/physics/detail/compile.hpp>
#include <gmi/physics/detail/mjcf_loader.hpp>
#include <gmi/physics/detail/mjcf_xml.hpp>
#define GMI_PHYSICS_HAVE_MJCF 1
#else
#define GMI_PHYSICS_HAVE_MJCF 0
#endif

namespace gmi::physics {

#if GMI_PHYSICS_HAVE_MJCF

// Parses MJCF text; name is what messages call the source (a file name).
[[nodiscard]] inline model<double> load_mjcf_string(std::string text, const std::string& name = "<mjcf>") {
  const detail::mjcf_source src(std::move(text), name);
  pugi::xml_document doc;
  const pugi::xml_parse_result parsed =
      doc.load_buffer(src.text().data(), src.text().size(), pugi::parse_default, pugi::encoding_utf8);
  if (!parsed) {
    throw gmi::config_error(name + ":" + std::to_string(src.line_of(parsed.offset)) + ": malformed XML: " +
                            parsed.description());
  }
  const pugi::xml_node root = doc.document_element();
  if (!root) throw gmi::config_error(name + ":1: no element, need <mujoco>");
  model<double> m;
  detail::mjcf_reader reader(src);
  reader.read(root, m);
  detail::compile(m, reader.joint_ref_, reader.joint_springref_, reader.geom_where_, reader.nconmax_);
  return m;
}

[[nodiscard]] inline model<double> load_mjcf_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw gmi::config_error(gmi::got_need("MJCF file", path, "a readable file"));
  std::ostringstream text;
  text << in.rdbuf();
  return load_mjcf_string(text.str(), path);
}

#else
// Built where pugixml is absent: every load says so in one line.
[[nodiscard]] inline model<double> load_mjcf_string(std::string, const std::string& name = "<mjcf>") {
  throw gmi::config_error(gmi::got_need("MJCF loader for " + name, "gmi built without pugixml",
                                        "libpugixml-dev installed when gmi is configured (scripts/install-deps)"));
}
[[nodiscard]] inline model<double> load_mjcf_file(const std::string& path) { return load_mjcf_string({}, path); }
#endif

}  // namespace gmi::physics
