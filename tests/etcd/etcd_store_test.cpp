// The etcd client and EtcdStore against a real etcd: the Store semantics the rendezvous
// relies on (transactions, watches), leases as liveness, failover to another member when
// the one in use dies, reconnecting to a restarted member, and clear errors.
#include <catch2/catch.hpp>

#include <thread>

#include "launcher/etcd/etcd_client.hpp"
#include "launcher/rendezvous/etcd_store.hpp"
#include "launcher/store/protocol.hpp"
#include "tests/etcd/etcd_cluster.hpp"

using namespace ddp::test;
using namespace ddp::launch;
using namespace ddp::launch::rendezvous;
using namespace std::chrono_literals;

namespace {

etcd::EtcdOptions options_for(const std::string& endpoints, std::chrono::milliseconds timeout = 3000ms) {
  etcd::EtcdOptions o;
  o.endpoints = etcd::parse_endpoints(endpoints, 2379);
  o.request_timeout = timeout;
  return o;
}

}  // namespace

TEST_CASE("EtcdStore: set/get/add/compare_set/wait, a get woken by a watch, check and remove") {
  require_etcd();
  EtcdCluster cluster(1);
  EtcdStore s(options_for(cluster.endpoint(0)), "/ddp-launch/unit/", "me", 2, 10);
  s.open(etcd::Clock::now() + 10s);
  s.set("a", "1");
  CHECK(s.get("a", 1000ms) == "1");
  CHECK(s.try_get("a") == std::string("1"));
  CHECK_FALSE(s.try_get("missing"));
  CHECK(s.add("n", 0) == 0);
  CHECK(s.add("n", 2) == 2);
  CHECK(s.add("n", 3) == 5);
  CHECK(s.compare_set("c", "", "first") == "first");
  CHECK(s.compare_set("c", "", "second") == "first");  // the first one wins
  CHECK(s.compare_set("c", "first", "third") == "third");
  CHECK_FALSE(s.wait({"a", "never"}, 300ms));
  CHECK_THROWS_AS(s.get("never", 200ms), store::StoreTimeout);
  std::thread writer([&] {
    EtcdStore other(options_for(cluster.endpoint(0)), "/ddp-launch/unit/", "other", 2, 10);
    other.open(etcd::Clock::now() + 10s);
    std::this_thread::sleep_for(300ms);
    other.set("late", "here");
  });
  CHECK(s.get("late", 20000ms) == "here");  // woken by the watch, not a timeout
  writer.join();
  s.multi_set({{"x", "1"}, {"y", "2"}});
  CHECK(s.multi_get({"x", "y"}, 1000ms) == std::vector<std::string>{"1", "2"});
  // More puts than etcd takes in one transaction (128 by default): a round's seats.
  std::vector<std::pair<std::string, std::string>> seats;
  std::vector<std::string> seat_keys, seat_values;
  for (int i = 0; i < 300; ++i) {
    seats.emplace_back("seat/" + std::to_string(i), std::to_string(i));
    seat_keys.push_back(seats.back().first);
    seat_values.push_back(seats.back().second);
  }
  s.multi_set(seats);
  CHECK(s.multi_get(seat_keys, 1000ms) == seat_values);
  for (const auto& k : seat_keys) s.remove(k);
  CHECK(s.check({"x", "y"}));
  CHECK(s.remove("x"));
  CHECK_FALSE(s.remove("x"));
  CHECK_FALSE(s.check({"x", "y"}));
  s.close();
  CHECK(cluster.count_keys("/ddp-launch/unit/") == 0);  // the last one out: the job's keys go
}

TEST_CASE("EtcdStore: concurrent adds from several launchers never lose an increment") {
  require_etcd();
  EtcdCluster cluster(1);
  constexpr int kThreads = 4, kAdds = 25;
  EtcdStore s(options_for(cluster.endpoint(0)), "/ddp-launch/adds/", "reader", 2, 10);
  s.open(etcd::Clock::now() + 10s);  // first in, last out: the keys stay until it leaves
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t)
    threads.emplace_back([&, t] {
      EtcdStore mine(options_for(cluster.endpoint(0)), "/ddp-launch/adds/", "n" + std::to_string(t), 2, 10);
      mine.open(etcd::Clock::now() + 10s);
      for (int i = 0; i < kAdds; ++i) mine.add("ticket", 1);
    });
  for (auto& t : threads) t.join();
  CHECK(s.add("ticket", 0) == kThreads * kAdds);
}

TEST_CASE("EtcdStore: a launcher whose lease is not kept alive reads as dropped after its TTL") {
  require_etcd();
  EtcdCluster cluster(1);
  EtcdStore watcher(options_for(cluster.endpoint(0)), "/ddp-launch/live/", "watcher", 2, 10);
  watcher.open(etcd::Clock::now() + 10s);
  {
    EtcdStore peer(options_for(cluster.endpoint(0)), "/ddp-launch/live/", "peer", 2, 10);
    peer.open(etcd::Clock::now() + 10s);
    std::this_thread::sleep_for(3500ms);  // longer than the TTL: the keeper holds it
    CHECK_FALSE(watcher.try_get(std::string(store::kDroppedPrefix) + "peer"));
  }
  CHECK(watcher.try_get(std::string(store::kDroppedPrefix) + "peer"));  // closed: lease revoked
  // A lease nobody keeps alive (a SIGKILLed launcher) expires on its own.
  etcd::EtcdClient raw(options_for(cluster.endpoint(0)));
  const int64_t lease = raw.lease_grant(2);
  raw.put({"/ddp-launch/live/alive/ghost", "1", lease});
  CHECK_FALSE(watcher.try_get(std::string(store::kDroppedPrefix) + "ghost"));
  CHECK(wait_until([&] { return watcher.try_get(std::string(store::kDroppedPrefix) + "ghost").has_value(); }, 20s));
  CHECK_THAT(*watcher.try_get(std::string(store::kDroppedPrefix) + "ghost"), Catch::Contains("lease expired"));
}

TEST_CASE("etcd client: the member in use dies, requests fail over to another member") {
  require_etcd();
  EtcdCluster cluster(3);
  etcd::EtcdClient client(options_for(cluster.endpoints(), 10000ms));
  client.put({"k", "1", 0});
  CHECK(client.current_endpoint() == cluster.endpoint(0));
  cluster.kill(0);  // the connection in use breaks; the cluster lives on
  CHECK(client.range("k").kvs.at(0).value == "1");
  client.put({"k", "2", 0});
  CHECK(client.current_endpoint() != cluster.endpoint(0));
  CHECK(client.range("k").kvs.at(0).value == "2");
}

TEST_CASE("etcd client: a restarted member is reconnected to, and a dead etcd is named") {
  require_etcd();
  EtcdCluster cluster(1);
  etcd::EtcdClient client(options_for(cluster.endpoint(0), 20000ms));
  client.put({"k", "1", 0});
  cluster.kill(0);
  cluster.restart(0);  // same endpoint, same data: the old connection is dead
  CHECK(client.range("k").kvs.at(0).value == "1");
  cluster.kill(0);
  etcd::EtcdClient quick(options_for(cluster.endpoint(0), 1000ms));
  CHECK_THROWS_WITH(quick.range("k"), Catch::Contains("no etcd member answered") &&
                                          Catch::Contains(cluster.endpoint(0)) && Catch::Contains("refused"));
}

TEST_CASE("EtcdStore: a job lease key ddp-launch did not write fails open at once, naming the key and the fix") {
  require_etcd();
  EtcdCluster cluster(1);
  etcd::EtcdClient raw(options_for(cluster.endpoint(0)));
  auto open_error = [&](const std::string& prefix) {
    EtcdStore s(options_for(cluster.endpoint(0)), prefix, "me", 2, 10);
    const auto start = etcd::Clock::now();
    std::string what;
    try {
      s.open(start + 30s);  // a join timeout it must not wait for
      FAIL("open() succeeded");
    } catch (const store::StoreUnavailable& e) {
      FAIL("reported as etcd unreachable: " << e.what());
    } catch (const store::StoreError& e) {
      what = e.what();
    }
    CHECK(etcd::Clock::now() - start < 5s);
    CHECK_THAT(what, Catch::Contains("etcd at " + cluster.endpoint(0)) && Catch::Contains(prefix + "job_lease") &&
                         Catch::Contains("etcdctl del --prefix " + prefix) && Catch::Contains("--rdzv-id") &&
                         !Catch::Contains("is etcd running"));
    return what;
  };
  // Attached to no lease (a hand-made key): etcd never deletes it.
  raw.put({"/ddp-launch/bare/job_lease", "12345", 0});
  CHECK_THAT(open_error("/ddp-launch/bare/"),
             Catch::Contains("names lease 12345, which etcd does not know") && Catch::Contains("attached to no lease"));
  // Attached to a live lease other than the one it names.
  const int64_t other = raw.lease_grant(60);
  raw.put({"/ddp-launch/other/job_lease", "12345", other});
  CHECK_THAT(open_error("/ddp-launch/other/"), Catch::Contains("attached to lease " + std::to_string(other)));
  // Not a lease id at all.
  raw.put({"/ddp-launch/text/job_lease", "hello", 0});
  CHECK_THAT(open_error("/ddp-launch/text/"), Catch::Contains("holds 'hello', not a lease id"));
  // A job lease that expired with its key is no obstacle: the next launcher creates a new one.
  const int64_t short_lived = raw.lease_grant(2);
  raw.put({"/ddp-launch/expired/job_lease", std::to_string(short_lived), short_lived});
  std::this_thread::sleep_for(3500ms);
  EtcdStore fresh(options_for(cluster.endpoint(0)), "/ddp-launch/expired/", "me", 2, 10);
  fresh.open(etcd::Clock::now() + 10s);
  fresh.set("k", "v");
  CHECK(fresh.try_get("k") == std::string("v"));
}
