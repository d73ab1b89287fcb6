#include "launcher/rendezvous/rendezvous_rounds_class.hpp"

namespace ddp::launch::rendezvous::rounds {

// This node's own worker was round r's root cause: a strike (docs/preflight.md "Strikes"),
// sent with its later joins; the round's leader leaves it out at --strikes COUNT in the window.
void RendezvousRounds::record_strike(const Round& r, const AbortRecord& abort) {
  strike_ = false;
  const double now = unix_now();
  strike_times_.push_back(now);
  std::vector<double> ages;
  for (double t : strike_times_) ages.push_back(now - t);
  const int count = spec_.strikes.within_window(ages);
  board_.strikes = count;
  if (spec_.strikes.on()) {  // kept for a launcher started again on this node
    try {
      store_.job->set(strikes_key(node_id_),
                      format_strike_times(strike_times_within(strike_times_, now, spec_.strikes.window_s)));
    } catch (const std::exception& e) {  // the store is gone: the round's end will say so
      console::launcher_notice(
          fmt::format("warning: this node's strikes were not kept in the job's store: {}", e.what()));
    }
  }
  events_.write("strike", {{"round", r.number()},
                           {"kind", to_string(abort.failure)},
                           {"strikes", count},
                           {"limit", spec_.strikes.count},
                           {"window_s", spec_.strikes.window_s}});
  if (spec_.strikes.on())
    console::launcher_notice(fmt::format("strike {} of {} within {:g} s for this node ({}): {}", count,
                                         spec_.strikes.count, spec_.strikes.window_s, to_string(abort.failure),
                                         abort.reason));
}

// The strikes this node already has in the job's store: its launcher was started again (a pod
// restarted after it was struck out); they count as if this launcher had seen them.
void RendezvousRounds::load_strikes() {
  if (!spec_.strikes.on()) return;
  node_id_ = node_id(env_, os::host_name());
  try {
    if (const auto record = store_.job->try_get(strikes_key(node_id_)))
      strike_times_ = parse_strike_times(*record, unix_now(), spec_.strikes.window_s);
  } catch (const std::exception& e) {  // the join that follows meets the same store and says why
    console::launcher_notice(fmt::format("warning: this node's earlier strikes could not be read: {}", e.what()));
  }
  if (strike_times_.empty()) return;
  board_.strikes = static_cast<int>(strike_times_.size());
  console::launcher_notice(
      fmt::format("this node ({} {}) comes with {} strike{} within {:g} s kept in the job's store (--strikes {})",
                  cli::lookup(env_, kNodeIdEnvVar) ? kNodeIdEnvVar : "host", node_id_, strike_times_.size(),
                  strike_times_.size() == 1 ? "" : "s", spec_.strikes.window_s, spec_.strikes.describe()));
}

// --preflight: the other nodes measure their links to this node's probe (link_round.hpp).
void RendezvousRounds::start_probe() {
  try {
    probe_ = std::make_unique<preflight::ProbeServer>(os::store_listen_host(advertised_addr()));
  } catch (const std::runtime_error& e) {
    console::launcher_notice(fmt::format("preflight: warn network: {}; this node's links are not checked", e.what()));
  }
}

// This node's link to its successor in the ring and its clock against the store's host, asked
// by the round's leader, who judges every node's (link_round.hpp); the figures go to the event log.
preflight::RingReport RendezvousRounds::measure_links(const LinkPeer& peer) {
  preflight::RingReport r{preflight::measure_link(peer.addr, peer.port, peer.ms),
                          preflight::measure_clock(peer.clock_addr, peer.clock_port),
                          peer.store_port > 0 ? preflight::reach(peer.store_addr, peer.store_port) : ""};
  const std::string to = format_host_port(peer.addr, peer.port);
  events_.write("preflight",
                {{"check", "network"},
                 {"level", "measured"},
                 {"figure", r.link.error.empty()
                                ? fmt::format("to {}: sends {:.0f} MB/s, receives {:.0f} MB/s, round trip {:.3f} ms",
                                              to, r.link.out_mbps, r.link.in_mbps, r.link.rtt_us / 1e3)
                                : fmt::format("to {}: {}", to, r.link.error)},
                 {"threshold", "judged by the round's leader against every link (docs/preflight.md)"}});
  if (peer.store_port > 0)
    events_.write("preflight",
                  {{"check", "workers' store"},
                   {"level", "measured"},
                   {"figure", r.store_error.empty() ? "reached " + format_host_port(peer.store_addr, peer.store_port)
                                                    : r.store_error},
                   {"threshold", "judged by the round's leader"}});
  events_.write("preflight", {{"check", "clock"},
                              {"level", "measured"},
                              {"figure", r.clock.error.empty()
                                             ? fmt::format("offset to the store's host {:+.4f} s", r.clock.offset_s)
                                             : r.clock.error},
                              {"threshold", "judged by the round's leader"}});
  return r;
}

}  // namespace ddp::launch::rendezvous::rounds
