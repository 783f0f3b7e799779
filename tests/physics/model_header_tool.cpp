// gmi.tool.physics_model_header <model.xml> <struct name> <out.hpp>: compiles an MJCF file with gmi's loader
// and writes it as a header of flat_model words (include/gmi/physics/builtin/*_model.hpp come from here).
#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>

#include <gmi/physics/flat_model.hpp>
#include <gmi/physics/mjcf.hpp>

int main(int argc, char** argv) {
  if (argc != 4) {
    std::fprintf(stderr, "usage: gmi.tool.physics_model_header <model.xml> <struct name> <out.hpp>\n");
    return 2;
  }
  try {
    std::ifstream in(argv[1], std::ios::binary);
    if (!in) throw gmi::config_error(gmi::got_need("MJCF file", argv[1], "a readable file"));
    std::ostringstream text;
    text << in.rdbuf();
    const gmi::physics::model<float> m = gmi::physics::load_mjcf_string(text.str(), argv[1]).cast<float>();
    std::string file = argv[1];
    file = file.substr(file.find_last_of('/') + 1);
    std::ofstream out(argv[3], std::ios::binary);
    out << gmi::physics::model_header_source(m, argv[2], "include/gmi/physics/builtin/" + file, text.str());
    return out ? 0 : 1;
  } catch (const gmi::config_error& e) {
    std::fprintf(stderr, "%s\n", e.what());
    return 2;
  }
}
