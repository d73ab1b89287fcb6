// The pre-flight link checks: the ring's verdict (pure), the probe on loopback (real sockets),
// and the round's protocol on an in-process MemoryStore (one thread per launcher, measurements
// given): the leader leaves out the node its ring names slow.
#include <catch2/catch.hpp>

#include <functional>
#include <future>
#include <map>
#include <mutex>

#include "launcher/base/exit_status.hpp"
#include "launcher/base/launch_error.hpp"
#include "launcher/rendezvous/rendezvous.hpp"
#include "tests/support/rendezvous_joins.hpp"
#include "launcher/preflight/link_probe.hpp"
#include "launcher/preflight/link_verdict.hpp"
#include "launcher/store/memory_store.hpp"

using namespace ddp::launch;
using preflight::RingReport;
using testing::policy;
using testing::seated;

namespace {

RingReport ring_report(double out, double in, double rtt_us = 50, double offset_s = 0) {
  RingReport r;
  r.link = {out, in, rtt_us, ""};
  r.clock = {offset_s, 0.1, ""};
  return r;
}

const std::vector<std::string> kLabels{"node 0", "node 1", "node 2", "node 3"};

}  // namespace

TEST_CASE("link verdict: the node both of whose sends are slow fails, naming both its links") {
  // Node 2 sends slowly: its own link (2 -> 3, out) and its predecessor's download (2 -> 1, in).
  const std::vector<RingReport> ring{ring_report(1000, 1000), ring_report(1000, 12), ring_report(10, 1000),
                                     ring_report(1000, 1000)};
  const auto v = preflight::judge_links(ring, kLabels, cli::PreflightConf{});
  REQUIRE(v.failed.size() == 1);
  CHECK_THAT(v.failed.at(2), Catch::Contains("network: node 2 sends at 10 MB/s to node 3 and 12 MB/s to node 1") &&
                                 Catch::Contains("of the links' median 1000 MB/s (fail below 0.25)"));
  CHECK(v.warnings.empty());
}

TEST_CASE("link verdict: one slow direction names the link and both ends; two nodes only warn") {
  std::vector<RingReport> ring{ring_report(1000, 1000), ring_report(1000, 1000), ring_report(30, 1000),
                               ring_report(1000, 1000)};
  auto v = preflight::judge_links(ring, kLabels, cli::PreflightConf{});
  CHECK(v.failed.empty());
  REQUIRE(v.warnings.size() == 1);
  CHECK_THAT(v.warnings[0], Catch::Contains("network: the link node 2 -> node 3: 30 MB/s, 0.03 of the links' median") &&
                                Catch::Contains("which end is slow cannot be told"));
  // Two nodes: nothing relative to judge by; an absolute floor warns, naming the link.
  cli::PreflightConf floor;
  floor.net_min_mbps = 100;
  v = preflight::judge_links({ring_report(50, 1000), ring_report(1000, 1000)}, {"a", "b"}, floor);
  CHECK(v.failed.empty());
  REQUIRE(v.warnings.size() == 1);
  CHECK_THAT(v.warnings[0], Catch::Contains("the link a -> b: 50 MB/s, below 100 MB/s"));
}

TEST_CASE("link verdict: round trips, unreachable probes and clocks") {
  // Node 1's two links (0 -> 1, 1 -> 2) take 20 ms: it fails. Node 5 reaches nobody and nobody
  // reaches it: it fails; 4 -> 5 alone is a link, named. Node 7's clock is 2.5 s ahead.
  std::vector<RingReport> ring(8, ring_report(1000, 1000));
  std::vector<std::string> labels;
  for (int i = 0; i < 8; ++i) labels.push_back("node " + std::to_string(i));
  ring[0].link.rtt_us = ring[1].link.rtt_us = 20000;
  ring[4].link.error = "cannot connect to h5:1: Connection refused";
  ring[5].link.error = "cannot connect to h6:1: No route to host";
  ring[7].clock.offset_s = -2.5;
  const auto v = preflight::judge_links(ring, labels, cli::PreflightConf{});
  CHECK_THAT(v.failed.at(1), Catch::Contains("network: node 1: round trips of 20.00 and 20.00 ms"));
  CHECK_THAT(v.failed.at(5), Catch::Contains("node 5 reaches no other node's probe and none reaches it"));
  CHECK(v.failed.size() == 2);
  bool link4 = false, clock7 = false;
  for (const auto& w : v.warnings) {
    link4 |= w.find("the link node 4 -> node 5 failed: cannot connect to h5:1") != std::string::npos;
    clock7 |= w.find("clock: node 7: its clock is 2.500 s ahead of the store's host's") != std::string::npos;
  }
  CHECK(link4);
  CHECK(clock7);
  cli::PreflightConf strict;
  strict.clock_fail_s = 1;
  CHECK_THAT(preflight::judge_links(ring, labels, strict).failed.at(7), Catch::Contains("(fail above 1 s)"));
}

TEST_CASE("link verdict: the better of two measurements, figure by figure") {
  RingReport starved = ring_report(5, 900, 3000), fine = ring_report(800, 700, 60);
  starved.clock = {0.2, 9.0, ""};
  fine.clock = {0.001, 0.2, ""};
  fine.store_error = "cannot connect to h0:4000: Connection refused";
  const RingReport b = preflight::better_of(starved, fine);
  CHECK(b.link.out_mbps == 800);
  CHECK(b.link.in_mbps == 900);
  CHECK(b.link.rtt_us == 60);
  CHECK(b.clock.offset_s == 0.001);  // the exchange with the shorter round trip
  CHECK(b.store_error.empty());      // reached once: reachable
  RingReport failed = fine;
  failed.link.error = failed.clock.error = "cannot connect to h1:7000: Connection refused";
  CHECK(preflight::better_of(failed, starved).link.out_mbps == 5);
  CHECK(preflight::better_of(starved, failed).clock.offset_s == 0.2);
  CHECK(preflight::better_of(failed, failed).link.error == failed.link.error);
}

TEST_CASE("link verdict: the workers' store's host, unreached by one node or by all") {
  std::vector<RingReport> ring(4, ring_report(1000, 1000));
  ring[2].store_error = "cannot connect to h0:4000: No route to host";
  auto v = preflight::judge_links(ring, kLabels, cli::PreflightConf{}, 0);
  REQUIRE(v.failed.size() == 1);
  CHECK_THAT(v.failed.at(2), Catch::Contains("network: node 2 cannot reach the workers' store on node 0: cannot "
                                             "connect to h0:4000"));
  ring[1].store_error = ring[3].store_error = ring[2].store_error;
  v = preflight::judge_links(ring, kLabels, cli::PreflightConf{}, 0);
  REQUIRE(v.failed.size() == 1);
  CHECK_THAT(v.failed.at(0), Catch::Contains("network: no other node reaches the workers' store on node 0"));
  CHECK(preflight::judge_links(ring, kLabels, cli::PreflightConf{}).failed.empty());  // not asked
  // The probe's connect: a listener reached, nobody listening named.
  preflight::ProbeServer probe("127.0.0.1");
  CHECK(preflight::reach("127.0.0.1", probe.port()).empty());
}

TEST_CASE("link probe: a node measures its link and clock against a probe on loopback") {
  preflight::ProbeServer probe("127.0.0.1");
  REQUIRE(probe.port() > 0);
  const preflight::LinkFigures f = preflight::measure_link("127.0.0.1", probe.port(), 30);
  INFO(f.error);
  CHECK(f.error.empty());
  CHECK(f.out_mbps > 1);
  CHECK(f.in_mbps > 1);
  CHECK(f.rtt_us > 0);
  const preflight::ClockFigures c = preflight::measure_clock("127.0.0.1", probe.port());
  CHECK(c.error.empty());
  CHECK(std::abs(c.offset_s) < 0.5);  // the same clock; the bound is the exchange's round trip
  // Several at once, as the store host's probe serves every node's clock.
  std::vector<std::future<preflight::ClockFigures>> many;
  for (int i = 0; i < 8; ++i)
    many.push_back(std::async(std::launch::async, [&] { return preflight::measure_clock("127.0.0.1", probe.port()); }));
  for (auto& m : many) CHECK(m.get().error.empty());
  // Nobody listening: an error naming the address, never a throw.
  int closed = 0;
  {
    preflight::ProbeServer gone("127.0.0.1");
    closed = gone.port();
  }
  CHECK_THAT(preflight::measure_link("127.0.0.1", closed, 10).error, Catch::Contains("cannot connect to 127.0.0.1:"));
}

namespace {

// A node's measurement: its name, the peer it was given, and which of its own it is (1, 2).
using MeasureAs = std::function<RingReport(const std::string& me, const rendezvous::LinkPeer& peer, int nth)>;

struct LinkRound {
  rendezvous::RoundPlan plan;
  std::map<std::string, int> codes;          // each follower's join: 0, or its exit code
  std::map<std::string, std::string> asked;  // who measured toward which address
  std::map<std::string, int> measurements;   // how many times each measured
};

// Launchers a (the leader), b, c, d, one thread each on one MemoryStore, in one round with
// --preflight's link checks, each measuring as `measure` says.
LinkRound link_round(const MeasureAs& measure) {
  store::MemoryStore store;
  cli::RendezvousConf conf;
  conf.join_timeout_s = 10;
  conf.last_call_timeout_s = 5;
  conf.heartbeat_interval_s = 0.05;
  auto node = [](const std::string& name) {
    rendezvous::NodeInfo n;
    n.name = n.host = name;
    n.addr = name + ".addr";
    n.worker_port = 4000;
    n.probe_port = 7000;
    n.agent_store = true;
    n.nnodes_min = 2;
    n.nnodes_max = 4;
    return n;
  };
  LinkRound out;
  std::mutex mutex;
  auto measure_as = [&](const std::string& me) {
    return [&, me](const rendezvous::LinkPeer& p) {
      int nth = 0;
      {
        std::lock_guard<std::mutex> lock(mutex);
        out.asked[me] = p.addr + ":" + std::to_string(p.port) + " clock " + p.clock_addr + " store " + p.store_addr +
                        ":" + std::to_string(p.store_port);
        nth = ++out.measurements[me];
      }
      return measure(me, p, nth);
    };
  };
  auto follower = [&](const std::string& name) {
    return std::async(std::launch::async, [&, name]() -> int {
      rendezvous::RendezvousPolicy p = policy(conf, false, 2, 4);
      p.links = rendezvous::LinkCheck{measure_as(name), cli::PreflightConf{}};
      rendezvous::Rendezvous r(store, p, {});
      try {
        seated(r.join(node(name), -1, 0));
        return 0;
      } catch (const LaunchError& e) {
        return e.exit_code();
      }
    });
  };
  auto b = follower("b");
  auto c = follower("c");
  auto d = follower("d");
  rendezvous::RendezvousPolicy p = policy(conf, true, 2, 4);
  p.links = rendezvous::LinkCheck{measure_as("a"), cli::PreflightConf{}};
  rendezvous::Rendezvous leader(store, p, {});
  out.plan = seated(leader.join(node("a"), 0, 0));
  out.codes = {{"b", b.get()}, {"c", c.get()}, {"d", d.get()}};
  return out;
}

// d sends slowly: to its successor a (its own link) and to its predecessor c (c's download).
RingReport d_sends_slowly(const std::string& me, const rendezvous::LinkPeer& p) {
  if (me == "d") return ring_report(5, 6);
  if (p.addr == "d.addr") return ring_report(1000, 6);
  return ring_report(1000, 1000);
}

}  // namespace

TEST_CASE("link checks in a round: the leader asks every node, judges the ring and leaves the slow node out") {
  const LinkRound r =
      link_round([](const std::string& me, const rendezvous::LinkPeer& p, int) { return d_sends_slowly(me, p); });
  CHECK(r.codes.at("b") == 0);
  CHECK(r.codes.at("c") == 0);
  CHECK(r.codes.at("d") == exit_code::kPreflightFailed);
  CHECK(r.plan.nnodes == 3);
  REQUIRE(r.plan.left_out.size() == 1);
  CHECK_THAT(r.plan.left_out[0], Catch::Contains("node d (pid 0): its pre-flight check failed: network: node d (pid 0) "
                                                 "at d.addr sends at 5 MB/s"));
  // Left out only after a second measurement by every node found it slow again.
  CHECK(r.measurements == std::map<std::string, int>{{"a", 2}, {"b", 2}, {"c", 2}, {"d", 2}});
  // A ring in join order, each toward its successor, everyone's clock against the leader.
  REQUIRE(r.asked.size() == 4);
  CHECK(r.asked.at("a").find("clock a.addr") != std::string::npos);
  CHECK(r.asked.at("d").find("clock a.addr") != std::string::npos);
  // The workers' store (group rank 0 to be: a, the first to join, serving it): the others reach for it.
  CHECK(r.asked.at("a").find("store :0") != std::string::npos);
  CHECK(r.asked.at("b").find("store a.addr:4000") != std::string::npos);
}

TEST_CASE("link checks in a round: a node slow in the first measurement only (a starved moment) is kept") {
  const LinkRound r = link_round([](const std::string& me, const rendezvous::LinkPeer& p, int nth) {
    return nth == 1 ? d_sends_slowly(me, p) : ring_report(1000, 1000);
  });
  CHECK(r.codes == std::map<std::string, int>{{"b", 0}, {"c", 0}, {"d", 0}});
  CHECK(r.plan.nnodes == 4);
  CHECK(r.plan.left_out.empty());
  CHECK(r.measurements == std::map<std::string, int>{{"a", 2}, {"b", 2}, {"c", 2}, {"d", 2}});
}

TEST_CASE("link checks in a round: a clean ring is measured once") {
  const LinkRound r =
      link_round([](const std::string&, const rendezvous::LinkPeer&, int) { return ring_report(1000, 1000); });
  CHECK(r.plan.nnodes == 4);
  CHECK(r.measurements == std::map<std::string, int>{{"a", 1}, {"b", 1}, {"c", 1}, {"d", 1}});
}
