#pragma once
// A model packed into one array of 32-bit words (every int array, then every real array in float), with its
// sizes and options known at compile time: what a task built into gmi carries instead of an MJCF file. The
// words copy to the device as one table; view_of_words points a model_view into them wherever they live, so
// a task's params hold the view and its steps run without file IO on host threads and in kernels.

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include <gmi/core/error.hpp>
#include <gmi/core/hd.hpp>
#include <gmi/physics/model.hpp>

namespace gmi::physics {

// The scalar options of a model (the rest of model_view besides sizes and arrays).
struct model_options {
  float timestep = 0.002f;
  float gravity[3] = {0.0f, 0.0f, -9.81f};
  int iterations = 100;
  float tolerance = 1e-6f;
};

// Words of the int arrays of a model of these sizes (the real arrays follow them).
[[nodiscard]] GMI_HD constexpr std::size_t int_words(const model_sizes& s) {
  std::size_t n = 0;
#define GMI_PHYSICS_COUNT(name, width, count) n += static_cast<std::size_t>(width) * static_cast<std::size_t>(s.count);
  GMI_PHYSICS_INT_FIELDS(GMI_PHYSICS_COUNT)
#undef GMI_PHYSICS_COUNT
  return n;
}
[[nodiscard]] GMI_HD constexpr std::size_t real_words(const model_sizes& s) {
  std::size_t n = 0;
#define GMI_PHYSICS_COUNT(name, width, count) n += static_cast<std::size_t>(width) * static_cast<std::size_t>(s.count);
  GMI_PHYSICS_REAL_FIELDS(GMI_PHYSICS_COUNT)
#undef GMI_PHYSICS_COUNT
  return n;
}

// The words of a float model: int pool then real pool, bit for bit.
[[nodiscard]] inline std::vector<std::uint32_t> pack_words(const model<float>& m) {
  const std::vector<int> ints = m.int_pool();
  const std::vector<float> reals = m.real_pool();
  gmi::require(ints.size() == int_words(m.size), "physics model int pool size", ints.size(),
               std::to_string(int_words(m.size)) + " (its sizes)");
  gmi::require(reals.size() == real_words(m.size), "physics model real pool size", reals.size(),
               std::to_string(real_words(m.size)) + " (its sizes)");
  std::vector<std::uint32_t> out(ints.size() + reals.size());
  if (!ints.empty()) std::memcpy(out.data(), ints.data(), ints.size() * 4);
  if (!reals.empty()) std::memcpy(out.data() + ints.size(), reals.data(), reals.size() * 4);
  return out;
}

[[nodiscard]] inline model_options options_of(const model<float>& m) {
  model_options o;
  o.timestep = m.timestep;
  for (int i = 0; i < 3; ++i) o.gravity[i] = m.gravity[i];
  o.iterations = m.iterations;
  o.tolerance = m.tolerance;
  return o;
}

// A view over packed words (host or device memory; only pointer arithmetic here, nothing is read).
[[nodiscard]] GMI_HD inline model_view<float> view_of_words(const model_sizes& s, const model_options& o,
                                                           const void* words) {
  model_view<float> v{};
  v.size = s;
  v.timestep = o.timestep;
  for (int i = 0; i < 3; ++i) v.gravity[i] = o.gravity[i];
  v.iterations = o.iterations;
  v.tolerance = o.tolerance;
  const int* ints = static_cast<const int*>(words);
  const float* reals = static_cast<const float*>(words) + int_words(s);
  std::size_t at = 0;
#define GMI_PHYSICS_POINT(name, width, count) \
  v.name = ints + at;                         \
  at += static_cast<std::size_t>(width) * static_cast<std::size_t>(s.count);
  GMI_PHYSICS_INT_FIELDS(GMI_PHYSICS_POINT)
#undef GMI_PHYSICS_POINT
  at = 0;
#define GMI_PHYSICS_POINT(name, width, count) \
  v.name = reals + at;                        \
  at += static_cast<std::size_t>(width) * static_cast<std::size_t>(s.count);
  GMI_PHYSICS_REAL_FIELDS(GMI_PHYSICS_POINT)
#undef GMI_PHYSICS_POINT
  return v;
}

// Whether two size sets are equal, field by field (a built-in model against what the loader makes of its MJCF).
[[nodiscard]] constexpr bool same_sizes(const model_sizes& a, const model_sizes& b) {
  return a.nq == b.nq && a.nv == b.nv && a.nbody == b.nbody && a.njnt == b.njnt && a.ngeom == b.ngeom &&
         a.nsite == b.nsite && a.nu == b.nu && a.nM == b.nM && a.npair == b.npair && a.ncon_max == b.ncon_max &&
         a.nefc_max == b.nefc_max;
}

// C++ source of a header that carries m as words (what gmi.tool.physics_model_header writes).
[[nodiscard]] inline std::string model_header_source(const model<float>& m, const std::string& struct_name,
                                                     const std::string& source_file, const std::string& mjcf) {
  const std::vector<std::uint32_t> w = pack_words(m);
  const model_options o = options_of(m);
  auto hexf = [](float f) {
    std::uint32_t b;
    std::memcpy(&b, &f, 4);
    char buf[16];
    std::snprintf(buf, sizeof buf, "0x%08xu", b);
    return std::string(buf);
  };
  const model_sizes& s = m.size;
  std::string out;
  out += "#pragma once\n// " + struct_name + ": " + source_file +
         " compiled to words by gmi.tool.physics_model_header (generated: do not edit;\n"
         "// tests/physics/tasks_test.cpp checks these words against the loader's output for that file).\n\n"
         "#include <cstdint>\n#include <cstring>\n\n#include <gmi/core/hd.hpp>\n#include <gmi/physics/flat_model.hpp>\n\n"
         "namespace gmi::physics::builtin {\n\nstruct " + struct_name + " {\n";
  out += "  static constexpr const char* source = \"" + source_file + "\";\n";
  out += "  // The MJCF these words come from (to load it elsewhere, e.g. in MuJoCo).\n";
  out += "  static constexpr const char* mjcf = R\"gmi_mjcf(" + mjcf + ")gmi_mjcf\";\n";
  out += "  GMI_HD static constexpr model_sizes sizes() { return {" + std::to_string(s.nq) + ", " +
         std::to_string(s.nv) + ", " + std::to_string(s.nbody) + ", " + std::to_string(s.njnt) + ", " +
         std::to_string(s.ngeom) + ", " + std::to_string(s.nsite) + ", " + std::to_string(s.nu) + ", " +
         std::to_string(s.nM) + ", " + std::to_string(s.npair) + ", " + std::to_string(s.ncon_max) + ", " +
         std::to_string(s.nefc_max) + "}; }\n";
  out += "  // timestep, gravity, iterations, tolerance (float bits)\n";
  out += "  static model_options options() {\n    model_options o;\n";
  out += "    o.timestep = bits(" + hexf(o.timestep) + ");\n";
  for (int i = 0; i < 3; ++i) out += "    o.gravity[" + std::to_string(i) + "] = bits(" + hexf(o.gravity[i]) + ");\n";
  out += "    o.iterations = " + std::to_string(o.iterations) + ";\n";
  out += "    o.tolerance = bits(" + hexf(o.tolerance) + ");\n    return o;\n  }\n";
  out += "  static float bits(std::uint32_t b) {\n    float f;\n    std::memcpy(&f, &b, 4);\n    return f;\n  }\n";
  out += "  static constexpr std::uint32_t words[" + std::to_string(w.size()) + "] = {";
  for (std::size_t i = 0; i < w.size(); ++i) {
    if (i % 8 == 0) out += "\n     ";
    char buf[16];
    std::snprintf(buf, sizeof buf, " 0x%08xu,", w[i]);
    out += buf;
  }
  out += "\n  };\n};\n\n}  // namespace gmi::physics::builtin\n";
  return out;
}

}  // namespace gmi::physics
