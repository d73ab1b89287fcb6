// The launcher's text helpers: splitting, trimming, whole-string numbers and seconds.
#include <catch2/catch.hpp>

#include <cmath>

#include "launcher/base/text.hpp"

using namespace ddp::launch;
using Items = std::vector<std::string>;

TEST_CASE("split keeps empty items unless asked to skip them") {
  CHECK(split("a,,b", ',') == Items{"a", "", "b"});
  CHECK(split("", ',') == Items{""});
  CHECK(split(",a,", ',') == Items{"", "a", ""});
  CHECK(split("a:b", ',') == Items{"a:b"});
  CHECK(split("a,,b", ',', EmptyItems::kSkip) == Items{"a", "b"});
  CHECK(split("", ',', EmptyItems::kSkip).empty());
  CHECK(split(",,", ',', EmptyItems::kSkip).empty());
}

TEST_CASE("split_once cuts at the first separator only") {
  CHECK(split_once("token=ab==", '=') == std::pair<std::string, std::string>{"token", "ab=="});
  CHECK(split_once("k=", '=') == std::pair<std::string, std::string>{"k", ""});
  CHECK_FALSE(split_once("novalue", '='));
}

TEST_CASE("trim strips spaces and tabs at both ends") {
  CHECK(trim("  a b\t") == "a b");
  CHECK(trim(" \t ").empty());
  CHECK(trim("x") == "x");
}

TEST_CASE("parse_natural takes only whole strings of digits") {
  CHECK(parse_natural("0") == 0);
  CHECK(parse_natural("0042") == 42);
  CHECK(parse_natural("999999999999999999") == 999999999999999999LL);  // 18 digits
  for (std::string bad : {"", "-1", "+1", " 1", "1 ", "1.5", "1e3", "x", "1234567890123456789"})
    CHECK_FALSE(parse_natural(bad));
}

TEST_CASE("parse_seconds honours its floor") {
  CHECK(parse_seconds("1.5", SecondsFloor::kPositive) == 1.5);
  CHECK(parse_seconds("2e1", SecondsFloor::kPositive) == 20.0);
  CHECK(parse_seconds("0", SecondsFloor::kNonNegative) == 0.0);
  CHECK_FALSE(parse_seconds("0", SecondsFloor::kPositive));
  CHECK_FALSE(parse_seconds("-1", SecondsFloor::kNonNegative));
  for (std::string bad : {"", "x", "1s", "1 ", "nan"}) {
    CHECK_FALSE(parse_seconds(bad, SecondsFloor::kNonNegative));
    CHECK_FALSE(parse_seconds(bad, SecondsFloor::kPositive));
  }
}
