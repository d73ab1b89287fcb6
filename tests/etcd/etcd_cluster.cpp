#include "tests/etcd/etcd_cluster.hpp"

#include <unistd.h>

#include <csignal>
#include <cstdio>
#include <stdexcept>

#include "launcher/etcd/etcd_client.hpp"
#include "tests/support/skip.hpp"

namespace ddp::test {
namespace {

using namespace std::chrono_literals;

void openssl(const std::vector<std::string>& args) {
  std::vector<std::string> argv = {"openssl"};
  argv.insert(argv.end(), args.begin(), args.end());
  RunResult r = run(argv, {}, 60s);
  if (r.exit_code != 0) throw std::runtime_error("openssl failed: " + r.err);
}

}  // namespace

void require_etcd() { require_binary("etcd", "etcd-server"); }

TestCerts::TestCerts(const TempDir& dir)
    : ca(dir / "ca.pem"), server_cert(dir / "server.pem"), server_key(dir / "server.key") {
  const std::string ca_key = dir / "ca.key", csr = dir / "server.csr", ext = dir / "san.ext";
  openssl({"req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes", "-keyout", ca_key,
           "-out", ca, "-days", "2", "-subj", "/CN=ddp-launch test CA"});
  openssl({"req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes", "-keyout", server_key, "-out",
           csr, "-subj", "/CN=127.0.0.1"});
  write_file(ext, "subjectAltName=IP:127.0.0.1,DNS:localhost\n");
  openssl({"x509", "-req", "-in", csr, "-CA", ca, "-CAkey", ca_key, "-CAcreateserial", "-out", server_cert, "-days",
           "2", "-extfile", ext});
}

EtcdCluster::EtcdCluster(int members, const TestCerts* certs) : certs_(certs) {
  token_ = "t" + std::to_string(::getpid()) + "-" + std::to_string(free_port());
  for (int i = 0; i < members; ++i) {
    client_ports_.push_back(free_port());
    peer_ports_.push_back(free_port());
  }
  for (int i = 0; i < members; ++i) members_.push_back(std::make_unique<Background>(member_argv(i)));
  // Ready: a linearizable read answers (the cluster has a leader).
  launch::etcd::EtcdOptions o;
  for (int i = 0; i < members; ++i) o.endpoints.push_back({"127.0.0.1", client_ports_[i]});
  o.tls = certs != nullptr;
  if (certs) o.cacert = certs->ca;
  o.request_timeout = 30s;
  launch::etcd::EtcdClient client(o);
  try {
    client.range("ready?");
  } catch (const std::exception& e) {
    std::string logs;
    for (auto& m : members_) logs += m->err_so_far().substr(0, 2000);
    throw std::runtime_error(std::string("etcd did not come up: ") + e.what() + "\n" + logs);
  }
}

EtcdCluster::~EtcdCluster() = default;  // each Background SIGKILLs its member

std::vector<std::string> EtcdCluster::member_argv(int i) const {
  const std::string scheme = certs_ ? "https://" : "http://";
  std::string cluster;
  for (size_t k = 0; k < peer_ports_.size(); ++k)
    cluster += (k ? "," : "") + ("m" + std::to_string(k)) + "=http://127.0.0.1:" + std::to_string(peer_ports_[k]);
  const std::string client_url = scheme + "127.0.0.1:" + std::to_string(client_ports_[i]);
  const std::string peer_url = "http://127.0.0.1:" + std::to_string(peer_ports_[i]);
  std::vector<std::string> argv = {find_binary("etcd"),
                                   "--name=m" + std::to_string(i),
                                   "--data-dir=" + (dir_ / ("m" + std::to_string(i))),
                                   "--listen-client-urls=" + client_url,
                                   "--advertise-client-urls=" + client_url,
                                   "--listen-peer-urls=" + peer_url,
                                   "--initial-advertise-peer-urls=" + peer_url,
                                   "--initial-cluster=" + cluster,
                                   "--initial-cluster-state=new",
                                   "--initial-cluster-token=" + token_,
                                   "--log-level=warn"};
  if (certs_) {
    argv.push_back("--cert-file=" + certs_->server_cert);
    argv.push_back("--key-file=" + certs_->server_key);
  }
  return argv;
}

std::string EtcdCluster::endpoint(int i) const { return "127.0.0.1:" + std::to_string(client_ports_[i]); }

std::string EtcdCluster::endpoints() const {
  std::string out;
  for (size_t i = 0; i < client_ports_.size(); ++i) out += (i ? "," : "") + endpoint(static_cast<int>(i));
  return out;
}

void EtcdCluster::kill(int i) {
  members_[i]->signal(SIGKILL);
  members_[i]->wait(10s);
}

void EtcdCluster::restart(int i) { members_[i] = std::make_unique<Background>(member_argv(i)); }

int EtcdCluster::etcdctl(const std::vector<std::string>& args, const std::string& user) {
  std::vector<std::string> argv = {"etcdctl", "--endpoints=" + endpoint(0)};
  if (!user.empty()) argv.push_back("--user=" + user);
  argv.insert(argv.end(), args.begin(), args.end());
  RunResult r = run(argv, {{"ETCDCTL_API", "3"}}, 60s);
  if (r.exit_code != 0) std::fprintf(stderr, "etcdctl failed: %s%s\n", r.out.c_str(), r.err.c_str());
  return r.exit_code;
}

long EtcdCluster::count_keys(const std::string& prefix) {
  launch::etcd::EtcdOptions o;
  o.endpoints.push_back({"127.0.0.1", client_ports_[0]});
  launch::etcd::EtcdClient client(o);
  return static_cast<long>(client.range(prefix, launch::etcd::prefix_range_end(prefix), true).count);
}

}  // namespace ddp::test
