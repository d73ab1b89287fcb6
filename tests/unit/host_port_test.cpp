// The one host[:port] parser: single endpoints, lists, URLs, IPv6 in brackets, and errors
// that name the value (and no flag) with exit code 121.
#include <catch2/catch.hpp>

#include "launcher/base/exit_status.hpp"
#include "launcher/base/host_port.hpp"

using namespace ddp::launch;

namespace {

std::string text_of(const HostPort& hp) { return hp.host + " " + std::to_string(hp.port); }

std::string error_of(const std::string& text) {
  try {
    parse_host_port(text, 29400);
  } catch (const HostPortError& e) {
    CHECK(e.exit_code() == exit_code::kUsage);
    return e.what();
  }
  FAIL("expected a HostPortError for '" << text << "'");
  return "";
}

}  // namespace

TEST_CASE("host_port: a host with or without its port, IPv6 in brackets") {
  CHECK(text_of(parse_host_port("head", 29400)) == "head 29400");
  CHECK(text_of(parse_host_port("head:1234", 29400)) == "head 1234");
  CHECK(text_of(parse_host_port("10.0.0.1:65535", 29400)) == "10.0.0.1 65535");
  CHECK(text_of(parse_host_port("  node-1.cluster.local:1 \t", 29400)) == "node-1.cluster.local 1");
  CHECK(text_of(parse_host_port("[::1]:2379", 29400)) == "::1 2379");
  CHECK(text_of(parse_host_port("[fe80::1%eth0]", 29400)) == "fe80::1%eth0 29400");
}

TEST_CASE("host_port: errors name the value and say what is expected, never a flag") {
  CHECK_THAT(error_of("host:notaport"), Catch::Contains("'host:notaport' is not HOST[:PORT]") &&
                                            Catch::Contains("the port must be a number 1-65535"));
  CHECK_THAT(error_of("host:0"), Catch::Contains("'host:0'") && Catch::Contains("1-65535"));
  CHECK_THAT(error_of("host:65536"), Catch::Contains("1-65535"));
  CHECK_THAT(error_of("host:"), Catch::Contains("'host:'") && Catch::Contains("1-65535"));
  CHECK_THAT(error_of("host:-1"), Catch::Contains("1-65535"));
  CHECK_THAT(error_of(":2379"), Catch::Contains("the host is empty"));
  CHECK_THAT(error_of("[]:2379"), Catch::Contains("the host is empty"));
  CHECK_THAT(error_of(""), Catch::Contains("it is empty"));
  CHECK_THAT(error_of("  "), Catch::Contains("it is empty"));
  CHECK_THAT(error_of("[::1"), Catch::Contains("'[::1'") && Catch::Contains("without its ']'"));
  CHECK_THAT(error_of("[::1]2379"), Catch::Contains("only :PORT may follow ']'"));
  CHECK_THAT(error_of("[::1]:x"), Catch::Contains("1-65535"));
  CHECK_THAT(error_of("h]:1"), Catch::Contains("brackets go around a whole IPv6 address"));
  CHECK_THAT(error_of("a:1,b:2"), Catch::Contains("'a:1,b:2'") && Catch::Contains("not a list"));
  CHECK_THAT(error_of("http://head:1"), Catch::Contains("no scheme://"));
  CHECK_THAT(error_of("head:1/"), Catch::Contains("no '/'"));
  CHECK_THAT(error_of("my host"), Catch::Contains("no blanks"));
  for (const char* text : {"host:notaport", "", "[::1", "a:1,b:2"}) CHECK_THAT(error_of(text), !Catch::Contains("--"));
}

TEST_CASE("host_port: a bare IPv6 address is refused, the brackets are the way") {
  // "fe80::1:2379": a port or the last group of the address? Nobody can tell.
  CHECK_THAT(error_of("::1"), Catch::Contains("'::1'") && Catch::Contains("IPv6 address goes in brackets") &&
                                  Catch::Contains("[::1]:2379"));
  CHECK_THAT(error_of("fe80::1:2379"), Catch::Contains("in brackets"));
  CHECK(text_of(parse_host_port("[fe80::1]:2379", 1)) == "fe80::1 2379");
}

TEST_CASE("host_port lists: items in order, blanks and empty items ignored, at least one") {
  auto list = parse_host_port_list(" a:1, b ,,[::1]:3 ", 9);
  REQUIRE(list.size() == 3);
  CHECK(text_of(list[0]) == "a 1");
  CHECK(text_of(list[1]) == "b 9");
  CHECK(text_of(list[2]) == "::1 3");
  CHECK_THROWS_WITH(parse_host_port_list("a:1,b:x", 9), Catch::Contains("'b:x'") && Catch::Contains("1-65535"));
  CHECK_THROWS_WITH(parse_host_port_list(" , ", 9), Catch::Contains("names no endpoint"));
  CHECK_THROWS_AS(parse_host_port_list("", 9), HostPortError);
  CHECK_THROWS_WITH(parse_host_port_list("https://a:1", 9), Catch::Contains("no scheme://"));
}

TEST_CASE("host_port: URL lists take http:// and https:// items, a trailing '/' too") {
  auto list = parse_http_endpoint_list("http://a:1/, https://[::1]:2,c", 2379);
  REQUIRE(list.size() == 3);
  CHECK(text_of(list[0].address) == "a 1");
  CHECK_FALSE(list[0].https);
  CHECK(text_of(list[1].address) == "::1 2");
  CHECK(list[1].https);
  CHECK(text_of(list[2].address) == "c 2379");
  CHECK_FALSE(list[2].https);
  // Errors name the item as written, scheme included.
  CHECK_THROWS_WITH(parse_http_endpoint_list("https://[::1", 2379), Catch::Contains("'https://[::1'"));
  CHECK_THROWS_WITH(parse_http_endpoint_list("ftp://a:1", 2379),
                    Catch::Contains("'ftp://a:1'") && Catch::Contains("http:// or https://"));
  CHECK_THROWS_WITH(parse_http_endpoint_list("http://a:1/v3", 2379), Catch::Contains("'http://a:1/v3'"));
}

TEST_CASE("format_host_port: an IPv6 address in brackets, as parse_host_port reads it back") {
  CHECK(format_host_port("fd00::2", 29500) == "[fd00::2]:29500");
  CHECK(format_host_port("10.0.0.1", 29500) == "10.0.0.1:29500");
  CHECK(format_host_port("gpu1", 1) == "gpu1:1");
  CHECK(text_of(parse_host_port(format_host_port("fd00::2", 29500), 1)) == "fd00::2 29500");
}
