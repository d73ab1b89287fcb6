// A real etcd for tests: one member or a three-member cluster on loopback ports it picks,
// its data in a temp dir, every member SIGKILLed when the object goes. Optionally TLS on the
// client port (a throwaway CA and server certificate made with openssl). require_etcd()
// ends the test with code 77 (CTest: skipped) where the etcd binary is missing. Blocking;
// for tests only.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "tests/support/skip.hpp"
#include "tests/support/test_support.hpp"

namespace ddp::test {

// Exits the process with 77 (skipped) when `etcd` is not on PATH (or /usr/bin); the same
// for etcdctl: require_binary("etcdctl", "etcd-client") (tests/support/skip.hpp).
void require_etcd();

// A throwaway CA and a server certificate for 127.0.0.1/localhost, made with openssl.
struct TestCerts {
  explicit TestCerts(const TempDir& dir);
  std::string ca, server_cert, server_key;
};

class EtcdCluster {
 public:
  // Starts `members` members (TLS on the client port when certs is given) and waits until
  // the cluster answers (has a leader); throws std::runtime_error with the members' logs.
  explicit EtcdCluster(int members, const TestCerts* certs = nullptr);
  ~EtcdCluster();
  EtcdCluster(const EtcdCluster&) = delete;
  EtcdCluster& operator=(const EtcdCluster&) = delete;

  std::string endpoint(int i) const;  // "127.0.0.1:PORT"
  std::string endpoints() const;      // every member's, comma-separated, member 0 first
  void kill(int i);                   // SIGKILL member i
  void restart(int i);                // starts member i again (same data, same ports)
  // Runs etcdctl against member 0 (plain HTTP clusters); its exit code.
  int etcdctl(const std::vector<std::string>& args, const std::string& user = "");
  // How many keys exist under prefix (via member 0, plain HTTP, no auth).
  long count_keys(const std::string& prefix);

 private:
  std::vector<std::string> member_argv(int i) const;
  TempDir dir_;
  const TestCerts* certs_;
  std::string token_;
  std::vector<int> client_ports_, peer_ports_;
  std::vector<std::unique_ptr<Background>> members_;
};

}  // namespace ddp::test
