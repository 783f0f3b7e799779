#pragma once
// The MJCF subset loader's reading pass: walks <compiler>, <option>, <default>, <worldbody> and <actuator>,
// refuses whatever lies outside gmi's subset (docs/physics.md) in one line that names it and file:line, and
// fills a model's per-element arrays. compile.hpp derives the rest (addresses, dof tree, qpos0, invweight0).

// Only where pugixml is installed (see mjcf.hpp for the loader without it).
#if __has_include(<pugixml.hpp>)
#include <pugixml.hpp>

#include <array>
#include <cmath>
#include <map>
#include <numbers>
#include <string>
#include <vector>

#include <gmi/physics/detail/mass_properties.hpp>
#include <gmi/physics/detail/mjcf_xml.hpp>
#include <gmi/physics/math.hpp>
#include <gmi/physics/model.hpp>

namespace gmi::physics::detail {

// Nesting of bodies and default classes beyond this is refused (keeps the reader's recursion bounded).
inline constexpr int mjcf_max_depth = 200;

class mjcf_reader {
 public:
  explicit mjcf_reader(const mjcf_source& src) : src_(src) {}

  // Reads the document into out (per-element arrays and names; sizes nbody, njnt, ngeom, nsite, nu).
  void read(const pugi::xml_node& root, model<double>& out) {
    out_ = &out;
    if (std::string_view(root.name()) != "mujoco") src_.fail(root, "is not an MJCF document, need <mujoco> at the top");
    mjcf_element(src_, root, "mujoco", nullptr).allow({"model"});
    classes_["main"].name = "main";
    // Settings first, wherever they appear: compiler angles change how everything else reads.
    for (const pugi::xml_node& n : root.children()) {
      if (n.type() != pugi::node_element) continue;
      const std::string_view name = n.name();
      if (name == "compiler") read_compiler(n);
    }
    for (const pugi::xml_node& n : root.children()) {
      if (n.type() != pugi::node_element) continue;
      const std::string_view name = n.name();
      if (name == "option") {
        read_option(n);
      } else if (name == "default") {
        mjcf_element(src_, n, "default", nullptr).allow({"class"});
        const auto c = n.attribute("class");
        if (c && std::string_view(c.value()) != "main")
          src_.fail(n, "class: got \"" + std::string(c.value()) + "\", need main (or none) at the top level");
        read_default(n, "main", 0);
      } else if (name == "size") {
        const mjcf_element e(src_, n, "size", nullptr);
        e.allow({"nconmax"});
        if (n.first_child()) src_.fail(n, "must be empty");
        nconmax_ = e.integer("nconmax", -1, 1, 1 << 20);
      } else if (name != "compiler" && name != "worldbody" && name != "actuator") {
        src_.fail(n, "is outside gmi's MJCF subset (docs/physics.md)");
      }
    }
    add_world();
    for (const pugi::xml_node& n : root.children()) {
      if (n.type() == pugi::node_element && std::string_view(n.name()) == "worldbody") read_worldbody(n);
    }
    for (const pugi::xml_node& n : root.children()) {
      if (n.type() == pugi::node_element && std::string_view(n.name()) == "actuator") read_actuators(n);
    }
  }

 private:
  const mjcf_source& src_;
  model<double>* out_ = nullptr;
  bool degrees_ = true;
  int inertia_from_geom_ = 2;  // false, true, auto
  bool autolimits_ = false;
  std::map<std::string, default_class> classes_;

  [[nodiscard]] double angle(double v) const { return degrees_ ? v * std::numbers::pi / 180.0 : v; }

  void read_compiler(const pugi::xml_node& n) {
    const mjcf_element e(src_, n, "compiler", nullptr);
    e.allow({"angle", "coordinate", "inertiafromgeom", "autolimits"});
    if (n.first_child()) src_.fail(n, "must be empty");
    degrees_ = e.keyword("angle", {"radian", "degree"}, degrees_ ? 1 : 0) == 1;
    e.keyword("coordinate", {"local"}, 0);
    inertia_from_geom_ = e.keyword("inertiafromgeom", {"false", "true", "auto"}, inertia_from_geom_);
    autolimits_ = e.boolean("autolimits").value_or(autolimits_);
  }

  void read_option(const pugi::xml_node& n) {
    const mjcf_element e(src_, n, "option", nullptr);
    e.allow({"timestep", "gravity", "integrator", "iterations", "tolerance"});
    if (n.first_child()) src_.fail(n, "must be empty (no <flag>)");
    out_->timestep = e.number("timestep", out_->timestep);
    if (!(out_->timestep > 0)) e.fail("timestep: got " + std::to_string(out_->timestep) + ", need > 0");
    const auto g = e.numbers("gravity", 3, 3, {out_->gravity[0], out_->gravity[1], out_->gravity[2]});
    for (int i = 0; i < 3; ++i) out_->gravity[i] = g[i];
    e.keyword("integrator", {"Euler"}, 0);
    out_->iterations = e.integer("iterations", out_->iterations, 1, 1000000);
    out_->tolerance = e.number("tolerance", out_->tolerance);
    if (!(out_->tolerance >= 0)) e.fail("tolerance: got " + std::to_string(out_->tolerance) + ", need >= 0");
  }

  void read_default(const pugi::xml_node& n, const std::string& cls, int depth) {
    if (depth > mjcf_max_depth) src_.fail(n, "nests deeper than " + std::to_string(mjcf_max_depth) + " levels");
    for (const pugi::xml_node& c : n.children()) {
      if (c.type() != pugi::node_element) continue;
      const std::string_view name = c.name();
      const mjcf_element e(src_, c, std::string(name), nullptr);
      std::string kind(name);
      if (name == "default") {
        e.allow({"class"});
        const auto a = c.attribute("class");
        if (!a || !*a.value()) src_.fail(c, "needs a class name");
        const std::string child = a.value();
        if (classes_.count(child)) src_.fail(c, "class: got \"" + child + "\" twice, need unique class names");
        default_class copy = classes_[cls];
        copy.name = child;
        classes_[child] = copy;
        read_default(c, child, depth + 1);
        continue;
      }
      if (name == "joint") {
        e.allow(joint_attributes(false));
      } else if (name == "geom") {
        e.allow(geom_attributes(false));
      } else if (name == "site") {
        e.allow(site_attributes(false));
      } else if (name == "motor" || name == "position") {
        if (name == "motor")
          e.allow({"gear", "ctrlrange", "ctrllimited", "forcerange", "forcelimited"});
        else
          e.allow({"gear", "ctrlrange", "ctrllimited", "forcerange", "forcelimited", "kp"});
        kind = "actuator";
      } else {
        src_.fail(c, "is outside gmi's MJCF subset inside <default> (docs/physics.md)");
      }
      if (c.first_child()) src_.fail(c, "must be empty");
      for (const pugi::xml_attribute& a : c.attributes()) classes_[cls].values[kind][a.name()] = a.value();
    }
  }

  static std::initializer_list<const char*> joint_attributes(bool named) {
    static const std::initializer_list<const char*> with = {
        "name",    "class",    "type",      "pos",       "axis", "range",       "limited",
        "damping", "armature", "stiffness", "springref", "ref",  "solreflimit", "solimplimit"};
    static const std::initializer_list<const char*> without = {"type",      "pos",     "axis",        "range",
                                                               "limited",   "damping", "armature",    "stiffness",
                                                               "springref", "ref",     "solreflimit", "solimplimit"};
    return named ? with : without;
  }
  static std::initializer_list<const char*> geom_attributes(bool named) {
    static const std::initializer_list<const char*> with = {
        "name",    "class", "type",     "size",    "pos",         "quat",   "axisangle", "euler", "fromto",
        "density", "mass",  "friction", "contype", "conaffinity", "condim", "rgba",      "group"};
    static const std::initializer_list<const char*> without = {
        "type", "size", "density", "friction", "contype", "conaffinity", "condim", "rgba", "group"};
    return named ? with : without;
  }
  static std::initializer_list<const char*> site_attributes(bool named) {
    static const std::initializer_list<const char*> with = {"name", "class",     "type",  "size", "pos",
                                                            "quat", "axisangle", "euler", "rgba", "group"};
    static const std::initializer_list<const char*> without = {"type", "size", "rgba", "group"};
    return named ? with : without;
  }

  // The class an element reads its defaults from: its own class attribute, else its body's child class.
  const default_class* class_of(const pugi::xml_node& n, const std::string& childclass) const {
    const auto a = n.attribute("class");
    const std::string name = a ? std::string(a.value()) : childclass;
    const auto it = classes_.find(name);
    if (it == classes_.end()) src_.fail(n, "class: got \"" + name + "\", need a class defined in <default>");
    return &it->second;
  }

  // quat, axisangle or euler (intrinsic x-y-z, MuJoCo's default eulerseq); at most one of them.
  quat<double> orientation(const mjcf_element& e) const {
    const int given = int(e.has("quat")) + int(e.has("axisangle")) + int(e.has("euler"));
    if (given > 1) e.fail("orientation: got more than one of quat, axisangle, euler, need at most one");
    if (e.has("quat")) {
      const auto q = e.numbers("quat", 4, 4, {});
      const double n = std::sqrt(q[0] * q[0] + q[1] * q[1] + q[2] * q[2] + q[3] * q[3]);
      if (!(n > 1e-10) || !std::isfinite(n))
        e.fail("quat: got a zero or unbounded quaternion, need a finite non-zero one");
      return {q[0] / n, q[1] / n, q[2] / n, q[3] / n};
    }
    if (e.has("axisangle")) {
      const auto a = e.numbers("axisangle", 4, 4, {});
      const vec3<double> axis{a[0], a[1], a[2]};
      const double n = norm(axis);
      if (!(n > 1e-10) || !std::isfinite(n))
        e.fail("axisangle: got a zero or unbounded axis, need a finite non-zero one");
      return axis_angle((1.0 / n) * axis, angle(a[3]));
    }
    if (e.has("euler")) {
      const auto a = e.numbers("euler", 3, 3, {});
      return axis_angle(vec3<double>{1, 0, 0}, angle(a[0])) * axis_angle(vec3<double>{0, 1, 0}, angle(a[1])) *
             axis_angle(vec3<double>{0, 0, 1}, angle(a[2]));
    }
    return {1, 0, 0, 0};
  }

  static vec3<double> vec(const std::vector<double>& v) { return {v[0], v[1], v[2]}; }

  void add_world() {
    model<double>& m = *out_;
    m.body_names.push_back("world");
    m.body_parent.push_back(0);
    for (int i = 0; i < 3; ++i) m.body_pos.push_back(0), m.body_ipos.push_back(0);
    m.body_quat.insert(m.body_quat.end(), {1, 0, 0, 0});
    m.body_inertia.insert(m.body_inertia.end(), {0, 0, 0, 0, 0, 0});
    m.body_mass.push_back(0);
    m.body_jntnum.push_back(0);
    m.body_jntadr.push_back(0);
  }

  void read_worldbody(const pugi::xml_node& n) {
    mjcf_element(src_, n, "worldbody", nullptr).allow({});
    mass_sum ignored;
    for (const pugi::xml_node& c : n.children()) {
      if (c.type() != pugi::node_element) continue;
      const std::string_view name = c.name();
      if (name == "geom")
        read_geom(c, 0, "main", ignored);
      else if (name == "site")
        read_site(c, 0, "main");
      else if (name != "body")
        src_.fail(c, "is outside gmi's MJCF subset inside <worldbody> (docs/physics.md)");
    }
    for (const pugi::xml_node& c : n.children()) {
      if (c.type() == pugi::node_element && std::string_view(c.name()) == "body") read_body(c, 0, "main", 1);
    }
  }

  void read_body(const pugi::xml_node& n, int parent, const std::string& inherited_class, int depth) {
    if (depth > mjcf_max_depth) src_.fail(n, "nests deeper than " + std::to_string(mjcf_max_depth) + " bodies");
    model<double>& m = *out_;
    const mjcf_element e(src_, n, "body", nullptr);
    e.allow({"name", "pos", "quat", "axisangle", "euler", "childclass"});
    std::string childclass = inherited_class;
    if (const auto a = n.attribute("childclass")) {
      childclass = a.value();
      if (!classes_.count(childclass))
        src_.fail(n, "childclass: got \"" + childclass + "\", need a class defined in <default>");
    }
    const int id = static_cast<int>(m.body_parent.size());
    m.body_names.push_back(n.attribute("name").value());
    m.body_parent.push_back(parent);
    const auto pos = e.numbers("pos", 3, 3, {0, 0, 0});
    m.body_pos.insert(m.body_pos.end(), pos.begin(), pos.end());
    const quat<double> q = orientation(e);
    m.body_quat.insert(m.body_quat.end(), {q.w, q.x, q.y, q.z});
    m.body_jntadr.push_back(static_cast<int>(m.jnt_type.size()));
    mass_sum geoms;
    pugi::xml_node inertial;
    for (const pugi::xml_node& c : n.children()) {
      if (c.type() != pugi::node_element) continue;
      const std::string_view name = c.name();
      if (name == "joint" || name == "freejoint") {
        read_joint(c, id, parent, childclass, name == "freejoint");
      } else if (name == "geom") {
        read_geom(c, id, childclass, geoms);
      } else if (name == "site") {
        read_site(c, id, childclass);
      } else if (name == "inertial") {
        if (inertial) src_.fail(c, "appears twice in one body, need at most one");
        inertial = c;
      } else if (name != "body") {
        src_.fail(c, "is outside gmi's MJCF subset inside <body> (docs/physics.md)");
      }
    }
    m.body_jntnum.push_back(static_cast<int>(m.jnt_type.size()) - m.body_jntadr.back());
    double mass = 0;
    vec3<double> com{0, 0, 0};
    std::array<double, 6> inertia{};
    if (inertial && inertia_from_geom_ != 1) {
      read_inertial(inertial, mass, com, inertia);
    } else if (inertia_from_geom_ != 0) {
      geoms.result(mass, com, inertia);
    }
    const std::string label =
        m.body_names.back().empty() ? "body " + std::to_string(id) : "body \"" + m.body_names.back() + "\"";
    if (!std::isfinite(mass) || !(mass > 0)) {
      e.fail(label + ": mass got " + std::to_string(mass) + ", need > 0 (a geom with volume or an <inertial>)");
    }
    for (double v : inertia) {
      if (!std::isfinite(v)) e.fail(label + ": inertia got a non-finite value, need finite");
    }
    if (!std::isfinite(com.x) || !std::isfinite(com.y) || !std::isfinite(com.z))
      e.fail(label + ": centre of mass got a non-finite value, need finite");
    m.body_mass.push_back(mass);
    m.body_ipos.insert(m.body_ipos.end(), {com.x, com.y, com.z});
    m.body_inertia.insert(m.body_inertia.end(), inertia.begin(), inertia.end());
    for (const pugi::xml_node& c : n.children()) {
      if (c.type() == pugi::node_element && std::string_view(c.name()) == "body")
        read_body(c, id, childclass, depth + 1);
    }
  }

  void read_inertial(const pugi::xml_node& n, double& mass, vec3<double>& com, std::array<double, 6>& inertia) const {
    const mjcf_element e(src_, n, "inertial", nullptr);
    e.allow({"pos", "quat", "axisangle", "euler", "mass", "diaginertia"});
    if (n.first_child()) src_.fail(n, "must be empty");
    if (!e.has("pos") || !e.has("mass") || !e.has("diaginertia")) e.fail("needs pos, mass and diaginertia");
    com = vec(e.numbers("pos", 3, 3, {}));
    mass = e.number("mass", 0);
    if (!(mass > 0)) e.fail("mass: got " + std::to_string(mass) + ", need > 0");
    const auto d = e.numbers("diaginertia", 3, 3, {});
    for (double v : d) {
      if (!(v > 0)) e.fail("diaginertia: got " + std::to_string(v) + ", need every component > 0");
    }
    if (d[0] + d[1] < d[2] || d[0] + d[2] < d[1] || d[1] + d[2] < d[0]) {
      e.fail("diaginertia: got components that break A + B >= C, need a physical inertia");
    }
    mass_sum one;
    one.add(mass, com, orientation(e), {d[0] / mass, d[1] / mass, d[2] / mass});
    vec3<double> ignored;
    one.result(mass, ignored, inertia);
  }

  void read_joint(const pugi::xml_node& n, int body, int parent, const std::string& childclass, bool freejoint) {
    model<double>& m = *out_;
    const mjcf_element e(src_, n, "joint", freejoint ? nullptr : class_of(n, childclass));
    if (freejoint)
      e.allow({"name"});
    else
      e.allow(joint_attributes(true));
    if (n.first_child()) src_.fail(n, "must be empty");
    const int type = freejoint ? joint_free
                               : std::array{joint_free, joint_ball, joint_slide,
                                            joint_hinge}[e.keyword("type", {"free", "ball", "slide", "hinge"}, 3)];
    if (type == joint_free) {
      if (parent != 0) e.fail("a free joint got a body inside another body, need a child of <worldbody>");
      if (m.jnt_type.size() > static_cast<std::size_t>(m.body_jntadr.back()))
        e.fail("a free joint must be its body's only joint");
    } else if (m.jnt_type.size() > static_cast<std::size_t>(m.body_jntadr.back()) && m.jnt_type.back() == joint_free) {
      e.fail("a free joint must be its body's only joint");
    }
    m.joint_names.push_back(n.attribute("name").value());
    m.jnt_type.push_back(type);
    m.jnt_bodyid.push_back(body);
    const auto pos = e.numbers("pos", 3, 3, {0, 0, 0});
    if (type == joint_free && (pos[0] != 0 || pos[1] != 0 || pos[2] != 0))
      e.fail("pos: got a non-zero anchor on a free joint, need none");
    m.jnt_pos.insert(m.jnt_pos.end(), pos.begin(), pos.end());
    vec3<double> axis = vec(e.numbers("axis", 3, 3, {0, 0, 1}));
    const double len = norm(axis);
    if (!(len > 1e-10) || !std::isfinite(len)) e.fail("axis: got a zero or unbounded axis, need a finite non-zero one");
    axis = (1.0 / len) * axis;
    m.jnt_axis.insert(m.jnt_axis.end(), {axis.x, axis.y, axis.z});
    const bool angular = type == joint_hinge;
    const bool has_range = e.has("range");
    std::optional<bool> limited = e.boolean("limited");
    if (has_range && !limited && !autolimits_)
      e.fail("has range but not limited: set limited, or <compiler autolimits=\"true\"/>");
    const bool is_limited = limited.value_or(has_range);
    auto range = e.numbers("range", 2, 2, {0, 0});
    if (angular) range = {angle(range[0]), angle(range[1])};
    if (is_limited) {
      if (type != joint_hinge && type != joint_slide)
        e.fail("limited: got a limited " + std::string(type == joint_ball ? "ball" : "free") +
               " joint, need hinge or slide");
      if (!(range[0] < range[1])) e.fail("range: got lower >= upper, need lower < upper");
    }
    m.jnt_limited.push_back(is_limited ? 1 : 0);
    m.jnt_range.insert(m.jnt_range.end(), range.begin(), range.end());
    const double stiffness = e.number("stiffness", 0);
    if (stiffness < 0) e.fail("stiffness: got " + std::to_string(stiffness) + ", need >= 0");
    if (stiffness != 0 && type != joint_hinge && type != joint_slide)
      e.fail("stiffness: got a spring on a ball or free joint, need hinge or slide");
    m.jnt_stiffness.push_back(stiffness);
    const auto solref = e.numbers("solreflimit", 2, 2, {0.02, 1});
    if (!(solref[0] > 0 && solref[1] > 0))
      e.fail("solreflimit: got a non-positive value, need timeconst > 0 and dampratio > 0");
    m.jnt_solref.insert(m.jnt_solref.end(), solref.begin(), solref.end());
    const auto solimp = e.numbers("solimplimit", 5, 5, {0.9, 0.95, 0.001, 0.5, 2});
    if (!(solimp[0] >= 1e-4 && solimp[0] <= 0.9999 && solimp[1] >= 1e-4 && solimp[1] <= 0.9999 && solimp[2] >= 0 &&
          solimp[3] > 0 && solimp[3] < 1 && solimp[4] >= 1)) {
      e.fail(
          "solimplimit: got values out of range, need dmin, dmax in [0.0001, 0.9999], width >= 0, 0 < midpoint < 1, "
          "power >= 1");
    }
    m.jnt_solimp.insert(m.jnt_solimp.end(), solimp.begin(), solimp.end());
    const double damping = e.number("damping", 0), armature = e.number("armature", 0);
    if (damping < 0) e.fail("damping: got " + std::to_string(damping) + ", need >= 0");
    if (armature < 0) e.fail("armature: got " + std::to_string(armature) + ", need >= 0");
    const int ndof = type == joint_free ? 6 : type == joint_ball ? 3 : 1;
    for (int i = 0; i < ndof; ++i) m.dof_damping.push_back(damping), m.dof_armature.push_back(armature);
    const double ref = e.number("ref", 0), springref = e.number("springref", 0);
    if ((ref != 0 || springref != 0) && type != joint_hinge && type != joint_slide)
      e.fail("ref and springref apply to hinge and slide joints only");
    joint_ref_.push_back(angular ? angle(ref) : ref);
    joint_springref_.push_back(angular ? angle(springref) : springref);
  }

 public:
  // Per joint, in joint order: hinge/slide ref and springref in radians or metres (compile.hpp reads them).
  std::vector<double> joint_ref_, joint_springref_;
  // Per geom: file:line, for refusals of collision pairs found later.
  std::vector<std::string> geom_where_;
  // <size nconmax>: a cap on the contacts one environment holds (-1: as many as every pair can make at once).
  int nconmax_ = -1;

 private:
  void read_geom(const pugi::xml_node& n, int body, const std::string& childclass, mass_sum& masses) {
    model<double>& m = *out_;
    const mjcf_element e(src_, n, "geom", class_of(n, childclass));
    e.allow(geom_attributes(true));
    if (n.first_child()) src_.fail(n, "must be empty");
    const int type = std::array{geom_plane, geom_sphere, geom_capsule, geom_cylinder,
                                geom_box}[e.keyword("type", {"plane", "sphere", "capsule", "cylinder", "box"}, 1)];
    const bool fromto = e.has("fromto");
    const int need = type == geom_sphere ? 1 : type == geom_capsule || type == geom_cylinder ? (fromto ? 1 : 2) : 3;
    if (!e.has("size")) e.fail("size: got none, need " + std::to_string(need) + " numbers");
    auto size = e.numbers("size", need, 3, {});
    size.resize(3, 0.0);
    for (int i = 0; i < need; ++i) {
      if (type == geom_plane ? !(size[i] >= 0) : !(size[i] > 0))
        e.fail("size: got " + std::to_string(size[i]) + ", need > 0");
    }
    vec3<double> pos = vec(e.numbers("pos", 3, 3, {0, 0, 0}));
    quat<double> q = orientation(e);
    if (fromto) {
      if (type != geom_capsule && type != geom_cylinder)
        e.fail("fromto: got it on a sphere, box or plane, need a capsule or cylinder");
      if (e.has("pos") || e.has("quat") || e.has("axisangle") || e.has("euler"))
        e.fail("fromto: got pos or an orientation beside it, need fromto alone");
      const auto ft = e.numbers("fromto", 6, 6, {});
      const vec3<double> a{ft[0], ft[1], ft[2]}, b{ft[3], ft[4], ft[5]};
      const vec3<double> d = b - a;
      const double len = norm(d);
      if (!(len > 1e-10) || !std::isfinite(len)) e.fail("fromto: got two equal or unbounded points, need a segment");
      pos = 0.5 * (a + b);
      size[1] = len / 2;
      // MuJoCo's frame: +z from `to` towards `from` (the rotation taking +z to a - b, about z x (a - b), or x where
      // they are parallel), so a capsule's end contacts come in MuJoCo's order.
      const vec3<double> dir = (-1.0 / len) * d, z{0, 0, 1};
      const vec3<double> c = cross(z, dir);
      const double s = norm(c);
      q = axis_angle(s < 1e-10 ? vec3<double>{1, 0, 0} : (1.0 / s) * c, std::atan2(s, dir.z));
    }
    if (type == geom_plane && body != 0) e.fail("type: got a plane on a moving body, need planes in <worldbody>");
    const auto friction = e.numbers("friction", 1, 3, {1, 0.005, 0.0001});
    std::array<double, 3> fr{1, 0.005, 0.0001};
    for (std::size_t i = 0; i < friction.size(); ++i) {
      if (friction[i] < 0) e.fail("friction: got a negative coefficient, need >= 0");
      fr[i] = friction[i];
    }
    m.geom_names.push_back(n.attribute("name").value());
    geom_where_.push_back(src_.where(n));
    m.geom_type.push_back(type);
    m.geom_bodyid.push_back(body);
    m.geom_contype.push_back(e.integer("contype", 1, 0, 1 << 30));
    m.geom_conaffinity.push_back(e.integer("conaffinity", 1, 0, 1 << 30));
    const int condim = e.integer("condim", 3, 1, 6);
    if (condim != 1 && condim != 3)
      e.fail("condim: got " + std::to_string(condim) + ", need 1 (frictionless) or 3 (sliding friction)");
    m.geom_condim.push_back(condim);
    m.geom_size.insert(m.geom_size.end(), size.begin(), size.end());
    m.geom_pos.insert(m.geom_pos.end(), {pos.x, pos.y, pos.z});
    m.geom_quat.insert(m.geom_quat.end(), {q.w, q.x, q.y, q.z});
    m.geom_friction.insert(m.geom_friction.end(), fr.begin(), fr.end());
    e.numbers("rgba", 4, 4, {0, 0, 0, 0});  // read for its checks, not stored
    e.integer("group", 0, 0, 5);
    if (type == geom_plane) {
      if (n.attribute("mass") || n.attribute("density"))
        e.fail("mass and density apply to geoms with volume, not planes");
      return;
    }
    const shape_properties shape = shape_of(type, size.data());
    double mass;
    if (e.has("mass")) {
      mass = e.number("mass", 0);
      if (mass < 0) e.fail("mass: got " + std::to_string(mass) + ", need >= 0");
    } else {
      const double density = e.number("density", 1000);
      if (density < 0) e.fail("density: got " + std::to_string(density) + ", need >= 0");
      mass = density * shape.volume;
    }
    if (!std::isfinite(mass)) e.fail("mass: got a non-finite value from size and density, need finite");
    if (mass > 0) masses.add(mass, pos, q, shape.unit_inertia);
  }

  void read_site(const pugi::xml_node& n, int body, const std::string& childclass) {
    model<double>& m = *out_;
    const mjcf_element e(src_, n, "site", class_of(n, childclass));
    e.allow(site_attributes(true));
    if (n.first_child()) src_.fail(n, "must be empty");
    e.keyword("type", {"sphere", "capsule", "cylinder", "box"}, 0);
    e.numbers("size", 1, 3, {0.005});
    e.numbers("rgba", 4, 4, {0, 0, 0, 0});
    e.integer("group", 0, 0, 5);
    const auto pos = e.numbers("pos", 3, 3, {0, 0, 0});
    const quat<double> q = orientation(e);
    m.site_names.push_back(n.attribute("name").value());
    m.site_bodyid.push_back(body);
    m.site_pos.insert(m.site_pos.end(), pos.begin(), pos.end());
    m.site_quat.insert(m.site_quat.end(), {q.w, q.x, q.y, q.z});
  }

  // A range attribute with MuJoCo 2.2's limited rules: limited explicitly, or implied by the range under
  // autolimits; returns whether limited and fills range (checked lower < upper when limited).
  bool limited_range(const mjcf_element& e, const char* range_attr, const char* limited_attr, double* range) const {
    const bool has_range = e.has(range_attr);
    const std::optional<bool> limited = e.boolean(limited_attr);
    if (has_range && !limited && !autolimits_) {
      e.fail(std::string("has ") + range_attr + " but not " + limited_attr + ": set " + limited_attr +
             ", or <compiler autolimits=\"true\"/>");
    }
    const auto r = e.numbers(range_attr, 2, 2, {0, 0});
    range[0] = r[0];
    range[1] = r[1];
    const bool is_limited = limited.value_or(has_range);
    if (is_limited && !(r[0] < r[1])) e.fail(std::string(range_attr) + ": got lower >= upper, need lower < upper");
    return is_limited;
  }

  void read_actuators(const pugi::xml_node& n) {
    model<double>& m = *out_;
    mjcf_element(src_, n, "actuator", nullptr).allow({});
    for (const pugi::xml_node& c : n.children()) {
      if (c.type() != pugi::node_element) continue;
      const std::string_view name = c.name();
      if (name != "motor" && name != "position")
        src_.fail(c, "is outside gmi's MJCF subset inside <actuator> (docs/physics.md)");
      const bool position = name == "position";
      const mjcf_element e(src_, c, "actuator", class_of(c, "main"));
      if (position)
        e.allow({"name", "class", "joint", "gear", "ctrlrange", "ctrllimited", "forcerange", "forcelimited", "kp"});
      else
        e.allow({"name", "class", "joint", "gear", "ctrlrange", "ctrllimited", "forcerange", "forcelimited"});
      if (c.first_child()) src_.fail(c, "must be empty");
      const auto joint = e.text("joint");
      if (!joint) e.fail("joint: got none, need the name of a hinge or slide joint");
      const int j = model<double>::find(m.joint_names, *joint);
      if (j < 0 || joint->empty())
        e.fail("joint: got \"" + *joint + "\", need the name of a joint defined in <worldbody>");
      if (m.jnt_type[j] != joint_hinge && m.jnt_type[j] != joint_slide)
        e.fail("joint: got \"" + *joint + "\" (a ball or free joint), need a hinge or slide joint");
      const auto gear = e.numbers("gear", 1, 6, {1});
      for (std::size_t i = 1; i < gear.size(); ++i) {
        if (gear[i] != 0)
          e.fail("gear: got a non-zero component after the first, need a joint transmission (one ratio)");
      }
      double ctrl[2], force[2];
      const bool ctrl_limited = limited_range(e, "ctrlrange", "ctrllimited", ctrl);
      const bool force_limited = limited_range(e, "forcerange", "forcelimited", force);
      m.actuator_names.push_back(c.attribute("name").value());
      m.actuator_joint.push_back(j);
      m.actuator_gear.push_back(gear[0]);
      m.actuator_ctrllimited.push_back(ctrl_limited);
      m.actuator_ctrlrange.insert(m.actuator_ctrlrange.end(), {ctrl[0], ctrl[1]});
      m.actuator_forcelimited.push_back(force_limited);
      m.actuator_forcerange.insert(m.actuator_forcerange.end(), {force[0], force[1]});
      if (position) {
        const double kp = e.number("kp", 1);
        if (kp < 0) e.fail("kp: got " + std::to_string(kp) + ", need >= 0");
        m.actuator_gain.push_back(kp);
        m.actuator_biastype.push_back(bias_affine);
        m.actuator_bias.insert(m.actuator_bias.end(), {0, -kp, 0});
      } else {
        m.actuator_gain.push_back(1);
        m.actuator_biastype.push_back(bias_none);
        m.actuator_bias.insert(m.actuator_bias.end(), {0, 0, 0});
      }
    }
  }
};

}  // namespace gmi::physics::detail

#endif  // __has_include(<pugixml.hpp>)
