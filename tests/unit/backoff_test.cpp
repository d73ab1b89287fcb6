// net::Backoff (launcher/net/backoff.hpp): pauses doubling to a cap, each plus up to half of
// it at random, and clients that failed together spread out.
#include <catch2/catch.hpp>

#include <chrono>
#include <set>

#include "launcher/net/backoff.hpp"

using ddp::launch::net::Backoff;
using std::chrono::milliseconds;

TEST_CASE("backoff: doubling from the first pause to the cap, each plus at most half of it") {
  Backoff b(milliseconds(20), milliseconds(1000), 7);
  long base = 20;
  for (int i = 0; i < 12; ++i) {
    const long pause = b.next().count();
    INFO("try " << i << ": base " << base << " ms, pause " << pause << " ms");
    CHECK(pause >= base);
    CHECK(pause <= base + base / 2);
    base = std::min(base * 2, 1000L);
  }
}

TEST_CASE("backoff: a thousand clients that failed at once do not retry at once") {
  std::set<long> first_pauses;
  for (uint32_t client = 0; client < 1000; ++client)
    first_pauses.insert(Backoff(milliseconds(200), milliseconds(2000), client).next().count());
  CHECK(first_pauses.size() > 80);  // spread over 200-300 ms, not one instant
  CHECK(*first_pauses.begin() >= 200);
  CHECK(*first_pauses.rbegin() <= 300);
}
