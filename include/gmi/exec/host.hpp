#pragma once
// exec::host: for_each over an index range on host threads. Each index is independent, so the result does not
// depend on the number of threads.

#include <algorithm>
#include <cstddef>

#include <gmi/exec/thread_pool.hpp>
#include <gmi/exec/policy.hpp>

namespace gmi::exec {

// Calls f(i) for every i in [0, n).
template <class F>
void for_each(const host& p, std::size_t n, F f) {
  if (n == 0) return;
  const auto& pool = p.pool ? p.pool : detail::shared_pool();
  const std::size_t workers = p.threads ? p.threads : pool->concurrency();
  constexpr std::size_t min_per_chunk = 256;  // below this, thread hand-off costs more than the work
  const std::size_t chunks = std::clamp<std::size_t>(n / min_per_chunk, 1, workers * 4);
  if (chunks == 1) {
    for (std::size_t i = 0; i < n; ++i) f(i);
    return;
  }
  const std::size_t per = (n + chunks - 1) / chunks;
  pool->run(chunks, [&](std::size_t c) {
    const std::size_t end = std::min(n, (c + 1) * per);
    for (std::size_t i = c * per; i < end; ++i) f(i);
  });
}

// Host work is complete when for_each returns.
inline void synchronize(const host&) {}

}  // namespace gmi::exec
