#include "launcher/preflight/link_verdict.hpp"

#include <algorithm>
#include <cmath>
#include <fmt/format.h>

#include "launcher/preflight/verdict.hpp"  // median

namespace ddp::launch::preflight {
namespace {

constexpr double kRttSlackUs = 1000;  // a round trip must also exceed the median by this much

struct Ring {
  const std::vector<RingReport>& r;
  const std::vector<std::string>& labels;
  size_t k() const { return r.size(); }
  size_t succ(size_t i) const { return (i + 1) % k(); }
  size_t pred(size_t i) const { return (i + k() - 1) % k(); }
  bool ok(size_t i) const { return r[i].link.error.empty(); }
};

void judge_errors(const Ring& g, LinkVerdict& v) {
  for (size_t i = 0; i < g.k(); ++i) {
    if (g.ok(i)) continue;
    const size_t p = g.pred(i);
    if (!g.ok(p) && g.k() >= 3)  // neither reaches it nor does it reach its successor
      v.failed[i] = fmt::format("network: {} reaches no other node's probe and none reaches it: {}; {}", g.labels[i],
                                g.r[i].link.error, g.r[p].link.error);
    else
      v.warnings.push_back(
          fmt::format("network: the link {} -> {} failed: {}", g.labels[i], g.labels[g.succ(i)], g.r[i].link.error));
  }
}

void judge_bandwidth(const Ring& g, const cli::PreflightConf& c, LinkVerdict& v) {
  std::vector<double> all;
  for (size_t i = 0; i < g.k(); ++i)
    if (g.ok(i)) all.insert(all.end(), {g.r[i].link.out_mbps, g.r[i].link.in_mbps});
  const double m = median(all);
  const bool relative = g.k() >= 3 && m > 0;
  auto below = [&](double mbps, double fraction) {
    return (relative && mbps < fraction * m) || (c.net_min_mbps > 0 && mbps < c.net_min_mbps);
  };
  std::vector<bool> blamed(g.k(), false);
  for (size_t i = 0; i < g.k() && relative; ++i) {
    const size_t p = g.pred(i);
    if (!g.ok(i) || !g.ok(p)) continue;
    // Its sends: to its successor, and to its predecessor (the predecessor's download).
    const std::pair<double, double> sends{g.r[i].link.out_mbps, g.r[p].link.in_mbps};
    const std::pair<double, double> receives{g.r[i].link.in_mbps, g.r[p].link.out_mbps};
    for (const auto& [what, two] : {std::pair{"sends", sends}, std::pair{"receives", receives}}) {
      const bool out = std::string(what) == "sends";
      const std::string figures = fmt::format(
          "{} {} at {:.0f} MB/s {} {} and {:.0f} MB/s {} {}: {:.2f} and {:.2f} of the links' median {:.0f} MB/s",
          g.labels[i], what, two.first, out ? "to" : "from", g.labels[g.succ(i)], two.second, out ? "to" : "from",
          g.labels[p], two.first / m, two.second / m, m);
      if (below(two.first, c.net_fail) && below(two.second, c.net_fail)) {
        v.failed.emplace(i, fmt::format("network: {} (fail below {:g}{})", figures, c.net_fail,
                                        c.net_min_mbps > 0 ? fmt::format(" or {:g} MB/s", c.net_min_mbps) : ""));
        blamed[i] = true;
      } else if (below(two.first, c.net_warn) && below(two.second, c.net_warn)) {
        v.warnings.push_back(fmt::format("network: {} (warn below {:g})", figures, c.net_warn));
        blamed[i] = true;
      }
    }
  }
  // A slow direction that no slow end explains: name the link.
  for (size_t i = 0; i < g.k(); ++i) {
    if (!g.ok(i)) continue;
    const size_t j = g.succ(i);
    for (const auto& [from, to, mbps] :
         {std::tuple{i, j, g.r[i].link.out_mbps}, std::tuple{j, i, g.r[i].link.in_mbps}}) {
      if (blamed[from] || blamed[to] || !below(mbps, g.k() >= 3 ? c.net_warn : 0)) continue;
      v.warnings.push_back(fmt::format("network: the link {} -> {}: {:.0f} MB/s{} (which end is slow cannot be told)",
                                       g.labels[from], g.labels[to], mbps,
                                       relative ? fmt::format(", {:.2f} of the links' median {:.0f} MB/s", mbps / m, m)
                                                : fmt::format(", below {:g} MB/s", c.net_min_mbps)));
    }
  }
}

void judge_round_trips(const Ring& g, const cli::PreflightConf& c, LinkVerdict& v) {
  std::vector<double> all;
  for (size_t i = 0; i < g.k(); ++i)
    if (g.ok(i)) all.push_back(g.r[i].link.rtt_us);
  const double m = median(all);
  if (g.k() < 3 || m <= 0) return;
  for (size_t i = 0; i < g.k(); ++i) {
    const size_t p = g.pred(i);
    if (!g.ok(i) || !g.ok(p)) continue;
    const double a = g.r[i].link.rtt_us, b = g.r[p].link.rtt_us;
    auto above = [&](double times) {
      const double limit = std::max(times * m, m + kRttSlackUs);
      return a > limit && b > limit;
    };
    const std::string figures =
        fmt::format("{}: round trips of {:.2f} and {:.2f} ms on its links, the links' median {:.2f} ms", g.labels[i],
                    a / 1e3, b / 1e3, m / 1e3);
    if (above(c.rtt_fail))
      v.failed.emplace(i, fmt::format("network: {} (fail above {:g} x the median and 1 ms more)", figures, c.rtt_fail));
    else if (above(c.rtt_warn))
      v.warnings.push_back(
          fmt::format("network: {} (warn above {:g} x the median and 1 ms more)", figures, c.rtt_warn));
  }
}

void judge_clocks(const Ring& g, const cli::PreflightConf& c, LinkVerdict& v) {
  for (size_t i = 0; i < g.k(); ++i) {
    const ClockFigures& f = g.r[i].clock;
    if (!f.error.empty()) {
      v.warnings.push_back(fmt::format("clock: {}: {}", g.labels[i], f.error));
      continue;
    }
    const double off = std::fabs(f.offset_s);
    const std::string what =
        fmt::format("clock: {}: its clock is {:.3f} s {} the store's host's (measured over a {:.2f} ms round trip)",
                    g.labels[i], off, f.offset_s > 0 ? "behind" : "ahead of", f.rtt_ms);
    if (c.clock_fail_s > 0 && off > c.clock_fail_s)
      v.failed.emplace(i, fmt::format("{} (fail above {:g} s)", what, c.clock_fail_s));
    else if (off > c.clock_warn_s) v.warnings.push_back(fmt::format("{} (warn above {:g} s)", what, c.clock_warn_s));
  }
}

void judge_store(const Ring& g, long host, LinkVerdict& v) {
  if (host < 0) return;
  size_t others = 0, unreached = 0;
  std::string why;
  for (size_t i = 0; i < g.k(); ++i) {
    if (static_cast<long>(i) == host) continue;
    ++others;
    if (g.r[i].store_error.empty()) continue;
    ++unreached;
    why = g.r[i].store_error;
  }
  const auto h = static_cast<size_t>(host);
  if (others > 0 && unreached == others) {
    v.failed.emplace(h, fmt::format("network: no other node reaches the workers' store on {}: {}", g.labels[h], why));
    return;
  }
  for (size_t i = 0; i < g.k(); ++i)
    if (static_cast<long>(i) != host && !g.r[i].store_error.empty())
      v.failed.emplace(i, fmt::format("network: {} cannot reach the workers' store on {}: {}", g.labels[i], g.labels[h],
                                      g.r[i].store_error));
}

}  // namespace

RingReport better_of(const RingReport& a, const RingReport& b) {
  RingReport r;
  if (!a.link.error.empty() || !b.link.error.empty()) r.link = a.link.error.empty() ? a.link : b.link;
  else
    r.link = {std::max(a.link.out_mbps, b.link.out_mbps), std::max(a.link.in_mbps, b.link.in_mbps),
              std::min(a.link.rtt_us, b.link.rtt_us), ""};
  if (!a.clock.error.empty() || !b.clock.error.empty()) r.clock = a.clock.error.empty() ? a.clock : b.clock;
  else r.clock = a.clock.rtt_ms <= b.clock.rtt_ms ? a.clock : b.clock;
  r.store_error = a.store_error.empty() ? a.store_error : b.store_error;
  return r;
}

LinkVerdict judge_links(const std::vector<RingReport>& ring, const std::vector<std::string>& labels,
                        const cli::PreflightConf& conf, long store_host) {
  LinkVerdict v;
  if (ring.size() < 2) return v;
  const Ring g{ring, labels};
  judge_errors(g, v);
  judge_bandwidth(g, conf, v);
  judge_round_trips(g, conf, v);
  judge_clocks(g, conf, v);
  judge_store(g, store_host, v);
  return v;
}

}  // namespace ddp::launch::preflight
