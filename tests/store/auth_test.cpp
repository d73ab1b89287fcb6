// The shared token: right proof accepted; a client without it (or with a wrong one) is
// disconnected before anything it sent is processed — nothing read, nothing written.
#include <catch2/catch.hpp>

#include "launcher/store/codec.hpp"
#include "launcher/store/hmac.hpp"
#include "tests/store/fixture.hpp"
#include "tests/store/raw_peer.hpp"

using namespace ddp::launch::store;
using namespace ddp::launch::store::test;

namespace {
ServerOptions with_token(const std::string& token) {
  ServerOptions o = local_options();
  o.token = token;
  return o;
}
ClientOptions token_opts(const std::string& token) {
  ClientOptions o;
  o.token = token;
  return o;
}
std::string set_frame(const std::string& key, const std::string& value) {
  Request q;
  q.op = Op::kSet;
  q.keys = {key};
  q.values = {value};
  return encode_request(q);
}
std::string get_frame(const std::string& key) {
  Request q;
  q.op = Op::kTryGet;
  q.keys = {key};
  return encode_request(q);
}
}  // namespace

TEST_CASE("auth: the right token is accepted and never sent in clear") {
  LocalServer srv(with_token("s3cret-token"));
  auto c = srv.client(token_opts("s3cret-token"));
  c->set("k", "v");
  CHECK(c->get("k", 1s) == "v");
}

TEST_CASE("auth: a client without a token is told to pass one") {
  LocalServer srv(with_token("s3cret-token"));
  CHECK_THROWS_WITH(srv.client(), Catch::Contains("requires a token") && Catch::Contains("DDP_LAUNCH_RDZV_TOKEN"));
}

TEST_CASE("auth: a wrong token is rejected with an actionable message") {
  LocalServer srv(with_token("s3cret-token"));
  try {
    srv.client(token_opts("wrong"));
    FAIL("accepted a wrong token");
  } catch (const StoreUnavailable& e) {
    CHECK_THAT(std::string(e.what()), Catch::Contains("rejected us: authentication failed"));
  }
}

TEST_CASE("auth: requests pipelined behind a bad proof are never read or written") {
  LocalServer srv(with_token("s3cret-token"));
  auto good = srv.client(token_opts("s3cret-token"));
  good->set("secret", "do-not-leak");

  for (const std::string& proof : {std::string(), std::string(32, '\0'), hmac_sha256("wrong", "any nonce")}) {
    RawPeer evil(srv.server.port());
    auto greeting = evil.read_frame(2s);
    REQUIRE(greeting);
    CHECK(decode_greeting(*greeting).auth_required);
    Hello h;
    h.proof = proof;
    h.name = "evil";
    h.heartbeat_ms = 1000;
    // HELLO, then writes and reads in the same packet, before any reply.
    REQUIRE(evil.send(encode_hello(h) + set_frame("secret", "overwritten") + set_frame("planted", "x") +
                      get_frame("secret")));
    auto reply = evil.read_frame(2s);
    REQUIRE(reply);
    const Response r = decode_response(*reply);
    CHECK(r.op == Op::kHello);
    CHECK(r.status == Status::kError);
    CHECK(r.values.empty());
    const std::string rest = evil.drain(2s);
    CHECK(rest.empty());  // no answer to the GET: nothing was read
    CHECK(evil.closed());
  }
  CHECK(good->get("secret", 1s) == "do-not-leak");  // nothing was written
  CHECK_FALSE(good->try_get("planted"));
  CHECK_FALSE(good->try_get(std::string(kDroppedPrefix) + "evil"));  // never admitted, never "dropped"
}

TEST_CASE("auth: skipping HELLO gets a hang-up and nothing else") {
  LocalServer srv(with_token("s3cret-token"));
  RawPeer evil(srv.server.port());
  REQUIRE(evil.read_frame(2s));
  REQUIRE(evil.send(set_frame("planted", "x") + get_frame("planted")));
  CHECK(evil.drain(2s).empty());
  CHECK(evil.closed());
  CHECK_FALSE(srv.client(token_opts("s3cret-token"))->try_get("planted"));
}

TEST_CASE("auth: a proof for another connection's nonce is useless (no replay)") {
  LocalServer srv(with_token("s3cret-token"));
  RawPeer first(srv.server.port());
  const Greeting g1 = decode_greeting(*first.read_frame(2s));
  RawPeer second(srv.server.port());
  REQUIRE(second.read_frame(2s));
  Hello h;
  h.proof = hmac_sha256("s3cret-token", g1.nonce);  // valid for first, replayed on second
  REQUIRE(second.send(encode_hello(h)));
  auto reply = second.read_frame(2s);
  REQUIRE(reply);
  CHECK(decode_response(*reply).status == Status::kError);
  REQUIRE(first.send(encode_hello(h)));
  auto ok = first.read_frame(2s);
  REQUIRE(ok);
  CHECK(decode_response(*ok).status == Status::kOk);
}

TEST_CASE("auth: a server without a token accepts anyone") {
  LocalServer srv;
  auto with = srv.client(token_opts("whatever"));
  auto without = srv.client();
  with->set("k", "1");
  CHECK(without->get("k", 1s) == "1");
}
