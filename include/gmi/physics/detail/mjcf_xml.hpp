#pragma once
// The MJCF loader's XML layer: the source text with line numbers, one-line refusals ("file:line: ..."), checked
// reading of numbers, vectors, booleans and keywords, and MJCF default classes (attribute values an element
// inherits from its class and the classes above it).

// Only where pugixml is installed (see mjcf.hpp for the loader without it).
#if __has_include(<pugixml.hpp>)
#include <pugixml.hpp>

#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <gmi/core/error.hpp>

namespace gmi::physics::detail {

// The text being loaded, its name for messages and where each line starts.
class mjcf_source {
 public:
  mjcf_source(std::string text, std::string name) : text_(std::move(text)), name_(std::move(name)) {
    line_starts_.push_back(0);
    for (std::size_t i = 0; i < text_.size(); ++i) {
      if (text_[i] == '\n') line_starts_.push_back(i + 1);
    }
  }
  [[nodiscard]] const std::string& text() const { return text_; }
  [[nodiscard]] const std::string& name() const { return name_; }

  // 1-based line of a byte offset (pugixml's offset_debug); 0 when unknown.
  [[nodiscard]] int line_of(std::ptrdiff_t offset) const {
    if (offset < 0) return 0;
    std::size_t lo = 0, hi = line_starts_.size();
    while (hi - lo > 1) {
      const std::size_t mid = (lo + hi) / 2;
      (line_starts_[mid] <= static_cast<std::size_t>(offset) ? lo : hi) = mid;
    }
    return static_cast<int>(lo) + 1;
  }
  [[nodiscard]] std::string where(const pugi::xml_node& n) const {
    return name_ + ":" + std::to_string(line_of(n.offset_debug()));
  }
  // Throws the loader's one line: "<file>:<line>: <element> <message>".
  [[noreturn]] void fail(const pugi::xml_node& n, const std::string& message) const {
    throw gmi::config_error(where(n) + ": <" + std::string(n.name()) + "> " + message);
  }

 private:
  std::string text_, name_;
  std::vector<std::size_t> line_starts_;
};

// Whitespace-separated finite numbers; refuses text that is not one, infinities and NaNs.
inline std::vector<double> parse_numbers(const mjcf_source& src, const pugi::xml_node& n, const char* attr,
                                         std::string_view text) {
  std::vector<double> out;
  std::string token;
  std::size_t i = 0;
  while (i < text.size()) {
    while (i < text.size() && (text[i] == ' ' || text[i] == '\t' || text[i] == '\n' || text[i] == '\r')) ++i;
    if (i == text.size()) break;
    const std::size_t start = i;
    while (i < text.size() && !(text[i] == ' ' || text[i] == '\t' || text[i] == '\n' || text[i] == '\r')) ++i;
    token.assign(text.substr(start, i - start));
    char* end = nullptr;
    errno = 0;
    const double v = std::strtod(token.c_str(), &end);
    if (end != token.c_str() + token.size() || token.empty()) {
      src.fail(n, std::string("attribute ") + attr + ": got \"" + token + "\", need a number");
    }
    if (!std::isfinite(v) || (errno == ERANGE && std::fabs(v) > 1.0)) {
      src.fail(n, std::string("attribute ") + attr + ": got " + token + ", need a finite number");
    }
    out.push_back(v);
    if (out.size() > 64) src.fail(n, std::string("attribute ") + attr + ": got more than 64 numbers, need at most 6");
  }
  return out;
}

// Attribute values by element kind for one default class, with the line that set each (for messages).
struct default_class {
  std::string name;
  std::map<std::string, std::map<std::string, std::string>> values;  // element kind -> attribute -> value
};

// An element being read: its own attributes first, then its default class's values for its kind.
class mjcf_element {
 public:
  mjcf_element(const mjcf_source& src, pugi::xml_node node, std::string kind, const default_class* cls)
      : src_(src), node_(node), kind_(std::move(kind)), cls_(cls) {}

  [[nodiscard]] const pugi::xml_node& node() const { return node_; }
  [[noreturn]] void fail(const std::string& message) const { src_.fail(node_, message); }

  // Refuses any attribute outside the allowed list, naming it.
  void allow(std::initializer_list<const char*> names) const {
    for (const pugi::xml_attribute& a : node_.attributes()) {
      bool ok = false;
      for (const char* n : names) ok = ok || std::string_view(a.name()) == n;
      if (!ok) fail(std::string("attribute \"") + a.name() + "\" is outside gmi's MJCF subset (docs/physics.md)");
    }
  }

  [[nodiscard]] std::optional<std::string> text(const char* attr) const {
    if (const pugi::xml_attribute a = node_.attribute(attr)) return std::string(a.value());
    if (cls_) {
      const auto kind = cls_->values.find(kind_);
      if (kind != cls_->values.end()) {
        const auto v = kind->second.find(attr);
        if (v != kind->second.end()) return v->second;
      }
    }
    return std::nullopt;
  }
  [[nodiscard]] bool has(const char* attr) const { return text(attr).has_value(); }

  // Exactly count numbers (or between min_count and count), else the default.
  std::vector<double> numbers(const char* attr, int min_count, int count, std::vector<double> fallback) const {
    const auto t = text(attr);
    if (!t) return fallback;
    std::vector<double> v = parse_numbers(src_, node_, attr, *t);
    if (static_cast<int>(v.size()) < min_count || static_cast<int>(v.size()) > count) {
      fail(std::string("attribute ") + attr + ": got " + std::to_string(v.size()) + " numbers, need " +
           (min_count == count ? std::to_string(count) : std::to_string(min_count) + " to " + std::to_string(count)));
    }
    return v;
  }
  [[nodiscard]] double number(const char* attr, double fallback) const { return numbers(attr, 1, 1, {fallback})[0]; }
  int integer(const char* attr, int fallback, int lo, int hi) const {
    if (!has(attr)) return fallback;
    const double v = number(attr, fallback);
    if (!(v >= lo && v <= hi) || v != std::floor(v)) {
      fail(std::string("attribute ") + attr + ": got " + *text(attr) + ", need an integer in [" + std::to_string(lo) +
           ", " + std::to_string(hi) + "]");
    }
    return static_cast<int>(v);
  }
  // One of the given words; returns its index, or fallback when the attribute is absent.
  int keyword(const char* attr, std::initializer_list<const char*> words, int fallback) const {
    const auto t = text(attr);
    if (!t) return fallback;
    int i = 0;
    std::string allowed;
    for (const char* w : words) {
      if (*t == w) return i;
      allowed += (i ? ", " : "") + std::string(w);
      ++i;
    }
    fail(std::string("attribute ") + attr + ": got \"" + *t + "\", need one of " + allowed);
  }
  [[nodiscard]] std::optional<bool> boolean(const char* attr) const {
    if (!has(attr)) return std::nullopt;
    return keyword(attr, {"false", "true"}, 0) == 1;
  }

 private:
  const mjcf_source& src_;
  pugi::xml_node node_;
  std::string kind_;
  const default_class* cls_;
};

}  // namespace gmi::physics::detail

#endif  // __has_include(<pugixml.hpp>)
