// The Prometheus text exposition format (version 0.0.4), written: one family at a time (its
// HELP and TYPE lines, then its samples), label values and HELP text escaped, numbers as
// Prometheus parses them (NaN, +Inf, -Inf). Histograms from cumulative bucket counts. Pure.
#pragma once

#include <string>
#include <utility>
#include <vector>

namespace ddp::launch::http {

inline constexpr const char* kPrometheusContentType = "text/plain; version=0.0.4; charset=utf-8";

using Labels = std::vector<std::pair<std::string, std::string>>;

class PrometheusText {
 public:
  // type: "gauge", "counter", "histogram" or "untyped". A counter's name ends in _total.
  void family(const std::string& name, const std::string& type, const std::string& help);
  // One sample of the current family (name: the family's, or with a suffix for histograms).
  void sample(const std::string& name, const Labels& labels, double value);
  // A histogram sample set: bounds ascending (le), counts[i] observations <= bounds[i]
  // (cumulative), then +Inf = count; sum of the observed values.
  void histogram(const std::string& name, const Labels& labels, const std::vector<double>& bounds,
                 const std::vector<unsigned long long>& cumulative, unsigned long long count, double sum);
  const std::string& str() const { return out_; }

 private:
  std::string out_;
};

// "\\" -> "\\\\", "\"" -> "\\\"", newline -> "\\n" (a label value).
std::string escape_label_value(const std::string& value);
// A number in the text format: integers without a fraction, NaN, +Inf, -Inf.
std::string format_value(double value);

}  // namespace ddp::launch::http
