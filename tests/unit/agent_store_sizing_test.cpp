// The agent store's sizing (launcher/rendezvous/agent_store_sizing.hpp): two connections per
// node and a backlog for the first round's, bounded by the open-file limit, said when short.
#include <catch2/catch.hpp>

#include <cstdint>
#include <string>

#include "launcher/rendezvous/agent_store_sizing.hpp"
#include "launcher/net/open_files.hpp"

using ddp::launch::net::kReservedFiles;
using ddp::launch::rendezvous::size_agent_store;

TEST_CASE("agent store sizing: two connections per node and a backlog for them, no fixed cap") {
  for (size_t nodes : {1u, 64u, 4096u, 16384u}) {
    INFO(nodes << " nodes");
    const auto s = size_agent_store(nodes, 1u << 20, 1u << 20);
    CHECK(s.warnings.empty());
    CHECK(s.max_connections == 2 * nodes + 64);
    CHECK(s.backlog == static_cast<int>(std::max<size_t>(2 * nodes, 128)));
  }
  CHECK(size_agent_store(98304, SIZE_MAX, std::nullopt).max_connections == 2 * 98304 + 64);
}

TEST_CASE("agent store sizing: a short open-file limit or somaxconn is said, with the figure to set") {
  // 20000 files hold 9872 nodes' two connections: a job of up to 16384 is told what it needs.
  auto s = size_agent_store(16384, 20000, 65535);
  CHECK(s.max_connections == 20000 - kReservedFiles);
  REQUIRE(s.warnings.size() == 1);
  CHECK_THAT(s.warnings[0],
             Catch::Contains("19744 connections") && Catch::Contains("it holds 9872 nodes, more are refused") &&
                 Catch::Contains("ulimit -Hn") && Catch::Contains(std::to_string(2 * 16384 + kReservedFiles)));
  s = size_agent_store(4096, 1u << 20, 4096);
  REQUIRE(s.warnings.size() == 1);
  CHECK_THAT(s.warnings[0], Catch::Contains("somaxconn is 4096, below the 8192") &&
                                Catch::Contains("sysctl -w net.core.somaxconn=8192"));
  CHECK(size_agent_store(2048, 1u << 20, 4096).warnings.empty());
}
