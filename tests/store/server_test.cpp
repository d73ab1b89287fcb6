// StoreServer + TcpStoreClient over loopback: every operation, waits and their timeouts,
// errors that say what to do, framing limits and per-connection deadlines.
#include <catch2/catch.hpp>

#include <thread>

#include "launcher/net/listen_error.hpp"
#include "launcher/store/codec.hpp"
#include "launcher/store/prefix_store.hpp"
#include "tests/store/fixture.hpp"
#include "tests/store/raw_peer.hpp"

using namespace ddp::launch;
using namespace ddp::launch::store;
using namespace ddp::launch::store::test;

TEST_CASE("server: every operation over TCP") {
  LocalServer srv;
  auto c = srv.client();
  c->set("a", std::string("bin\0ary", 7));
  CHECK(c->get("a", 1s) == std::string("bin\0ary", 7));
  CHECK(c->add("n", 5) == 5);
  CHECK(c->add("n", -7) == -2);
  CHECK(c->compare_set("c", "", "first") == "first");
  CHECK(c->compare_set("c", "wrong", "x") == "first");
  CHECK(c->compare_set("c", "first", "second") == "second");
  CHECK(c->check({"a", "c"}));
  CHECK_FALSE(c->check({"a", "missing"}));
  CHECK(c->remove("c"));
  CHECK_FALSE(c->remove("c"));
  CHECK_FALSE(c->try_get("c"));
  CHECK(c->try_get("n") == std::optional<std::string>("-2"));
  c->multi_set({{"x", "1"}, {"y", std::string(1 << 20, 'y')}});
  auto values = c->multi_get({"x", "y"}, 1s);
  REQUIRE(values.size() == 2);
  CHECK(values[1].size() == (1u << 20));
  CHECK(c->wait({"x", "y"}, 0ms));
  c->ping();
  // A refused request (not an integer) leaves the connection usable.
  CHECK_THROWS_WITH(c->add("a", 1), Catch::Contains("not an integer"));
  CHECK(c->get("x", 1s) == "1");
}

TEST_CASE("server: get and multi_get wait for keys another client sets later") {
  LocalServer srv;
  auto waiter = srv.client();
  std::thread setter([&] {
    auto c = srv.client();
    std::this_thread::sleep_for(100ms);
    c->set("late/1", "one");
    std::this_thread::sleep_for(50ms);
    c->set("late/2", "two");
  });
  Stopwatch sw;
  CHECK(waiter->multi_get({"late/1", "late/2"}, 5s) == std::vector<std::string>{"one", "two"});
  CHECK(sw.seconds() >= 0.1);
  setter.join();
}

TEST_CASE("server: wait returns false and get throws StoreTimeout after their timeout") {
  LocalServer srv;
  auto c = srv.client();
  Stopwatch sw;
  CHECK_FALSE(c->wait({"never"}, 200ms));
  CHECK(sw.seconds() == Approx(0.2).margin(0.15));
  sw = Stopwatch{};
  try {
    c->multi_get({"here", "gone1", "gone2"}, 150ms);
    FAIL("no timeout");
  } catch (const StoreTimeout& e) {
    const std::string msg = e.what();
    CHECK_THAT(msg, Catch::Contains("timed out after 0.15 s"));
    CHECK_THAT(msg, Catch::Contains("'gone1'"));
    CHECK_THAT(msg, Catch::Contains("127.0.0.1:" + std::to_string(srv.server.port())));
  }
  CHECK(sw.seconds() < 1.0);
  CHECK_THROWS_AS(c->get("never", 0ms), StoreTimeout);
  c->set("here", "1");  // the connection is still fine after timeouts
  CHECK(c->get("here", 1s) == "1");
}

TEST_CASE("server: requests pipelined behind a parked wait run in order afterwards") {
  LocalServer srv;
  RawPeer peer(srv.server.port());
  peer.handshake();
  Request wait;
  wait.op = Op::kGet;
  wait.keys = {"k"};
  wait.timeout_ms = 5000;
  Request set;
  set.op = Op::kSet;
  set.keys = {"k"};
  set.values = {"v"};
  REQUIRE(peer.send(encode_request(wait) + encode_request(set)));  // the SET would release our own GET...
  auto none = peer.read_frame(300ms);  // ...but it queues behind it, so nothing is answered yet
  CHECK_FALSE(none);
  srv.client()->set("k", "from another client");
  auto first = peer.read_frame(2s);
  REQUIRE(first);
  CHECK(decode_response(*first).values == std::vector<std::string>{"from another client"});
  auto second = peer.read_frame(2s);
  REQUIRE(second);
  CHECK(decode_response(*second).op == Op::kSet);
}

TEST_CASE("server: a taken port is a ListenError (address in use) naming host:port") {
  LocalServer first;
  ServerOptions o = local_options();
  o.port = first.server.port();
  StoreServer second(o);
  try {
    second.start();
    FAIL("second server started on a taken port");
  } catch (const net::ListenError& e) {
    CHECK(e.address_in_use());
    CHECK_THAT(std::string(e.what()),
               Catch::Contains("127.0.0.1:" + std::to_string(o.port)) && Catch::Contains("address already in use"));
  }
}

TEST_CASE("server: a client that cannot connect says where and what to check") {
  uint16_t port = 0;
  {
    LocalServer srv;
    port = srv.server.port();
  }  // now nobody listens there
  ClientOptions o;
  o.connect_timeout = 300ms;
  Stopwatch sw;
  try {
    TcpStoreClient c("127.0.0.1", port, o);
    FAIL("connected to nothing");
  } catch (const StoreUnavailable& e) {
    const std::string msg = e.what();
    CHECK_THAT(msg, Catch::Contains("cannot reach the rendezvous store at 127.0.0.1:" + std::to_string(port) +
                                    " after 0.3 s: Connection refused"));
    CHECK_THAT(msg, Catch::Contains("is node 0's ddp-launch running"));
  }
  CHECK(sw.seconds() < 1.0);
}

TEST_CASE("server: the client retries until a late server comes up") {
  uint16_t port = 0;
  {
    LocalServer probe;
    port = probe.server.port();
  }
  std::unique_ptr<StoreServer> late;
  std::thread starter([&] {
    std::this_thread::sleep_for(300ms);
    ServerOptions o = local_options();
    o.port = port;
    late = std::make_unique<StoreServer>(o);
    late->start();
  });
  ClientOptions o;
  o.connect_timeout = 5s;
  TcpStoreClient c("127.0.0.1", port, o);
  c.set("k", "v");
  CHECK(c.get("k", 1s) == "v");
  starter.join();
}

TEST_CASE("server: stopping the server fails a waiting client with StoreUnavailable") {
  auto srv = std::make_unique<LocalServer>();
  auto c = srv->client();
  std::thread stopper([&] {
    std::this_thread::sleep_for(150ms);
    srv->server.stop();
  });
  CHECK_THROWS_WITH(c->get("never", 10s), Catch::Contains("lost the connection to the rendezvous store"));
  stopper.join();
  CHECK_THROWS_AS(c->set("k", "v"), StoreUnavailable);
}

TEST_CASE("server: PrefixStore over a TCP client") {
  LocalServer srv;
  auto c = srv.client();
  PrefixStore round("job/7", *c);
  round.set("rank/0", "host0");
  CHECK(c->get("job/7/rank/0", 1s) == "host0");
}

TEST_CASE("server: an oversized frame closes the connection before it is buffered") {
  ServerOptions o = local_options();
  o.max_frame_bytes = 4096;
  LocalServer srv(o);
  RawPeer peer(srv.server.port());
  peer.handshake();
  REQUIRE(peer.send(std::string{0, 0, 0x10, 1}));  // 4097 bytes announced, none sent
  auto reply = peer.read_frame(2s);
  REQUIRE(reply);
  CHECK_THAT(decode_response(*reply).message, Catch::Contains("exceeds the maximum of 4096"));
  peer.drain(2s);
  CHECK(peer.closed());
  // A client whose request is too large loses its connection with the reason.
  auto c = srv.client();
  CHECK_THROWS_AS(c->set("big", std::string(5000, 'x')), StoreUnavailable);
}

TEST_CASE("server: malformed requests after HELLO get an error reply and a hang-up") {
  LocalServer srv;
  RawPeer peer(srv.server.port());
  peer.handshake();
  REQUIRE(peer.send(std::string{0, 0, 0, 2, 99, 0}));  // opcode 99
  auto reply = peer.read_frame(2s);
  REQUIRE(reply);
  CHECK(decode_response(*reply).status == Status::kError);
  CHECK_THAT(decode_response(*reply).message, Catch::Contains("unknown opcode 99"));
  peer.drain(2s);
  CHECK(peer.closed());
}

TEST_CASE("server: per-connection read deadline (no HELLO, or a frame left half sent)") {
  ServerOptions o = local_options();
  o.read_timeout = 300ms;
  LocalServer srv(o);
  {
    RawPeer silent(srv.server.port());
    Stopwatch sw;
    silent.drain(3s);
    CHECK(silent.closed());
    CHECK(sw.seconds() == Approx(0.3).margin(0.25));
  }
  {
    RawPeer slow(srv.server.port());
    slow.handshake();
    std::this_thread::sleep_for(500ms);  // idle between frames is allowed...
    Request q;
    q.op = Op::kPing;
    REQUIRE(slow.send(encode_request(q)));
    REQUIRE(slow.read_frame(1s));
    const std::string half = encode_request(q).substr(0, 6);
    Stopwatch sw;
    REQUIRE(slow.send(half));  // ...a frame left unfinished is not
    slow.drain(3s);
    CHECK(slow.closed());
    CHECK(sw.seconds() == Approx(0.3).margin(0.25));
  }
}

TEST_CASE("server: per-connection write deadline closes a peer that stops reading") {
  ServerOptions o = local_options();
  o.write_timeout = 300ms;
  LocalServer srv(o);
  srv.client()->set("big", std::string(4 << 20, 'b'));
  RawPeer hog(srv.server.port(), 4096);
  hog.handshake("hog", 60000);
  Request get;
  get.op = Op::kGet;
  get.keys = {"big"};
  get.timeout_ms = 1000;
  std::string many;
  for (int i = 0; i < 8; ++i) many += encode_request(get);
  REQUIRE(hog.send(many));  // 32 MiB of replies; we read none of them
  auto watcher = srv.client();
  Stopwatch sw;
  CHECK_THAT(watcher->get(std::string(kDroppedPrefix) + "hog", 5s), Catch::Contains("write deadline"));
  CHECK(sw.seconds() < 3.0);
}

TEST_CASE("server: greeting carries magic, version and a fresh nonce") {
  LocalServer srv;
  RawPeer a(srv.server.port()), b(srv.server.port());
  auto ga = a.read_frame(2s), gb = b.read_frame(2s);
  REQUIRE(ga);
  REQUIRE(gb);
  const Greeting x = decode_greeting(*ga), y = decode_greeting(*gb);
  CHECK(x.magic == kMagic);
  CHECK(x.version == kProtocolVersion);
  CHECK_FALSE(x.auth_required);
  CHECK(x.nonce.size() == kNonceBytes);
  CHECK(x.nonce != y.nonce);
}

TEST_CASE("server: wrong magic is dropped silently, wrong version is told why") {
  LocalServer srv;
  {
    RawPeer p(srv.server.port());
    REQUIRE(p.read_frame(2s));
    Hello h;
    h.magic = 0x3C85F7CE;
    REQUIRE(p.send(encode_hello(h)));
    CHECK(p.drain(2s).empty());
    CHECK(p.closed());
  }
  {
    RawPeer p(srv.server.port());
    REQUIRE(p.read_frame(2s));
    Hello h;
    h.version = kProtocolVersion + 1;
    REQUIRE(p.send(encode_hello(h)));
    auto reply = p.read_frame(2s);
    REQUIRE(reply);
    CHECK_THAT(decode_response(*reply).message, Catch::Contains("protocol version 2 is not supported"));
    p.drain(2s);
    CHECK(p.closed());
  }
}

TEST_CASE("server: a repeated MULTI_GET sees every write in between (the server's reply cache)") {
  LocalServer srv;
  auto a = srv.client();
  auto b = srv.client();
  using V = std::vector<std::string>;
  a->multi_set({{"x", "1"}, {"y", "2"}});
  CHECK(a->multi_get({"x", "y"}, 1s) == V{"1", "2"});
  CHECK(b->multi_get({"x", "y"}, 1s) == V{"1", "2"});  // the same request bytes: served from the cache
  a->set("y", "3");
  CHECK(b->multi_get({"x", "y"}, 1s) == V{"1", "3"});
  CHECK(a->add("x", 4) == 5);
  CHECK(b->multi_get({"x", "y"}, 1s) == V{"5", "3"});
  CHECK(a->compare_set("y", "3", "7") == "7");
  CHECK(b->multi_get({"x", "y"}, 1s) == V{"5", "7"});
  CHECK(a->remove("x"));
  CHECK_THROWS_AS(b->multi_get({"x", "y"}, 1s), StoreTimeout);
}
