// The etcd client's pure half: base64, prefix range ends, endpoint lists, failover order,
// and the gateway's JSON in both directions (no etcd needed).
#include <catch2/catch.hpp>

#include <type_traits>

#include <nlohmann/json.hpp>

#include "launcher/etcd/etcd_codec.hpp"
#include "launcher/etcd/etcd_error.hpp"

using namespace ddp::launch::etcd;
using nlohmann::json;

TEST_CASE("base64 round-trips every length and byte, and rejects what is not base64") {
  CHECK(base64_encode("") == "");
  CHECK(base64_encode("f") == "Zg==");
  CHECK(base64_encode("fo") == "Zm8=");
  CHECK(base64_encode("foo") == "Zm9v");
  CHECK(base64_encode("foobar") == "Zm9vYmFy");
  std::string all;
  for (int i = 0; i < 256; ++i) all += static_cast<char>(i);
  for (size_t n = 0; n < all.size(); n += 7) CHECK(base64_decode(base64_encode(all.substr(0, n))) == all.substr(0, n));
  CHECK(base64_decode("Zm9vYmE=") == std::string("fooba"));
  CHECK_FALSE(base64_decode("Zm9"));       // not a multiple of 4
  CHECK_FALSE(base64_decode("Zm9v!A=="));  // not in the alphabet
  CHECK_FALSE(base64_decode("Z=9v"));      // padding in the middle
}

TEST_CASE("the range end of a prefix selects exactly the keys that start with it") {
  CHECK(prefix_range_end("/ddp-launch/job/") == "/ddp-launch/job0");
  CHECK(prefix_range_end("a\xff") == "b");
  CHECK(prefix_range_end(std::string("\xff\xff")) == std::string(1, '\0'));
  CHECK(prefix_range_end("") == std::string(1, '\0'));
}

TEST_CASE("endpoint lists: default port, schemes, IPv6, and errors that name the item") {
  bool https = false;
  auto e = parse_endpoints("10.0.0.1:2379, etcd-b ,https://[::1]:2380/", 2379, &https);
  REQUIRE(e.size() == 3);
  CHECK(e[0].text() == "10.0.0.1:2379");
  CHECK(e[1].host == "etcd-b");
  CHECK(e[1].port == 2379);
  CHECK(e[2].host == "::1");
  CHECK(e[2].port == 2380);
  CHECK(https);
  CHECK_THROWS_WITH(parse_endpoints("a:0", 2379), Catch::Contains("'a:0'") && Catch::Contains("1-65535"));
  CHECK_THROWS_WITH(parse_endpoints("a:", 2379), Catch::Contains("'a:'"));
  CHECK_THROWS_WITH(parse_endpoints("[::1", 2379), Catch::Contains("'[::1'"));
  CHECK_THROWS_WITH(parse_endpoints(" , ", 2379), Catch::Contains("at least one etcd member"));
}

TEST_CASE("failover goes round robin over the members") {
  CHECK(next_endpoint(0, 3) == 1);
  CHECK(next_endpoint(2, 3) == 0);
  CHECK(next_endpoint(0, 1) == 0);
}

TEST_CASE("request bodies: keys and values base64, int64 as strings, compare-and-put transactions") {
  json range = json::parse(range_body("a", "b", true));
  CHECK(range["key"] == "YQ==");
  CHECK(range["range_end"] == "Yg==");
  CHECK(range["count_only"] == true);
  json put = json::parse(put_body({"k", "v", 7587}));
  CHECK(put["value"] == "dg==");
  CHECK(put["lease"] == "7587");
  CHECK_FALSE(json::parse(put_body({"k", "v", 0})).contains("lease"));
  TxnRequest t;
  t.compare.push_back({Compare::Target::kCreateRevision, "k", 0, ""});
  t.compare.push_back({Compare::Target::kValue, "k", 0, "old"});
  t.success.push_back({"k", "new", 0});
  t.failure_range = "k";
  json txn = json::parse(txn_body(t));
  CHECK(txn["compare"][0] ==
        json{{"key", "aw=="}, {"result", "EQUAL"}, {"target", "CREATE"}, {"create_revision", "0"}});
  CHECK(txn["compare"][1]["target"] == "VALUE");
  CHECK(txn["compare"][1]["value"] == "b2xk");
  CHECK(txn["success"][0]["request_put"]["value"] == "bmV3");
  CHECK(txn["failure"][0]["request_range"]["key"] == "aw==");
  CHECK(json::parse(lease_grant_body(3))["TTL"] == "3");
  CHECK(json::parse(watch_body("k", 12))["create_request"]["start_revision"] == "12");
  CHECK(json::parse(authenticate_body("root", "pw")) == json{{"name", "root"}, {"password", "pw"}});
}

TEST_CASE("replies as etcd's gateway writes them") {
  RangeResult r = parse_range(
      R"({"header":{"revision":"9"},"kvs":[{"key":"YQ==","create_revision":"2","mod_revision":"8","version":"3","value":"MQ==","lease":"77"}],"count":"1"})");
  CHECK(r.revision == 9);
  CHECK(r.count == 1);
  REQUIRE(r.kvs.size() == 1);
  CHECK(r.kvs[0].key == "a");
  CHECK(r.kvs[0].value == "1");
  CHECK(r.kvs[0].mod_revision == 8);
  CHECK(r.kvs[0].lease == 77);
  CHECK(parse_range(R"({"header":{"revision":"3"}})").kvs.empty());

  TxnResult won = parse_txn(R"({"header":{"revision":"4"},"succeeded":true,"responses":[{"response_put":{}}]})");
  CHECK(won.succeeded);
  TxnResult lost = parse_txn(
      R"({"header":{"revision":"4"},"responses":[{"response_range":{"kvs":[{"key":"aw==","value":"Zmlyc3Q="}],"count":"1"}}]})");
  CHECK_FALSE(lost.succeeded);
  REQUIRE(lost.failure_kvs.size() == 1);
  CHECK(lost.failure_kvs[0].value == "first");

  CHECK(parse_lease_id(R"({"ID":"4111120345301740037","TTL":"2"})") == 4111120345301740037LL);
  CHECK(parse_lease_ttl("{\"result\":{\"ID\":\"5\",\"TTL\":\"3\"}}\n") == 3);
  CHECK(parse_lease_ttl(R"({"result":{"ID":"5"}})") == 0);  // expired: etcd leaves TTL out
  CHECK(parse_token(R"({"header":{},"token":"abc.7"})") == "abc.7");

  CHECK(parse_watch_line(R"({"result":{"header":{},"created":true}})").created);
  CHECK(parse_watch_line(R"({"result":{"events":[{"kv":{"key":"YQ=="}}]}})").events == 1);
  CHECK_THROWS_AS(parse_watch_line(R"({"error":{"code":14,"message":"no leader"}})"), EtcdProtocolError);

  ErrorReply e =
      parse_error(R"({"error":"etcdserver: user name is empty","message":"etcdserver: user name is empty","code":3})");
  CHECK(e.code == 3);
  CHECK(e.message == "etcdserver: user name is empty");
  CHECK_THROWS_AS(parse_range("<html>"), EtcdProtocolError);
  CHECK_THROWS_AS(parse_range(R"({"kvs":[{"key":"!!"}]})"), EtcdProtocolError);
}

TEST_CASE("every error of the etcd layer is an EtcdError, a reply of an odd shape included") {
  static_assert(std::is_base_of_v<EtcdError, EtcdUnavailable>);
  static_assert(std::is_base_of_v<EtcdError, EtcdRejected>);
  static_assert(std::is_base_of_v<EtcdError, EtcdProtocolError>);
  static_assert(std::is_base_of_v<EtcdError, ConnectionError>);
  // Fields of the wrong type: nlohmann's accessors throw their own errors; they come out as ours.
  CHECK_THROWS_AS(parse_txn(R"({"succeeded":"yes"})"), EtcdProtocolError);
  CHECK_THROWS_AS(parse_watch_line(R"({"result":"x"})"), EtcdProtocolError);
  CHECK_THROWS_AS(parse_watch_line(R"({"result":{"created":1}})"), EtcdProtocolError);
  CHECK_THROWS_WITH(parse_txn(R"({"succeeded":"yes"})"), Catch::Contains("txn reply"));
  // An error body of an odd shape is still read as an error reply, never thrown.
  CHECK(parse_error(R"({"code":"14","message":"m"})").code == 0);
  CHECK(parse_error(R"({"code":14,"message":7})").code == 0);
  CHECK(parse_error(R"({"error":"etcdserver: no leader","code":14})").message == "etcdserver: no leader");
}
