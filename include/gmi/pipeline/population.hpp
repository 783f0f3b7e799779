#pragma once
// Population mode: independent trainings, one per GMI, each with its own seed or hyperparameters, reported side by
// side. The members come from the command line (member r: seed + r, the run's PPO settings) or from a sweep file:
// a JSON array with one object per GMI, each naming what differs from the run's settings, e.g.
//   [{"seed": 1}, {"seed": 2, "lr": 1e-3}, {"seed": 3, "clip": 0.1, "lr_schedule": "constant"}]
// Keys: seed, lr, clip, gamma, lambda, entropy_coef, bounds_loss_coef, value_coef, max_grad_norm, epochs, minibatch, horizon,
// kl_target, lr_schedule ("constant", "adaptive", "linear" or "kl_capped"), lr_decay_env_steps (the linear schedule's span in this
// member's env steps; default: --max-env-steps). Anything else is refused with one line naming the entry.

#include <cmath>
#include <cstdint>
#include <fstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include <gmi/core/error.hpp>
#include <gmi/rl/ppo_config.hpp>

namespace gmi {

struct population_member {
  std::uint64_t seed = 1;
  rl::ppo_config ppo;
  nlohmann::json overrides = nlohmann::json::object();  // what differs from the run's settings (for the report)
};

inline constexpr const char* population_keys =
    "seed, lr, clip, gamma, lambda, entropy_coef, bounds_loss_coef, value_coef, max_grad_norm, epochs, minibatch, horizon, kl_target, "
    "lr_schedule, lr_decay_env_steps";

namespace detail {
// A sweep value as a message shows it (got_need quotes it once).
inline std::string shown(const nlohmann::json& v) { return v.is_string() ? v.get<std::string>() : v.dump(); }
inline double sweep_number(const nlohmann::json& v, const std::string& where) {
  if (!v.is_number()) throw gmi::config_error(gmi::got_need(where, shown(v), "a number"));
  return v.get<double>();
}
inline int sweep_int(const nlohmann::json& v, const std::string& where) {
  const double d = sweep_number(v, where);
  if (d != std::floor(d) || std::abs(d) > 1e9) throw gmi::config_error(gmi::got_need(where, shown(v), "a whole number"));
  return static_cast<int>(d);
}
}  // namespace detail

// `members` members from a sweep (a JSON array, one object per member; null: seeds base_seed + r and the base
// settings). Throws config_error with one line for a sweep of the wrong size, an unknown key, a value of the wrong
// type, or settings that fail ppo_config::validate (the entry is named).
inline std::vector<population_member> population_from(const nlohmann::json& sweep, const rl::ppo_config& base,
                                                      std::uint64_t base_seed, int members) {
  gmi::require(members >= 1, "population members", members, ">= 1");
  std::vector<population_member> out;
  if (sweep.is_null()) {
    for (int r = 0; r < members; ++r) {
      population_member m;
      m.seed = base_seed + static_cast<std::uint64_t>(r);
      m.ppo = base;
      m.overrides = {{"seed", m.seed}};
      out.push_back(std::move(m));
    }
    return out;
  }
  if (!sweep.is_array()) throw gmi::config_error(gmi::got_need("sweep file", "a JSON " + std::string(sweep.type_name()), "a JSON array of objects, one per GMI"));
  if (static_cast<int>(sweep.size()) != members) {
    throw gmi::config_error(gmi::got_need("sweep entries", sweep.size(),
                                          std::to_string(members) + " (one per GMI: GPUs x --gmis-per-gpu)"));
  }
  for (int r = 0; r < members; ++r) {
    const nlohmann::json& e = sweep[static_cast<std::size_t>(r)];
    const std::string at = "sweep entry " + std::to_string(r);
    if (!e.is_object()) throw gmi::config_error(gmi::got_need(at, detail::shown(e), "an object such as {\"seed\": 3, \"lr\": 1e-3}"));
    population_member m;
    m.seed = base_seed + static_cast<std::uint64_t>(r);
    m.ppo = base;
    for (const auto& [key, v] : e.items()) {
      const std::string where = at + " \"" + key + "\"";
      if (key == "seed") {
        const int s = detail::sweep_int(v, where);
        if (s < 0) throw gmi::config_error(gmi::got_need(where, s, ">= 0"));
        m.seed = static_cast<std::uint64_t>(s);
      } else if (key == "lr") m.ppo.learning_rate = static_cast<float>(detail::sweep_number(v, where));
      else if (key == "clip") m.ppo.clip = static_cast<float>(detail::sweep_number(v, where));
      else if (key == "gamma") m.ppo.gamma = static_cast<float>(detail::sweep_number(v, where));
      else if (key == "lambda") m.ppo.lambda = static_cast<float>(detail::sweep_number(v, where));
      else if (key == "entropy_coef") m.ppo.entropy_coef = static_cast<float>(detail::sweep_number(v, where));
      else if (key == "bounds_loss_coef") m.ppo.bounds_loss_coef = static_cast<float>(detail::sweep_number(v, where));
      else if (key == "value_coef") m.ppo.value_coef = static_cast<float>(detail::sweep_number(v, where));
      else if (key == "max_grad_norm") m.ppo.max_grad_norm = static_cast<float>(detail::sweep_number(v, where));
      else if (key == "kl_target") m.ppo.kl_target = static_cast<float>(detail::sweep_number(v, where));
      else if (key == "epochs") m.ppo.epochs = detail::sweep_int(v, where);
      else if (key == "minibatch") m.ppo.minibatch = detail::sweep_int(v, where);
      else if (key == "horizon") m.ppo.horizon = detail::sweep_int(v, where);
      else if (key == "lr_decay_env_steps") m.ppo.lr_decay_env_steps = detail::sweep_number(v, where);
      else if (key == "lr_schedule") {
        const auto schedule = v.is_string() ? rl::parse_lr_schedule(v.get<std::string>()) : std::nullopt;
        if (!schedule) throw gmi::config_error(gmi::got_need(where, detail::shown(v), "\"constant\", \"adaptive\", \"linear\" or \"kl_capped\""));
        m.ppo.schedule = *schedule;
      } else {
        throw gmi::config_error(gmi::got_need(at + " key", key, population_keys));
      }
    }
    try {
      m.ppo.validate();
    } catch (const gmi::config_error& err) {
      throw gmi::config_error(at + ": " + err.what());
    }
    m.overrides = e;
    if (!m.overrides.contains("seed")) m.overrides["seed"] = m.seed;
    out.push_back(std::move(m));
  }
  return out;
}

// The sweep file's JSON (config_error naming the file when it can not be read or parsed).
inline nlohmann::json read_sweep_file(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw gmi::config_error(gmi::got_need("--sweep", path, "a readable JSON file"));
  try {
    return nlohmann::json::parse(in);
  } catch (const nlohmann::json::parse_error& e) {
    throw gmi::config_error(gmi::got_need("--sweep " + path, std::string("invalid JSON (") + e.what() + ")",
                                          "a JSON array of objects, one per GMI"));
  }
}

}  // namespace gmi
