// The workers' socket interface (worker/socket_interface): the interface that holds this node's
// rendezvous address becomes GLOO_SOCKET_IFNAME and NCCL_SOCKET_IFNAME (=IF), unless the user
// set them; nothing on loopback, for an address no interface holds, or a name that does not
// resolve; the start line, and the warning when the host name resolves to loopback. Also the
// lookups of this machine (os/interfaces): the loopback interface holds 127.0.0.1.
#include <catch2/catch.hpp>

#include <algorithm>

#include "launcher/os/interfaces.hpp"
#include "launcher/worker/socket_interface.hpp"

using namespace ddp::launch;
using Catch::Matchers::Contains;
using Catch::Matchers::StartsWith;

namespace {

// A node known as 10.0.0.2 on eth1, also holding fd00::2 there, whose host name is loopback.
worker::SocketInterfaceInputs node_at(const std::string& addr) {
  worker::SocketInterfaceInputs in;
  in.node_addr = addr;
  in.node_addresses = {addr};
  in.job_host = "10.0.0.1";
  in.interfaces = {{"lo", "127.0.0.1"}, {"eth0", "192.168.1.5"}, {"eth1", "10.0.0.2"},
                   {"lo", "::1"},       {"eth1", "fd00::2"},     {"eth1", "fe80::1"}};
  in.host_name = "gpu2";
  in.host_name_addresses = {"127.0.0.1"};
  return in;
}

using Vars = std::vector<std::pair<std::string, std::string>>;

}  // namespace

TEST_CASE("socket interface: the interface that holds the node's address, both variables, one line") {
  auto in = node_at("10.0.0.2");
  in.host_name_addresses = {"10.0.0.2"};
  const auto plan = worker::plan_socket_interface(in, {});
  CHECK(plan.interface == "eth1");
  CHECK(plan.address == "10.0.0.2");
  CHECK(plan.variables == Vars{{"GLOO_SOCKET_IFNAME", "eth1"}, {"NCCL_SOCKET_IFNAME", "=eth1"}});
  REQUIRE(plan.notices.size() == 1);  // the host name is not loopback: no warning
  CHECK(plan.notices[0] ==
        "workers use interface eth1 (10.0.0.2, this node's address in the rendezvous); "
        "GLOO_SOCKET_IFNAME/NCCL_SOCKET_IFNAME set");
}

TEST_CASE("socket interface: IPv6, a name resolved first (the first address an interface holds)") {
  auto in = node_at("fd00::2");
  CHECK(worker::plan_socket_interface(in, {}).interface == "eth1");
  in.node_addr = "gpu2.cluster";
  in.node_addresses = {"127.0.1.1", "203.0.113.9", "192.168.1.5", "10.0.0.2"};  // loopback, not here, eth0, eth1
  const auto plan = worker::plan_socket_interface(in, {});
  CHECK(plan.interface == "eth0");
  CHECK(plan.address == "192.168.1.5");
  CHECK_THAT(plan.notices.at(0), Contains("(gpu2.cluster = 192.168.1.5, this node's address in the rendezvous)"));
  in.node_addresses = {"fe80::1%eth1"};  // a scope on either side is not part of the address
  CHECK(worker::plan_socket_interface(in, {}).interface == "eth1");
}

TEST_CASE("socket interface: nothing where no interface holds the address, or it does not resolve") {
  auto in = node_at("203.0.113.9");  // NAT, a load balancer
  auto plan = worker::plan_socket_interface(in, {});
  CHECK(plan.interface.empty());
  CHECK(plan.variables.empty());
  CHECK(plan.notices.empty());
  in = node_at("gpu9");
  in.node_addresses = {};
  CHECK(worker::plan_socket_interface(in, {}).notices.empty());
}

TEST_CASE("socket interface: nothing on loopback (a job on one machine, a node known by a loopback address)") {
  for (const char* addr : {"127.0.0.1", "127.0.1.1", "::1", "localhost"}) {
    auto in = node_at(addr);
    in.interfaces.push_back({"lo", "127.0.1.1"});
    CHECK(worker::plan_socket_interface(in, {}).variables.empty());
    CHECK_FALSE(worker::socket_interface_wanted(addr, "10.0.0.1", {}));
  }
  auto in = node_at("10.0.0.2");
  for (const char* job : {"127.0.0.1", "localhost", "::1"}) {
    in.job_host = job;
    CHECK(worker::plan_socket_interface(in, {}).notices.empty());
  }
  in = node_at("gpu2");  // a name that resolves to loopback only (Debian's 127.0.1.1)
  in.node_addresses = {"127.0.1.1"};
  CHECK(worker::plan_socket_interface(in, {}).interface.empty());
  in = node_at("10.0.0.2");
  in.job_host = "";  // etcd: no store host to judge by
  CHECK(worker::plan_socket_interface(in, {}).interface == "eth1");
}

TEST_CASE("socket interface: what the user set is kept; both set: nothing at all") {
  auto in = node_at("10.0.0.2");
  CHECK(worker::plan_socket_interface(in, {{"GLOO_SOCKET_IFNAME", "eth0"}, {"NCCL_SOCKET_IFNAME", "ib"}})
            .notices.empty());
  CHECK_FALSE(worker::socket_interface_wanted("10.0.0.2", "10.0.0.1",
                                              {{"GLOO_SOCKET_IFNAME", "eth0"}, {"NCCL_SOCKET_IFNAME", "ib"}}));
  auto plan = worker::plan_socket_interface(in, {{"GLOO_SOCKET_IFNAME", "eth0"}});
  CHECK(plan.variables == Vars{{"NCCL_SOCKET_IFNAME", "=eth1"}});
  REQUIRE(plan.notices.size() == 1);  // gloo is the user's: no warning about its default
  CHECK_THAT(plan.notices[0], Contains("; NCCL_SOCKET_IFNAME set (your GLOO_SOCKET_IFNAME kept)"));
  plan = worker::plan_socket_interface(in, {{"NCCL_SOCKET_IFNAME", "=ib0"}});
  CHECK(plan.variables == Vars{{"GLOO_SOCKET_IFNAME", "eth1"}});
  CHECK_THAT(plan.notices.at(0), Contains("; GLOO_SOCKET_IFNAME set (your NCCL_SOCKET_IFNAME kept)"));
  plan = worker::plan_socket_interface(in, {{"GLOO_SOCKET_IFNAME", ""}});  // empty: not set (gloo ignores it)
  CHECK(plan.variables.size() == 2);
}

TEST_CASE("socket interface: a host name that resolves to loopback, or not at all, is warned about") {
  auto in = node_at("10.0.0.2");
  auto plan = worker::plan_socket_interface(in, {});
  REQUIRE(plan.notices.size() == 2);
  CHECK(plan.notices[1] ==
        "warning: this host's name gpu2 resolves to 127.0.0.1 (loopback) while the job reaches this node at "
        "10.0.0.2: gloo's default would give the other nodes a loopback address, so the launcher set "
        "GLOO_SOCKET_IFNAME=eth1; if that is the wrong interface, set GLOO_SOCKET_IFNAME and NCCL_SOCKET_IFNAME "
        "yourself (a host list forwards them to every host), or map the name to 10.0.0.2 in /etc/hosts");
  in.host_name_addresses = {};
  plan = worker::plan_socket_interface(in, {});
  CHECK_THAT(plan.notices.at(1), StartsWith("warning: this host's name gpu2 does not resolve here while"));
  in.host_name_addresses = {"10.0.0.2", "127.0.1.1"};  // gloo takes the first
  CHECK(worker::plan_socket_interface(in, {}).notices.size() == 1);
}

TEST_CASE("socket interface: loopback as text") {
  for (const char* h : {"localhost", "127.0.0.1", "127.0.1.1", "::1", "::ffff:127.0.0.1"})
    CHECK(worker::is_loopback_text(h));
  for (const char* h : {"10.0.0.1", "fd00::1", "gpu1", "", "::ffff:10.0.0.1", "1127.0.0.1"})
    CHECK_FALSE(worker::is_loopback_text(h));
}

TEST_CASE("os: this machine's interfaces hold 127.0.0.1 (lo); an address resolves to itself") {
  const auto interfaces = os::interface_addresses();
  CHECK(std::any_of(interfaces.begin(), interfaces.end(),
                    [](const os::InterfaceAddress& i) { return i.address == "127.0.0.1"; }));
  CHECK(os::resolve_addresses("10.0.0.2") == std::vector<std::string>{"10.0.0.2"});
  CHECK(os::resolve_addresses("fd00::2") == std::vector<std::string>{"fd00::2"});
}
