// The MJCF subset loader: what it reads (sizes, addresses, angles, defaults, inertia from geoms) and what it
// refuses, in one line naming the element or attribute and file:line.
#include <doctest/doctest.h>

#include <cmath>
#include <string>

#include <gmi/core/error.hpp>
#include <gmi/physics/mjcf.hpp>

namespace {
namespace ph = gmi::physics;

// The message load_mjcf_string throws for text, or "" when it loads.
std::string refusal(const std::string& text) {
  try {
    (void)ph::load_mjcf_string(text, "t.xml");
  } catch (const gmi::config_error& e) {
    return e.what();
  }
  return "";
}

std::string body(const std::string& inside) {
  return "<mujoco>\n<worldbody>\n<body pos=\"0 0 1\">\n" + inside + "\n</body>\n</worldbody>\n</mujoco>\n";
}
}  // namespace

TEST_SUITE("cpu") {
  TEST_CASE("physics.mjcf.reads_sizes_addresses_and_dof_tree") {
    const auto m = ph::load_mjcf_file(std::string(GMI_PHYSICS_MODELS) + "/free_toss.xml");
    CHECK(m.size.nbody == 3);
    CHECK(m.size.njnt == 2);
    CHECK(m.size.nq == 8);
    CHECK(m.size.nv == 7);
    CHECK(m.jnt_qposadr[1] == 7);
    CHECK(m.jnt_dofadr[1] == 6);
    CHECK(m.dof_parent[0] == -1);
    CHECK(m.dof_parent[6] == 5);
    CHECK(m.size.nM == 1 + 2 + 3 + 4 + 5 + 6 + 7);
    CHECK(m.body_root[2] == 1);
  }

  TEST_CASE("physics.mjcf.converts_degrees_and_applies_default_classes") {
    const auto m = ph::load_mjcf_string(R"(<mujoco>
      <compiler angle="degree"/>
      <default><joint damping="2"/><default class="a"><joint damping="3" armature="0.5"/></default></default>
      <worldbody><body childclass="a"><joint name="h" limited="true" range="-90 90"/>
        <joint name="k" class="main" type="slide" limited="true" range="-1 1"/>
        <geom type="box" size="1 1 1"/></body></worldbody></mujoco>)");
    CHECK(m.jnt_range[0] == doctest::Approx(-M_PI / 2));
    CHECK(m.jnt_range[3] == doctest::Approx(1.0));  // slide ranges are lengths, never converted
    CHECK(m.dof_damping[0] == doctest::Approx(3));
    CHECK(m.dof_armature[0] == doctest::Approx(0.5));
    CHECK(m.dof_damping[1] == doctest::Approx(2));
    CHECK(m.body_mass[1] == doctest::Approx(8000));  // 2 x 2 x 2 m box at 1000 kg/m^3
    CHECK(m.body_inertia[6] == doctest::Approx(8000 * (4 + 4) / 12.0));
  }

  TEST_CASE("physics.mjcf.refuses_elements_outside_the_subset_with_file_and_line") {
    CHECK(refusal(body("<geom size=\"0.1\"/>\n<camera/>")) ==
          "t.xml:5: <camera> is outside gmi's MJCF subset inside <body> (docs/physics.md)");
    CHECK(refusal("<mujoco>\n<sensor/>\n</mujoco>") ==
          "t.xml:2: <sensor> is outside gmi's MJCF subset (docs/physics.md)");
    CHECK(refusal(body("<geom size=\"0.1\" type=\"mesh\"/>")).find("t.xml:4: <geom> attribute type: got \"mesh\"") ==
          0);
    CHECK(refusal(body("<geom size=\"0.1\" margin=\"0.1\"/>")) ==
          "t.xml:4: <geom> attribute \"margin\" is outside gmi's MJCF subset (docs/physics.md)");
    CHECK(refusal("<mujoco><option integrator=\"RK4\"/></mujoco>").find("integrator: got \"RK4\", need one of Euler") !=
          std::string::npos);
  }

  TEST_CASE("physics.mjcf.refuses_bad_numbers_and_masses") {
    CHECK(refusal(body("<geom size=\"nan\"/>")) == "t.xml:4: <geom> attribute size: got nan, need a finite number");
    CHECK(refusal(body("<geom size=\"1e999\"/>")) == "t.xml:4: <geom> attribute size: got 1e999, need a finite number");
    CHECK(refusal(body("<geom size=\"0.1x\"/>")) == "t.xml:4: <geom> attribute size: got \"0.1x\", need a number");
    CHECK(refusal(body("<geom size=\"0.1\" mass=\"-1\"/>")).find("mass: got -1") != std::string::npos);
    CHECK(refusal(body("<joint/>")).find("t.xml:3: <body> body 1: mass got 0") == 0);
    CHECK(refusal(body("<geom size=\"0.1\" mass=\"0\"/>")).find("mass got 0") != std::string::npos);
    CHECK(refusal(body("<inertial pos=\"0 0 0\" mass=\"1\" diaginertia=\"1 1 3\"/>")).find("A + B >= C") !=
          std::string::npos);
    CHECK(refusal(body("<geom size=\"0.1 0.2\" type=\"box\"/>")).find("size: got 2 numbers, need 3") !=
          std::string::npos);
  }

  TEST_CASE("physics.mjcf.refuses_malformed_xml_and_inconsistent_models") {
    CHECK(refusal("<mujoco>\n<worldbody>\n<body>\n</worldbody>").find("t.xml:4: malformed XML") == 0);
    CHECK(refusal(body("<joint range=\"0 1\"/><geom size=\"0.1\"/>")).find("has range but not limited") !=
          std::string::npos);
    CHECK(refusal(body("<joint limited=\"true\" range=\"1 0\"/><geom size=\"0.1\"/>")).find("lower >= upper") !=
          std::string::npos);
    CHECK(refusal(body("<joint type=\"ball\" limited=\"true\" range=\"0 1\"/><geom size=\"0.1\"/>"))
              .find("need hinge or slide") != std::string::npos);
    CHECK(refusal(body("<geom size=\"0.1\"/><body><freejoint/><geom size=\"0.1\"/></body>")).find("free joint") !=
          std::string::npos);
    CHECK(refusal(body("<joint name=\"j\"/><geom size=\"0.1\"/>") + "").empty());
    CHECK(refusal("<mujoco><worldbody><body><joint name=\"j\" type=\"ball\"/><geom size=\"0.1\"/></body></worldbody>"
                  "<actuator><motor joint=\"j\"/></actuator></mujoco>")
              .find("need a hinge or slide joint") != std::string::npos);
    CHECK(refusal("<mujoco><actuator><motor joint=\"nope\"/></actuator></mujoco>").find("joint: got \"nope\"") !=
          std::string::npos);
    CHECK(refusal(body("<geom class=\"x\" size=\"0.1\"/>")).find("class: got \"x\"") != std::string::npos);
  }

  TEST_CASE("physics.mjcf.lists_collision_pairs_and_refuses_pairs_it_cannot_collide") {
    const auto m = ph::load_mjcf_file(std::string(GMI_PHYSICS_MODELS) + "/capsule_pile.xml");
    CHECK(m.size.npair == 5);  // floor-bar (both world) filtered; ball, rod against floor, bar and each other
    CHECK(m.size.ncon_max == 1 + 2 + 1 + 2 + 1);
    CHECK(m.size.nefc_max == 4 * m.size.ncon_max);
    for (int p = 0; p < m.size.npair; ++p) CHECK(m.geom_type[m.pair_geom1[p]] <= m.geom_type[m.pair_geom2[p]]);
    CHECK(refusal("<mujoco>\n<worldbody>\n<geom type=\"plane\" size=\"1 1 1\"/>\n<body>\n<freejoint/>\n"
                  "<geom type=\"cylinder\" size=\"0.1 0.1\"/>\n</body>\n</worldbody>\n</mujoco>")
              .find("t.xml:6: <geom> collision plane-cylinder with the geom at t.xml:3") == 0);
    CHECK(refusal(body("<geom size=\"0.1\" condim=\"4\"/>")).find("condim: got 4, need 1") != std::string::npos);
    // The same pair is fine once its contype/conaffinity exclude it.
    CHECK(refusal(
              "<mujoco><worldbody><geom type=\"plane\" size=\"1 1 1\"/><body><freejoint/>"
              "<geom type=\"cylinder\" size=\"0.1 0.1\" contype=\"0\" conaffinity=\"0\"/></body></worldbody></mujoco>")
              .empty());
  }
}
