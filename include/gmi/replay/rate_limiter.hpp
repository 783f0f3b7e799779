#pragma once
// Rate limiters (Reverb's): they decide when an insert or a sample may go ahead, from the table's counters.
// A call that may not go ahead waits, bounded by the table's timeout, and then ends in a rate_limit_error.

#include <cstddef>
#include <cstdint>
#include <limits>
#include <sstream>
#include <string>

#include <gmi/core/error.hpp>
#include <gmi/replay/detail/index.hpp>
#include <gmi/replay/spec.hpp>

namespace gmi::replay {

class rate_limiter {
 public:
  // Samples wait until the table holds at least n items; inserts never wait.
  static rate_limiter min_size(std::size_t n) {
    require(n >= 1, "rate_limiter::min_size", n, ">= 1");
    rate_limiter r;
    r.name_ = "min_size";
    r.min_size_ = n;
    return r;
  }

  // Keeps samples ~ samples_per_insert * inserts (after min_size_to_sample items), within +- error_buffer:
  // inserts wait when samples lag too far behind, samples wait when they run too far ahead.
  static rate_limiter sample_to_insert_ratio(double samples_per_insert, std::size_t min_size_to_sample,
                                             double error_buffer) {
    require(samples_per_insert > 0.0, "sample_to_insert_ratio.samples_per_insert", samples_per_insert, "> 0");
    require(min_size_to_sample >= 1, "sample_to_insert_ratio.min_size_to_sample", min_size_to_sample, ">= 1");
    const double least = samples_per_insert > 1.0 ? samples_per_insert : 1.0;
    require(error_buffer >= least, "sample_to_insert_ratio.error_buffer", error_buffer,
            ">= max(1, samples_per_insert) = " + std::to_string(least) + ", or no call could ever go ahead");
    const double offset = samples_per_insert * static_cast<double>(min_size_to_sample);
    rate_limiter r;
    r.name_ = "sample_to_insert_ratio";
    r.spi_ = samples_per_insert;
    r.min_size_ = min_size_to_sample;
    r.min_diff_ = offset - error_buffer;
    r.max_diff_ = offset + error_buffer;
    return r;
  }

  // A queue of at most `size` unsampled items: each item sampled once, in insertion order with sampler::fifo.
  static rate_limiter queue(std::size_t size) {
    require(size >= 1, "rate_limiter::queue size", size, ">= 1");
    rate_limiter r;
    r.name_ = "queue";
    r.spi_ = 1.0;
    r.min_size_ = 1;
    r.min_diff_ = 0.0;
    r.max_diff_ = static_cast<double>(size);
    return r;
  }

  [[nodiscard]] bool ratio() const noexcept { return spi_ > 0.0; }
  [[nodiscard]] const std::string& name() const noexcept { return name_; }

  [[nodiscard]] bool can_insert(std::size_t n, const detail::counters& c) const noexcept {
    if (!ratio()) return true;
    if (c.size() + n <= min_size_) return true;
    return static_cast<double>(c.inserts + n) * spi_ - static_cast<double>(c.samples) <= max_diff_;
  }
  [[nodiscard]] bool can_sample(std::size_t n, const detail::counters& c) const noexcept {
    if (c.size() < min_size_) return false;
    if (!ratio()) return true;
    return static_cast<double>(c.inserts) * spi_ - static_cast<double>(c.samples + n) >= min_diff_;
  }

  // Refuses a call that no state of the counters would ever let through.
  void check_insert(std::size_t n) const {
    if (!ratio() || n <= min_size_) return;
    require(static_cast<double>(n) * spi_ <= max_diff_ - min_diff_, name_ + " insert of items", n,
            "items * samples_per_insert <= " + std::to_string(max_diff_ - min_diff_) + " (2 * error_buffer)");
  }
  void check_sample(std::size_t n) const {
    if (!ratio()) return;
    require(static_cast<double>(n) <= max_diff_ - min_diff_, name_ + " sample of items", n,
            "<= " + std::to_string(max_diff_ - min_diff_) + " (2 * error_buffer)");
  }

  // The sentence a timed-out wait throws.
  [[nodiscard]] std::string stuck(std::string_view op, std::size_t n, double waited_s, const detail::counters& c) const {
    std::ostringstream out;
    out << "replay " << op << " of " << n << " items waited " << waited_s << " s and the " << name_
        << " rate limiter still says no: table size " << c.size() << ", inserts " << c.inserts << ", samples "
        << c.samples;
    if (op == "sample" && c.size() < min_size_) out << "; need size >= " << min_size_ << " (insert more)";
    else if (ratio() && op == "sample") out << "; need inserts * " << spi_ << " - samples >= " << min_diff_ << " after it (insert more)";
    else if (ratio()) out << "; need inserts * " << spi_ << " - samples <= " << max_diff_ << " after it (sample more)";
    return out.str();
  }

 private:
  rate_limiter() = default;
  std::string name_;
  std::size_t min_size_ = 1;
  double spi_ = 0.0;  // 0: min_size only
  double min_diff_ = -std::numeric_limits<double>::infinity();
  double max_diff_ = std::numeric_limits<double>::infinity();
};

}  // namespace gmi::replay
