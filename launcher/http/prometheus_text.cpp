#include "launcher/http/prometheus_text.hpp"

#include <cmath>
#include <cstdio>

namespace ddp::launch::http {

std::string escape_label_value(const std::string& value) {
  std::string out;
  out.reserve(value.size());
  for (char c : value) {
    if (c == '\\') out += "\\\\";
    else if (c == '"') out += "\\\"";
    else if (c == '\n') out += "\\n";
    else out += c;
  }
  return out;
}

namespace {

// HELP text escapes backslash and newline only.
std::string escape_help(const std::string& text) {
  std::string out;
  for (char c : text) {
    if (c == '\\') out += "\\\\";
    else if (c == '\n') out += "\\n";
    else out += c;
  }
  return out;
}

std::string label_text(const Labels& labels) {
  if (labels.empty()) return "";
  std::string out = "{";
  for (size_t i = 0; i < labels.size(); ++i) {
    if (i) out += ",";
    out += labels[i].first + "=\"" + escape_label_value(labels[i].second) + "\"";
  }
  return out + "}";
}

}  // namespace

std::string format_value(double value) {
  if (std::isnan(value)) return "NaN";
  if (std::isinf(value)) return value > 0 ? "+Inf" : "-Inf";
  char buf[64];
  if (value == std::floor(value) && std::fabs(value) < 1e15) std::snprintf(buf, sizeof buf, "%.0f", value);
  else std::snprintf(buf, sizeof buf, "%.9g", value);
  return buf;
}

void PrometheusText::family(const std::string& name, const std::string& type, const std::string& help) {
  out_ += "# HELP " + name + " " + escape_help(help) + "\n";
  out_ += "# TYPE " + name + " " + type + "\n";
}

void PrometheusText::sample(const std::string& name, const Labels& labels, double value) {
  out_ += name + label_text(labels) + " " + format_value(value) + "\n";
}

void PrometheusText::histogram(const std::string& name, const Labels& labels, const std::vector<double>& bounds,
                               const std::vector<unsigned long long>& cumulative, unsigned long long count,
                               double sum) {
  for (size_t i = 0; i < bounds.size() && i < cumulative.size(); ++i) {
    Labels l = labels;
    l.emplace_back("le", format_value(bounds[i]));
    sample(name + "_bucket", l, static_cast<double>(cumulative[i]));
  }
  Labels inf = labels;
  inf.emplace_back("le", "+Inf");
  sample(name + "_bucket", inf, static_cast<double>(count));
  sample(name + "_sum", labels, sum);
  sample(name + "_count", labels, static_cast<double>(count));
}

}  // namespace ddp::launch::http
