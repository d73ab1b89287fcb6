// The wait for the rendezvous host's name; see dns_wait.hpp.

#include "launcher/base/exit_status.hpp"
#include "launcher/base/launch_error.hpp"
#include "launcher/console/notice.hpp"
#include "launcher/rendezvous/dns_wait.hpp"
#include "launcher/net/backoff.hpp"
#include "launcher/os/dns.hpp"
#include <chrono>
#include <cmath>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <thread>

namespace ddp::launch::rendezvous {
namespace {

constexpr double kFirstNotice = 1.0;  // s: a name that resolves within a second is silent
constexpr double kNoticeEvery = 5.0;  // s
// Lookups: 250 ms doubling to 2 s, each pause plus up to half of it at random (thousands of
// nodes waiting for one record do not ask the resolver in step); signals looked at every 100 ms.
constexpr auto kFirstLookupPause = std::chrono::milliseconds(250);
constexpr auto kMaxLookupPause = std::chrono::milliseconds(2000);
constexpr auto kSignalPoll = std::chrono::milliseconds(100);

}  // namespace

bool dns_notice_due(double elapsed_s, double last_s) {
  if (last_s < 0) return elapsed_s >= kFirstNotice;
  return elapsed_s - last_s >= kNoticeEvery;
}

int wait_for_dns(const std::string& host, double timeout_s, const std::function<int()>& poll_signals) {
  return wait_for_dns(std::vector<std::string>{host}, timeout_s, poll_signals);
}

int wait_for_dns(const std::vector<std::string>& hosts, double timeout_s, const std::function<int()>& poll_signals) {
  for (const auto& host : hosts)
    if (host.empty() || os::is_ip_address(host)) return 0;
  if (hosts.empty()) return 0;
  const std::string names = fmt::format("{}", fmt::join(hosts, ", "));
  using Clock = std::chrono::steady_clock;
  const auto start = Clock::now();
  double last_notice = -1;
  net::Backoff backoff(kFirstLookupPause, kMaxLookupPause);
  for (;;) {
    std::vector<std::string> why;
    for (const auto& host : hosts) {
      const std::string error = os::resolve_error(host);
      if (!error.empty()) {
        why.push_back(hosts.size() > 1 ? host + ": " + error : error);
        continue;
      }
      const double elapsed = std::chrono::duration<double>(Clock::now() - start).count();
      if (last_notice >= 0) console::launcher_notice(fmt::format("DNS of {} resolved after {:.0f} s", host, elapsed));
      return 0;
    }
    const double elapsed = std::chrono::duration<double>(Clock::now() - start).count();
    if (elapsed >= timeout_s)
      throw LaunchError(
          exit_code::kRendezvousFailed,
          fmt::format("the rendezvous host{0} {1} did not resolve within {2:.0f} s ({3}); check the name{0} "
                      "(--master-addr / --rdzv-endpoint, PET_MASTER_ADDR / PET_RDZV_ENDPOINT) and that "
                      "its service or pod exists, or raise --rdzv-conf join_timeout",
                      hosts.size() > 1 ? "s" : "", names, timeout_s, fmt::join(why, "; ")));
    if (dns_notice_due(elapsed, last_notice)) {
      console::launcher_notice(fmt::format("waiting for DNS of {} ({:.0f} s)", names, std::floor(elapsed)));
      last_notice = elapsed;
    }
    const auto next_lookup = Clock::now() + backoff.next();
    while (Clock::now() < next_lookup) {
      if (const int signal = poll_signals ? poll_signals() : 0) return signal;
      std::this_thread::sleep_for(std::min<Clock::duration>(kSignalPoll, next_lookup - Clock::now()));
    }
  }
}

}  // namespace ddp::launch::rendezvous
