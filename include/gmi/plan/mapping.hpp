#pragma once
// Resource-aware mapping: whether a GMI holds every role (colocated: env+agent(+trainer) in one GMI) or the roles
// are split over GMIs (serving GMIs feeding trainer GMIs). The paper found colocation ahead by ~2.5x (serving)
// and +287% (synchronous training) on its machine; gmi decides from two throughputs measured here, never from
// those numbers.

#include <nlohmann/json.hpp>

#include <cmath>
#include <cstdio>
#include <string>

#include <gmi/core/error.hpp>
#include <gmi/metrics/progress.hpp>

namespace gmi::plan {

enum class mapping_kind { colocated, split };

[[nodiscard]] inline const char* mapping_name(mapping_kind k) { return k == mapping_kind::split ? "split" : "colocated"; }

[[nodiscard]] inline mapping_kind mapping_from_name(const std::string& s) {
  if (s == "colocated") return mapping_kind::colocated;
  if (s == "split") return mapping_kind::split;
  throw gmi::config_error(gmi::got_need("mapping choice", s, "\"colocated\" or \"split\""));
}

// The decision with the measurements that made it.
struct mapping_decision {
  mapping_kind choice = mapping_kind::colocated;
  double colocated_throughput = 0;  // measured, same unit for both (e.g. env steps/s of one GPU)
  double split_throughput = 0;
  std::string reason;  // one line: the winner, both numbers and the ratio
};

// Picks the mapping with the higher measured throughput; a tie goes to colocated (one process per GMI, no
// experience channel to run). Throws config_error unless both are finite and > 0 (a failed or missing measurement
// is not a comparison).
[[nodiscard]] inline mapping_decision decide_mapping(double colocated_throughput, double split_throughput) {
  require(std::isfinite(colocated_throughput) && colocated_throughput > 0, "mapping colocated throughput",
          colocated_throughput, "a measured value > 0");
  require(std::isfinite(split_throughput) && split_throughput > 0, "mapping split throughput", split_throughput,
          "a measured value > 0");
  mapping_decision d;
  d.colocated_throughput = colocated_throughput;
  d.split_throughput = split_throughput;
  d.choice = split_throughput > colocated_throughput ? mapping_kind::split : mapping_kind::colocated;
  const double win = d.choice == mapping_kind::split ? split_throughput : colocated_throughput;
  const double lose = d.choice == mapping_kind::split ? colocated_throughput : split_throughput;
  char text[160];
  if (win == lose) {
    std::snprintf(text, sizeof text, "colocated: equal measured throughput (%s), colocated runs fewer processes",
                  metrics::si(win).c_str());
  } else {
    std::snprintf(text, sizeof text, "%s: measured %s vs %s for %s (%.2fx)", mapping_name(d.choice),
                  metrics::si(win).c_str(), metrics::si(lose).c_str(),
                  d.choice == mapping_kind::split ? "colocated" : "split", win / lose);
  }
  d.reason = text;
  return d;
}

template <class Json>
void to_json(Json& j, const mapping_decision& d) {
  j = Json{{"choice", mapping_name(d.choice)},
           {"colocated_throughput", d.colocated_throughput},
           {"split_throughput", d.split_throughput},
           {"reason", d.reason}};
}
template <class Json>
void from_json(const Json& j, mapping_decision& d) {
  d.choice = mapping_from_name(j.at("choice").template get<std::string>());
  j.at("colocated_throughput").get_to(d.colocated_throughput);
  j.at("split_throughput").get_to(d.split_throughput);
  j.at("reason").get_to(d.reason);
}

}  // namespace gmi::plan
