// Runs the device table for the GPU tests.
#include <gmi/replay/device_placement.cuh>
#include <gmi/replay/device_table.cuh>
#include <gmi/replay/group_sample.cuh>
#include <gmi/replay/multi_gpu_shards.cuh>

#include <chrono>
#include <exception>
#include <memory>
#include <string>
#include <thread>

#include "replay_gpu/runs.hpp"

namespace replay_gpu {

namespace {
void fill(gmi::replay::device_table& t, const std::vector<replay_test::rollout_data>& inserts) {
  auto w = t.make_writer(inserts.at(0).envs);
  for (const auto& d : inserts) {
    std::vector<gmi::cuda::device_buffer<float>> cols;
    gmi::cuda::device_buffer<float> prio(d.priorities.size());
    gmi::replay::rollout r;
    for (const auto& c : d.cols) {
      cols.emplace_back(c.size());
      GMI_CUDA_TRY(cudaMemcpy(cols.back().data(), c.data(), c.size() * 4, cudaMemcpyHostToDevice));
      r.columns.push_back(cols.back().data());
    }
    if (!d.priorities.empty()) {
      GMI_CUDA_TRY(cudaMemcpy(prio.data(), d.priorities.data(), d.priorities.size() * 4, cudaMemcpyHostToDevice));
      r.priorities = prio.data();
    }
    r.horizon = d.horizon;
    r.envs = d.envs;
    t.insert(w, r);
    GMI_CUDA_TRY(cudaStreamSynchronize(t.stream()));  // cols and prio are freed at scope exit
  }
}
run_result read(const gmi::replay::table_spec& spec, gmi::replay::device_table& t, const gmi::replay::device_batch& b,
                const draw& dr) {
  GMI_CUDA_TRY(cudaStreamSynchronize(t.stream()));
  run_result r;
  r.keys.resize(dr.n);
  r.probability.resize(dr.n);
  r.mask.resize(dr.n * dr.length);
  GMI_CUDA_TRY(cudaMemcpy(r.keys.data(), b.keys.data(), dr.n * 4, cudaMemcpyDeviceToHost));
  GMI_CUDA_TRY(cudaMemcpy(r.probability.data(), b.probability.data(), dr.n * 8, cudaMemcpyDeviceToHost));
  GMI_CUDA_TRY(cudaMemcpy(r.mask.data(), b.mask.data(), r.mask.size() * 4, cudaMemcpyDeviceToHost));
  for (std::size_t c = 0; c < spec.columns.size(); ++c) {
    r.columns.emplace_back(dr.n * dr.length * spec.columns[c].width);
    GMI_CUDA_TRY(cudaMemcpy(r.columns.back().data(), b.columns[c].data(), r.columns.back().size() * 4,
                            cudaMemcpyDeviceToHost));
  }
  r.size = t.size();
  return r;
}
}  // namespace

std::vector<run_result> run_device(const gmi::replay::table_spec& spec,
                                   const std::vector<replay_test::rollout_data>& inserts, const std::vector<draw>& draws,
                                   gmi::replay::snapshot* snap) {
  gmi::replay::device_table t(spec);
  fill(t, inserts);
  std::vector<run_result> out;
  gmi::replay::device_batch b;
  for (const auto& dr : draws) {
    if (dr.device_slots != SIZE_MAX) t.set_device_slots(dr.device_slots);
    t.sample(dr.smp, dr.n, dr.length, dr.seed, b);
    out.push_back(read(spec, t, b, dr));
  }
  if (snap) *snap = t.take_snapshot();
  return out;
}

placed place_two_shards(const gmi::replay::table_spec& spec, const std::vector<replay_test::rollout_data>& inserts,
                        std::size_t hot_draws, std::size_t cold_draws) {
  gmi::replay::device_table a(spec), c(spec);
  fill(a, inserts);
  fill(c, inserts);
  gmi::replay::placement_rule rule;
  rule.min_samples = 64;
  gmi::replay::device_shard_set set({&a, &c}, rule);
  placed out;
  out.before = {gmi::replay::memory_of(a), gmi::replay::memory_of(c)};
  gmi::replay::device_batch b;
  for (std::size_t k = 0; k < 2; ++k) {
    const std::size_t n = k == 0 ? hot_draws : cold_draws;
    if (n) set.sample(k, gmi::replay::sampler::uniform(), n, 1, 7 + k, b);
  }
  const auto plan = set.place();
  out.after = plan.where;
  out.share = plan.share;
  out.moves = set.moves();
  out.device_slots[0] = a.device_slots();
  out.device_slots[1] = c.device_slots();
  const draw dr{gmi::replay::sampler::prioritized(), 64, 4, 99};
  set.sample(0, dr.smp, dr.n, dr.length, dr.seed, b);
  out.hot = read(spec, a, b, dr);
  set.sample(1, dr.smp, dr.n, dr.length, dr.seed, b);
  out.cold = read(spec, c, b, dr);
  return out;
}

global_run global_device(const gmi::replay::table_spec& spec,
                         const std::vector<std::vector<replay_test::rollout_data>>& shards,
                         const gmi::replay::sampler& smp, std::size_t n, std::size_t length, std::uint64_t seed,
                         double beta) {
  std::vector<std::unique_ptr<gmi::replay::device_table>> tables;
  std::vector<gmi::replay::device_table*> ptrs;
  for (const auto& ins : shards) {
    tables.push_back(std::make_unique<gmi::replay::device_table>(spec));
    fill(*tables.back(), ins);
    ptrs.push_back(tables.back().get());
  }
  if (tables.size() > 1) tables[1]->set_device_slots(spec.capacity / 2);
  gmi::replay::placement_rule rule;
  rule.min_samples = 1;
  gmi::replay::device_shard_set set(ptrs, rule);
  gmi::replay::global_device_batch b;
  set.sample_global(smp, n, length, seed, beta, b);
  GMI_CUDA_TRY(cudaStreamSynchronize(set.stream()));
  global_run r;
  r.shard.resize(n);
  r.keys.resize(n);
  r.probability.resize(n);
  r.weight.resize(n);
  r.mask.resize(n * length);
  GMI_CUDA_TRY(cudaMemcpy(r.shard.data(), b.shard.data(), n * 4, cudaMemcpyDeviceToHost));
  GMI_CUDA_TRY(cudaMemcpy(r.keys.data(), b.batch.keys.data(), n * 4, cudaMemcpyDeviceToHost));
  GMI_CUDA_TRY(cudaMemcpy(r.probability.data(), b.batch.probability.data(), n * 8, cudaMemcpyDeviceToHost));
  GMI_CUDA_TRY(cudaMemcpy(r.weight.data(), b.weight.data(), n * 4, cudaMemcpyDeviceToHost));
  GMI_CUDA_TRY(cudaMemcpy(r.mask.data(), b.batch.mask.data(), r.mask.size() * 4, cudaMemcpyDeviceToHost));
  for (std::size_t c = 0; c < spec.columns.size(); ++c) {
    r.columns.emplace_back(n * length * spec.columns[c].width);
    GMI_CUDA_TRY(cudaMemcpy(r.columns.back().data(), b.batch.columns[c].data(), r.columns.back().size() * 4,
                            cudaMemcpyDeviceToHost));
  }
  r.totals = set.last_totals();
  r.share = set.place().share;
  return r;
}

int device_count() {
  int n = 0;
  return cudaGetDeviceCount(&n) == cudaSuccess ? n : 0;
}

namespace {
// One group's part (m draws, on the current device, its set's stream passed) appended to d, group-major: shard
// numbered from `first`.
void append_part(global_run& d, const gmi::replay::global_device_batch& part, std::size_t m, int first,
                 const gmi::replay::table_spec& spec, std::size_t length) {
  const auto append = [](auto& v, const auto* src, std::size_t count) {
    const std::size_t at = v.size();
    v.resize(at + count);
    GMI_CUDA_TRY(cudaMemcpy(v.data() + at, src, count * sizeof(*src), cudaMemcpyDeviceToHost));
  };
  d.columns.resize(spec.columns.size());
  const std::size_t at = d.shard.size();
  append(d.shard, part.shard.data(), m);
  for (std::size_t b = at; b < d.shard.size(); ++b)
    if (d.shard[b] >= 0) d.shard[b] += first;
  append(d.keys, part.batch.keys.data(), m);
  append(d.probability, part.batch.probability.data(), m);
  append(d.weight, part.weight.data(), m);
  append(d.mask, part.batch.mask.data(), m * length);
  for (std::size_t c = 0; c < spec.columns.size(); ++c)
    append(d.columns[c], part.batch.columns[c].data(), m * length * spec.columns[c].width);
}
}  // namespace

multi_gpu_run group_device(const gmi::replay::table_spec& spec,
                           const std::vector<std::vector<replay_test::rollout_data>>& shards,
                           const std::vector<int>& group_of, const gmi::replay::sampler& smp, std::size_t n,
                           std::size_t length, std::uint64_t seed, double beta) {
  GMI_CUDA_TRY(cudaSetDevice(0));
  std::vector<std::unique_ptr<gmi::replay::device_table>> tables;
  std::vector<std::vector<gmi::replay::device_table*>> groups;
  std::vector<int> first;  // each group's first shard, over all shards
  for (std::size_t k = 0; k < shards.size(); ++k) {
    tables.push_back(std::make_unique<gmi::replay::device_table>(spec));
    fill(*tables.back(), shards[k]);
    if (groups.size() <= std::size_t(group_of[k])) {
      groups.emplace_back();
      first.push_back(static_cast<int>(k));
    }
    groups[std::size_t(group_of[k])].push_back(tables.back().get());
  }
  gmi::replay::group_board board(static_cast<int>(groups.size()), std::chrono::seconds(30));
  std::vector<gmi::replay::global_device_batch> parts(groups.size());
  std::vector<gmi::replay::group_share> shares(groups.size());
  std::vector<std::vector<double>> totals(groups.size());
  std::vector<std::thread> threads;
  std::vector<std::string> errors(groups.size());
  for (std::size_t g = 0; g < groups.size(); ++g) {
    threads.emplace_back([&, g] {
      try {
        GMI_CUDA_TRY(cudaSetDevice(0));
        gmi::replay::device_shard_set set(groups[g], gmi::replay::placement_rule{});
        gmi::replay::device_group_participant me(board, static_cast<int>(g), set);
        shares[g] = me.sample(smp, n, length, seed, beta, parts[g]);
        GMI_CUDA_TRY(cudaStreamSynchronize(set.stream()));
        totals[g] = set.last_totals();
      } catch (const std::exception& e) {
        errors[g] = e.what();
      }
    });
  }
  for (auto& t : threads) t.join();
  for (const auto& e : errors)
    if (!e.empty()) throw gmi::error("group_device participant: " + e);
  multi_gpu_run r;
  r.plan = shares[0].plan;
  for (std::size_t g = 0; g < groups.size(); ++g) {
    if (shares[g].plan.shares != r.plan.shares) throw gmi::error("group_device: participants' plans differ");
    if (shares[g].draws > 0) append_part(r.draws, parts[g], shares[g].draws, first[g], spec, length);
    for (double t : totals[g]) r.draws.totals.push_back(t);
  }
  return r;
}

multi_gpu_run multi_gpu_device(const gmi::replay::table_spec& spec,
                               const std::vector<std::vector<replay_test::rollout_data>>& shards,
                               const std::vector<int>& gpu_of, const gmi::replay::sampler& smp, std::size_t n,
                               std::size_t length, std::uint64_t seed, double beta) {
  std::vector<std::unique_ptr<gmi::replay::device_table>> tables;
  std::vector<gmi::replay::gpu_shards> gpus;
  std::vector<int> first;  // each GPU's first shard, over all shards
  for (std::size_t k = 0; k < shards.size(); ++k) {
    GMI_CUDA_TRY(cudaSetDevice(gpu_of[k]));
    tables.push_back(std::make_unique<gmi::replay::device_table>(spec));
    fill(*tables.back(), shards[k]);
    if (gpus.empty() || gpus.back().device != gpu_of[k]) {
      gpus.push_back({gpu_of[k], {}});
      first.push_back(static_cast<int>(k));
    }
    gpus.back().tables.push_back(tables.back().get());
  }
  GMI_CUDA_TRY(cudaSetDevice(gpu_of[0]));
  gmi::replay::multi_gpu_shard_set set(gpus);
  std::vector<gmi::replay::global_device_batch> parts;
  multi_gpu_run r;
  r.plan = set.sample(smp, n, length, seed, beta, parts);
  global_run& d = r.draws;
  d.columns.resize(spec.columns.size());
  for (std::size_t g = 0; g < parts.size(); ++g) {
    const std::size_t m = parts[g].batch.batch;
    if (m == 0) continue;
    GMI_CUDA_TRY(cudaSetDevice(set.device(g)));
    GMI_CUDA_TRY(cudaStreamSynchronize(set.set(g).stream()));
    append_part(d, parts[g], m, first[g], spec, length);
    for (double t : set.set(g).last_totals()) d.totals.push_back(t);
  }
  for (std::size_t k = 0; k < tables.size(); ++k) {  // each table freed with its device current
    GMI_CUDA_TRY(cudaSetDevice(gpu_of[k]));
    tables[k].reset();
  }
  GMI_CUDA_TRY(cudaSetDevice(gpu_of[0]));
  return r;
}

replay_writers::check_result concurrent_device_writers(int writers, int inserts, std::size_t horizon, std::size_t envs) {
  auto spec = replay_writers::spec(std::size_t(writers * inserts) * horizon * envs);
  spec.device_capacity = spec.capacity / 2;
  gmi::replay::device_table t(spec);
  std::vector<std::thread> threads;
  for (int w = 0; w < writers; ++w) {
    threads.emplace_back([&, w] {
      GMI_CUDA_TRY(cudaSetDevice(0));
      auto wr = t.make_writer(envs);
      gmi::cuda::device_buffer<std::uint32_t> id(horizon * envs), copy(2 * horizon * envs);
      gmi::cuda::device_buffer<float> done(horizon * envs);
      for (int i = 0; i < inserts; ++i) {
        const replay_writers::rollout_rows d(w, i, horizon, envs, inserts);
        GMI_CUDA_TRY(cudaMemcpy(id.data(), d.id.data(), d.id.size() * 4, cudaMemcpyHostToDevice));
        GMI_CUDA_TRY(cudaMemcpy(copy.data(), d.copy.data(), d.copy.size() * 4, cudaMemcpyHostToDevice));
        GMI_CUDA_TRY(cudaMemcpy(done.data(), d.done.data(), d.done.size() * 4, cudaMemcpyHostToDevice));
        gmi::replay::rollout r;
        r.columns = {id.data(), copy.data(), done.data()};
        r.horizon = horizon;
        r.envs = envs;
        t.insert(wr, r);
        GMI_CUDA_TRY(cudaStreamSynchronize(t.stream()));  // the insert read this writer's buffers
      }
    });
  }
  for (auto& th : threads) th.join();
  return replay_writers::check(t.take_snapshot(), writers, inserts, horizon, envs);
}

}  // namespace replay_gpu
