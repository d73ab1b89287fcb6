// store_tests' main: Catch2, except `store_tests --client-helper PORT NAME HEARTBEAT_MS`,
// which connects as a named client, sets helper/<NAME>, then sleeps until killed, so
// tests can kill -9 a real process holding a connection.
#define CATCH_CONFIG_RUNNER
#include <catch2/catch.hpp>

#include <chrono>
#include <cstring>
#include <string>
#include <thread>

#include "launcher/store/tcp_client.hpp"

int main(int argc, char** argv) {
  if (argc == 5 && std::strcmp(argv[1], "--client-helper") == 0) {
    using namespace ddp::launch::store;
    ClientOptions o;
    o.name = argv[3];
    o.heartbeat_timeout_ms = static_cast<uint32_t>(std::stoul(argv[4]));
    TcpStoreClient client("127.0.0.1", static_cast<uint16_t>(std::stoi(argv[2])), o);
    client.set(std::string("helper/") + argv[3], "up");
    for (;;) {
      std::this_thread::sleep_for(std::chrono::milliseconds(o.heartbeat_timeout_ms / 3 + 1));
      client.ping();
    }
  }
  return Catch::Session().run(argc, argv);
}
