// The workers' store's sizing (launcher/node/worker_store.hpp): connections and backlog by the
// job's ranks, bounded by the open-file limit, and what is said when the job does not fit.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdint>
#include <string>

#include "launcher/node/worker_store.hpp"

using ddp::launch::node::kReservedFiles;
using ddp::launch::node::size_worker_store;

TEST_CASE("worker store sizing: two connections per rank and a backlog of the ranks, no fixed cap") {
  for (size_t ranks : {1u, 8u, 4096u, 5000u, 16384u, 98304u}) {
    INFO(ranks << " ranks");
    const auto s = size_worker_store(ranks, 1u << 20, 1u << 20);
    CHECK(s.error.empty());
    CHECK(s.warnings.empty());
    CHECK(s.max_connections == 2 * ranks + 64);
    CHECK(s.backlog == static_cast<int>(std::max<size_t>(ranks, 128)));
  }
}

TEST_CASE("worker store sizing: the open-file limit bounds it; below one connection per rank the job fails") {
  // 20000 files: 16384 ranks of torch 2.x fit (one connection each), 1.13's two each do not.
  auto s = size_worker_store(16384, 20000, 65535);
  CHECK(s.error.empty());
  CHECK(s.max_connections == 20000 - kReservedFiles);
  REQUIRE(s.warnings.size() == 1);
  CHECK_THAT(s.warnings[0], Catch::Contains("torch 1.13 clients open two each") && Catch::Contains("32768"));
  // 98304 ranks cannot: the error names the need, the limit and the way out.
  s = size_worker_store(98304, 20000, 65535);
  CHECK_THAT(s.error, Catch::Contains("98304 for this job") && Catch::Contains("only 20000 files") &&
                          Catch::Contains("ulimit -Hn") && Catch::Contains(std::to_string(98304 + kReservedFiles)) &&
                          Catch::Contains("--worker-store=rank0"));
  // An unlimited process.
  s = size_worker_store(98304, SIZE_MAX, 1u << 20);
  CHECK(s.error.empty());
  CHECK(s.max_connections == 2 * 98304 + 64);
  // A tiny limit still admits one.
  s = size_worker_store(1, 100, 4096);
  CHECK_FALSE(s.error.empty());
}

TEST_CASE("worker store sizing: a somaxconn below the ranks is said once, with the sysctl") {
  auto s = size_worker_store(16384, 1u << 20, 4096);
  CHECK(s.error.empty());
  REQUIRE(s.warnings.size() == 1);
  CHECK_THAT(s.warnings[0], Catch::Contains("net.core.somaxconn is 4096") && Catch::Contains("16384 ranks") &&
                                Catch::Contains("sysctl -w net.core.somaxconn=16384"));
  CHECK(size_worker_store(4096, 1u << 20, 4096).warnings.empty());
  CHECK(size_worker_store(16384, 1u << 20, std::nullopt).warnings.empty());  // unknown: nothing said
}
