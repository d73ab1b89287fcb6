// FailureKind: one spelling per kind, read back; the event schema documents every one.
#include <catch2/catch.hpp>

#include <set>
#include <string>

#include "launcher/base/failure_kind.hpp"
#include "tests/support/files.hpp"

using namespace ddp::launch;

TEST_CASE("failure kinds: each has its own name, and the name reads back as the kind") {
  std::set<std::string> names;
  for (FailureKind kind : kAllFailureKinds) {
    const std::string name(to_string(kind));
    CHECK(names.insert(name).second);
    CHECK(failure_kind_from_string(name) == kind);
  }
  CHECK(names.size() == 10);
  CHECK_FALSE(failure_kind_from_string("Crash"));
  CHECK_FALSE(failure_kind_from_string(""));
  CHECK(is_hang(FailureKind::kHang));
  CHECK(is_hang(FailureKind::kDesync));
  CHECK_FALSE(is_hang(FailureKind::kSignal));
  CHECK(has_verdict(FailureKind::kWatchdog));
  CHECK(has_verdict(FailureKind::kUninterruptible));
  CHECK(has_verdict(FailureKind::kHang));
  CHECK_FALSE(has_verdict(FailureKind::kCrash));
  CHECK_FALSE(is_hang(FailureKind::kWatchdog));
}

TEST_CASE("failure kinds: docs/events.md has a row for every kind") {
  const std::string doc = ddp::test::read_file(std::string(DDP_SOURCE_DIR) + "/docs/events.md");
  REQUIRE_FALSE(doc.empty());
  for (FailureKind kind : kAllFailureKinds) {
    INFO(to_string(kind));
    CHECK(doc.find("| `" + std::string(to_string(kind)) + "` |") != std::string::npos);
  }
}
