#pragma once
// The comm setting that stays an environment variable, read once a process: GMI_COMM_INBOX_MEMORY, where the
// inboxes of the row exchange across GPUs live (row_exchange_across_gpus_options::memory). Every other comm setting
// is a field of its component's options. This one stays because the pipeline builds those options inside each
// GMI process from a config that has no field for it: a run sets it on the launcher, which passes it on to its
// GMI processes (runtime::inherited_gmi_variable), so every GMI of the run sees the launcher's value.

#include <optional>

#include <gmi/comm/row_exchange_across_gpus.hpp>
#include <gmi/core/env_var.hpp>

namespace gmi::comm {

namespace detail {
// GMI_COMM_INBOX_MEMORY as it is now: automatic, peer_to_peer or host; unset or empty is none; anything else is one
// config_error.
inline std::optional<inbox_memory> read_inbox_memory() {
  return env_var::choice<inbox_memory>("GMI_COMM_INBOX_MEMORY", {{"automatic", inbox_memory::automatic},
                                                             {"peer_to_peer", inbox_memory::peer_to_peer},
                                                             {"host", inbox_memory::host}});
}
}  // namespace detail

// GMI_COMM_INBOX_MEMORY as this process first read it, else `fallback`.
inline inbox_memory inbox_memory_from_env(inbox_memory fallback) {
  static const std::optional<inbox_memory> knob = detail::read_inbox_memory();
  return knob.value_or(fallback);
}

}  // namespace gmi::comm
