#pragma once
// ppo_trainer's training state as tensors: save_state / load_state (the whole state, for .gmi checkpoints) and
// policy_tensors (the policy's weights, for safetensors). Included by ppo.hpp.

#include <gmi/rl/ppo.hpp>

namespace gmi::rl {

// The whole training state: weights, Adam, normalizers, every environment's state and RNG counter, the policy's
template <gmi::env E, class Net, gmi::exec::policy P>
inline io::checkpoint ppo_trainer<E, Net, P>::save_state() {
  synchronize();
  io::checkpoint ck;
  ck.meta = {{"format", "gmi ppo trainer"},  {"task", task_name()},       {"obs_dim", obs_dim},
             {"act_dim", act_dim},            {"param_count", param_count}, {"num_envs", n_},
             {"seed", seed_},                 {"iteration", iteration_},    {"horizon", config_.horizon},
             {"backend", P::on_device ? "cuda" : "host"}};
  ck.add("policy.params", to_host(params_.data(), params_.size()));
  const nn::adam_state a = adam_.export_state();
  ck.add("adam.m", a.m);
  ck.add("adam.v", a.v);
  ck.add_scalar<std::int64_t>("adam.step", a.step);
  ck.add_scalar<float>("adam.lr", a.lr);
  ck.add("obs_norm.stats", to_host(obs_norm_.stats().data(), obs_norm_.stats().size()));
  ck.add("value_norm.stats", to_host(value_norm_.stats().data(), value_norm_.stats().size()));
  if (config_.reward_scaling) {  // the std of R and every environment's R
    ck.add("reward_norm.stats", to_host(reward_norm_.stats().data(), reward_norm_.stats().size()));
    ck.add("reward_norm.running", to_host(reward_running_.data(), reward_running_.size()));
  }
  envs_.visit_state([&](const char* name, auto span) { ck.add(name, to_host(span.data(), span.size())); });
  ck.add("policy.rng_blocks", to_host(policy_rng_.data(), policy_rng_.size()));
  ck.add("policy.current_obs", to_host(current_obs_.data(), current_obs_.size()));
  ck.add_scalar<std::uint64_t>("trainer.iteration", iteration_);
  return ck;
}

template <gmi::env E, class Net, gmi::exec::policy P>
inline void ppo_trainer<E, Net, P>::load_state(const io::checkpoint& ck) {
  auto need = [&](const char* key, auto value, const char* why) {
    if (!ck.meta.contains(key) || ck.meta[key] != nlohmann::json(value)) {
      throw gmi::config_error(std::string("checkpoint ") + key + ": got " +
                              (ck.meta.contains(key) ? ck.meta[key].dump() : std::string("nothing")) + ", need " +
                              std::to_string(value) + " (" + why + ")");
    }
  };
  need("obs_dim", obs_dim, "this task's observation size");
  need("act_dim", act_dim, "this task's action size");
  need("param_count", param_count, "the network this program was built with");
  need("num_envs", n_, "this run's number of environments");
  synchronize();
  from_host(params_.data(), ck.get<float>("policy.params", params_.size(), "the network this program was built with"));
  adam_.import_state({ck.get<float>("adam.m", params_.size()), ck.get<float>("adam.v", params_.size()),
                      ck.get_scalar<std::int64_t>("adam.step"), ck.get_scalar<float>("adam.lr")});
  assign_stats(obs_norm_, ck.get<double>("obs_norm.stats", obs_norm_.stats().size()));
  assign_stats(value_norm_, ck.get<double>("value_norm.stats", value_norm_.stats().size()));
  if (config_.reward_scaling) {
    assign_stats(reward_norm_, ck.get<double>("reward_norm.stats", reward_norm_.stats().size(), "a run with reward scaling"));
    from_host(reward_running_.data(), ck.get<float>("reward_norm.running", n_, "a run with reward scaling"));
  }
  envs_.visit_state([&](const char* name, auto span) {
    using T = std::remove_cv_t<typename decltype(span)::element_type>;
    from_host(span.data(), ck.get<T>(name, span.size(), "this run's number of environments"));
  });
  from_host(policy_rng_.data(), ck.get<std::uint64_t>("policy.rng_blocks", policy_rng_.size()));
  from_host(current_obs_.data(), ck.get<float>("policy.current_obs", current_obs_.size()));
  iteration_ = ck.get_scalar<std::uint64_t>("trainer.iteration");
  if constexpr (P::on_device) device_->set_iteration(*this, iteration_);
  synchronize();
}

// The policy's weights as named tensors (torch's [out, in] layout), from a flat parameter vector of Net.
template <class Net>
io::checkpoint policy_tensors_of(const std::vector<float>& p, const std::string& task) {
  using layers = typename Net::net::layers;
  io::checkpoint ck;
  ck.meta = {{"format", "pt"},
             {"task", task},
             {"layout", Net::discrete ? "weight [out, in] row-major; heads = logit rows then value"
                                      : "weight [out, in] row-major; heads = mean rows then value"}};
  for (int l = 0; l < layers::count; ++l) {
    const int in = layers::width(l), out = layers::width(l + 1);
    const std::string base = l + 1 == layers::count ? std::string("heads") : "body." + std::to_string(l);
    ck.add(base + ".weight", std::vector<float>(p.begin() + layers::weight_offset(l), p.begin() + layers::weight_offset(l) + in * out),
           {static_cast<std::uint64_t>(out), static_cast<std::uint64_t>(in)});
    ck.add(base + ".bias", std::vector<float>(p.begin() + layers::bias_offset(l), p.begin() + layers::bias_offset(l) + out));
  }
  if constexpr (!Net::discrete)
    ck.add("log_std", std::vector<float>(p.begin() + Net::log_std_offset, p.begin() + Net::log_std_offset + Net::act_dim));
  return ck;
}

template <gmi::env E, class Net, gmi::exec::policy P>
inline io::checkpoint ppo_trainer<E, Net, P>::policy_tensors() {
  return policy_tensors_of<Net>(to_host(params_.data(), params_.size()), task_name());
}
}  // namespace gmi::rl
