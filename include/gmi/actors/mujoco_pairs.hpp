#pragma once
// MuJoCo models whose contacts come from predefined pairs only (MuJoCo 2.2's option collision="predefined"):
// MuJoCo's dynamic collision runs a broadphase every mj_step (the principal axis of the bodies' boxes, an eigen
// decomposition, a sort), which on gmi's Ant, where only the floor touches the 13 body geoms, costs more than the
// narrowphase of those 13 pairs (callgrind on Debian's 2.2.2: about a quarter of mj_step's instructions).
// with_predefined_pairs lists every geom pair the dynamic collision admits (contype/conaffinity, the same-weld and
// weld-parent filters, excludes) as an explicit <pair> with the parameters MuJoCo mixes for it (condim, friction,
// solref, solimp, margin, gap) and turns the broadphase off, so the model has the same contacts; on the Ant the
// steps are equal bit for bit (test actors.mujoco.pairs_step_as_dynamic_collision). Models it can not rewrite (geom
// priorities that differ in an admitted pair, a <contact> section or collision option of their own) are refused in
// one line. The loaders also bound njmax by the rows a step can have (with_rows_bound), which changes no step either.

#if __has_include(<mujoco/mujoco.h>)
#include <mujoco/mujoco.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include <gmi/actors/mujoco.hpp>
#include <gmi/core/error.hpp>

namespace gmi::actors::mujoco {

// The geom pairs (g1 < g2) for which MuJoCo's dynamic collision may make contacts, sorted.
[[nodiscard]] inline std::vector<std::pair<int, int>> admitted_pairs(const mjModel* m) {
  const bool filter_parent = !(m->opt.disableflags & mjDSBL_FILTERPARENT);
  auto excluded = [&](int b1, int b2) {
    const int sig = ((std::min(b1, b2) + 1) << 16) + std::max(b1, b2) + 1;
    const int* end = m->exclude_signature + m->nexclude;
    return std::find(static_cast<const int*>(m->exclude_signature), end, sig) != end;
  };
  std::vector<std::pair<int, int>> out;
  for (int g1 = 0; g1 < m->ngeom; ++g1) {
    for (int g2 = g1 + 1; g2 < m->ngeom; ++g2) {
      const int* type = m->geom_contype;
      const int* affinity = m->geom_conaffinity;
      if (!((type[g1] & affinity[g2]) || (type[g2] & affinity[g1]))) continue;
      const int b1 = m->geom_bodyid[g1], b2 = m->geom_bodyid[g2];
      const int w1 = m->body_weldid[b1], w2 = m->body_weldid[b2];
      if (w1 == w2) continue;
      const int p1 = m->body_weldid[m->body_parentid[w1]], p2 = m->body_weldid[m->body_parentid[w2]];
      if (filter_parent && w1 != 0 && w2 != 0 && (w1 == p2 || w2 == p1)) continue;
      if (excluded(b1, b2)) continue;
      out.emplace_back(g1, g2);
    }
  }
  return out;
}

namespace detail {
inline std::string numbers(const mjtNum* v, int n) {
  std::string s;
  char buf[40];
  for (int i = 0; i < n; ++i) {
    std::snprintf(buf, sizeof buf, "%s%.17g", i ? " " : "", double(v[i]));
    s += buf;
  }
  return s;
}
}  // namespace detail

// MJCF text `text` (compiled as `m`) with every admitted pair predefined and the broadphase off. Unnamed geoms of the
// worldbody get the names gmi_geom_<id>; the caller compiles the result (load_with_predefined_pairs checks it).
[[nodiscard]] inline std::string with_predefined_pairs(const mjModel* m, const std::string& text,
                                                       const std::string& what) {
  require(text.find("<contact") == std::string::npos && text.find("collision=") == std::string::npos, what,
          "a <contact> section or collision option", "a model with neither (its pairs are derived here)");
  const std::size_t world = text.find("<worldbody>");
  require(world != std::string::npos && m->ngeom >= 1, what, "no <worldbody> with geoms", "a model with geoms");
  // Name the worldbody's geoms in document order (MuJoCo's geom ids): named ones keep their names.
  std::vector<std::string> names;
  std::string body;
  const std::regex geom_tag("<geom\\b[^>]*>"), name_attr("\\bname=\"([^\"]*)\"");
  auto it = text.cbegin() + std::ptrdiff_t(world);
  for (std::sregex_iterator g(it, text.cend(), geom_tag), end; g != end; ++g) {
    const std::string tag = g->str();
    body.append(it, (*g)[0].first);
    std::smatch nm;
    if (std::regex_search(tag, nm, name_attr)) {
      names.push_back(nm[1]);
      body += tag;
    } else {
      names.push_back("gmi_geom_" + std::to_string(names.size()));
      body += "<geom name=\"" + names.back() + "\"" + tag.substr(5);
    }
    it = (*g)[0].second;
  }
  body.append(it, text.cend());
  require(int(names.size()) == m->ngeom, what + "'s geoms in <worldbody>", names.size(),
          std::to_string(m->ngeom) + " (the compiled model's; no geoms from includes or replicated bodies)");
  std::string pairs = "  <contact>\n";
  for (const auto& [g1, g2] : admitted_pairs(m)) {
    require(m->geom_priority[g1] == m->geom_priority[g2], what + " geom priorities of an admitted pair",
            std::to_string(m->geom_priority[g1]) + " and " + std::to_string(m->geom_priority[g2]), "equal priorities");
    // MuJoCo's mix for geoms of equal priority: the largest condim, friction, margin and gap; solref and solimp
    // weighted by solmix (0.5 each when both are 0).
    const mjtNum s1 = m->geom_solmix[g1], s2 = m->geom_solmix[g2];
    const mjtNum mix =
        (s1 < mjMINVAL && s2 < mjMINVAL) ? 0.5 : (s1 < mjMINVAL ? 0.0 : (s2 < mjMINVAL ? 1.0 : s1 / (s1 + s2)));
    mjtNum solref[mjNREF], solimp[mjNIMP], friction[5];
    for (int k = 0; k < mjNREF; ++k) {
      solref[k] = mix * m->geom_solref[g1 * mjNREF + k] + (1 - mix) * m->geom_solref[g2 * mjNREF + k];
    }
    for (int k = 0; k < mjNIMP; ++k) {
      solimp[k] = mix * m->geom_solimp[g1 * mjNIMP + k] + (1 - mix) * m->geom_solimp[g2 * mjNIMP + k];
    }
    const mjtNum* f1 = m->geom_friction + 3 * g1;
    const mjtNum* f2 = m->geom_friction + 3 * g2;
    friction[0] = friction[1] = std::max(f1[0], f2[0]);
    friction[2] = std::max(f1[1], f2[1]);
    friction[3] = friction[4] = std::max(f1[2], f2[2]);
    const mjtNum margin = std::max(m->geom_margin[g1], m->geom_margin[g2]);
    const mjtNum gap = std::max(m->geom_gap[g1], m->geom_gap[g2]);
    pairs += "    <pair geom1=\"" + names[std::size_t(g1)] + "\" geom2=\"" + names[std::size_t(g2)] + "\" condim=\"" +
             std::to_string(std::max(m->geom_condim[g1], m->geom_condim[g2])) + "\" friction=\"" +
             detail::numbers(friction, 5) + "\" solref=\"" + detail::numbers(solref, mjNREF) + "\" solimp=\"" +
             detail::numbers(solimp, mjNIMP) + "\" margin=\"" + detail::numbers(&margin, 1) + "\" gap=\"" +
             detail::numbers(&gap, 1) + "\"/>\n";
  }
  pairs += "  </contact>\n";
  std::string out = text.substr(0, world);
  const std::size_t option = out.find("<option");
  if (option != std::string::npos) {
    out.insert(option + 7, " collision=\"predefined\"");
  } else {
    const std::size_t root = out.find('>', out.find("<mujoco"));
    require(root != std::string::npos, what, "no <mujoco> element", "an MJCF model");
    out.insert(root + 1, "\n  <option collision=\"predefined\"/>");
  }
  const std::size_t close = body.find("</worldbody>");
  require(close != std::string::npos, what, "no </worldbody>", "an MJCF model");
  body.insert(close + 12, "\n" + pairs);
  return out + body;
}

// The most constraint rows a step of `m` can have, or -1 where this does not bound them (nconmax unset, equality
// constraints, tendons, friction loss): nconmax contacts of the largest condim (pyramidal cones: 2 (condim - 1) rows,
// elliptic: condim) plus one row a limited joint.
[[nodiscard]] inline int constraint_rows_bound(const mjModel* m) {
  if (m->nconmax < 0 || m->neq > 0 || m->ntendon > 0) return -1;
  for (int i = 0; i < m->nv; ++i) {
    if (m->dof_frictionloss[i] > 0) return -1;
  }
  int condim = 1, limited = 0;
  for (int g = 0; g < m->ngeom; ++g) condim = std::max(condim, m->geom_condim[g]);
  for (int p = 0; p < m->npair; ++p) condim = std::max(condim, m->pair_dim[p]);
  for (int j = 0; j < m->njnt; ++j) limited += m->jnt_limited[j] ? 1 : 0;
  const int per_contact = m->opt.cone == mjCONE_ELLIPTIC || condim == 1 ? condim : 2 * (condim - 1);
  return m->nconmax * per_contact + limited;
}

// MJCF text with njmax set to constraint_rows_bound(m) where that bounds the rows and the text sets no njmax: the
// same steps (no row can be dropped) with a far smaller mjData (MuJoCo 2.2 sizes the constraint arrays and the stack
// by njmax, default 500: about 10 MB an mjData on the Ant against 0.5 MB), so many environments a core share caches.
[[nodiscard]] inline std::string with_rows_bound(const mjModel* m, std::string text) {
  const int rows = constraint_rows_bound(m);
  if (rows < 0 || text.find("njmax") != std::string::npos) return text;
  const std::size_t size = text.find("<size");
  if (size != std::string::npos) return text.insert(size + 5, " njmax=\"" + std::to_string(rows) + "\"");
  const std::size_t root = text.find('>', text.find("<mujoco"));
  if (root == std::string::npos) return text;
  return text.insert(root + 1, "\n  <size njmax=\"" + std::to_string(rows) + "\"/>");
}

// Compiles MJCF text with its admitted pairs predefined and njmax bounded (above); checks that the result has the
// same bodies, geoms and geom ids and one pair per admitted pair; `name` names it as load_text does. The contacts
// are those of the dynamic collision, and so is their order where each body has one geom (the Ant); otherwise the
// geoms of one body pair may come in another order (the same steps up to rounding).
[[nodiscard]] inline model_ptr load_text_with_predefined_pairs(const std::string& name, const std::string& text) {
  const model_ptr dynamic = load_text(name, text);
  const std::string what = "MJCF " + name + " with predefined pairs";
  const model_ptr m = load_text(name, with_rows_bound(dynamic.get(), with_predefined_pairs(dynamic.get(), text, what)));
  const auto admitted = admitted_pairs(dynamic.get());
  require(m->nbody == dynamic->nbody && m->ngeom == dynamic->ngeom && m->npair == int(admitted.size()) &&
              m->opt.collision == mjCOL_PAIR,
          what, std::to_string(m->npair) + " pairs",
          std::to_string(admitted.size()) + " pairs on the same bodies and geoms");
  // MuJoCo's compiler sorts the pairs by body pair (geoms of one body pair may swap): compared as sets.
  std::vector<std::pair<int, int>> compiled;
  for (int p = 0; p < m->npair; ++p) compiled.emplace_back(m->pair_geom1[p], m->pair_geom2[p]);
  std::sort(compiled.begin(), compiled.end());
  for (std::size_t p = 0; p < compiled.size(); ++p) {
    require(compiled[p] == admitted[p], what + " pair " + std::to_string(p),
            std::to_string(compiled[p].first) + "-" + std::to_string(compiled[p].second),
            "geoms " + std::to_string(admitted[p].first) + "-" + std::to_string(admitted[p].second));
  }
  return m;
}

// The same from a file (a model with no includes or assets).
[[nodiscard]] inline model_ptr load_with_predefined_pairs(const std::string& path) {
  std::ifstream in(path);
  require(bool(in), "MJCF file", path, "a readable file");
  std::stringstream text;
  text << in.rdbuf();
  return load_text_with_predefined_pairs(std::filesystem::path(path).filename().string(), text.str());
}

}  // namespace gmi::actors::mujoco
#endif
