// Store rendezvous for init_process_group: parses init_method (env://, tcp://, file://),
// hosts or connects the TCPStore (clients retry until the timeout; with
// TORCHELASTIC_USE_AGENT_STORE=True the launcher hosts it and every rank is a client, for
// env:// and tcp:// alike, as torch.distributed does), namespaces keys per restart, then
// waits until every rank has joined, naming the missing ones on timeout.
#include <sstream>

#include "runtime/src/group/group_impl.hpp"

#include <torch/csrc/distributed/c10d/HashStore.hpp>

namespace ddp::detail {
namespace {

std::string seconds(std::chrono::milliseconds ms) {
  std::ostringstream out;
  out << static_cast<double>(ms.count()) / 1000.0 << " s";
  return out.str();
}

bool starts_with(const std::string& s, const std::string& prefix) { return s.rfind(prefix, 0) == 0; }

struct HostPort {
  std::string host;
  int port = 0;
};

HostPort parse_tcp(const std::string& method) {
  std::string rest = method.substr(6);
  if (auto q = rest.find_first_of("?/"); q != std::string::npos) rest = rest.substr(0, q);
  auto colon = rest.rfind(':');
  const std::string usage = "; use tcp://HOST:PORT, e.g. tcp://10.0.0.1:29500";
  if (colon == std::string::npos || colon == 0)
    throw ConfigError("init_method '" + method + "' has no host:port" + usage);
  HostPort hp;
  hp.host = rest.substr(0, colon);
  if (hp.host.size() > 2 && hp.host.front() == '[' && hp.host.back() == ']')
    hp.host = hp.host.substr(1, hp.host.size() - 2);
  const std::string port = rest.substr(colon + 1);
  char* end = nullptr;
  long value = port.empty() ? -1 : std::strtol(port.c_str(), &end, 10);
  if (port.empty() || *end != '\0' || value < 1 || value > 65535) {
    throw ConfigError("init_method '" + method + "' has an invalid port '" + port + "'" + usage);
  }
  hp.port = static_cast<int>(value);
  return hp;
}

compat::StorePtr make_tcp_store(const HostPort& hp, int rank, bool agent_store, std::chrono::milliseconds timeout) {
  c10d::TCPStoreOptions opts;
  opts.port = static_cast<std::uint16_t>(hp.port);
  opts.isServer = rank == 0 && !agent_store;
  opts.waitWorkers = false;
  opts.timeout = timeout;
  const std::string where = hp.host + ":" + std::to_string(hp.port);
  try {
    return c10::make_intrusive<c10d::TCPStore>(hp.host, opts);
  } catch (const std::exception& e) {
    std::string cause = e.what();
    cause = cause.substr(0, cause.find('\n'));
    if (opts.isServer) {
      throw CommError("rank 0 could not host the store on " + where + ": " + cause + "; is another job using port " +
                      std::to_string(hp.port) + "? Choose a free MASTER_PORT (or tcp:// port)");
    }
    throw TimeoutError(
        "rank " + std::to_string(rank) + " could not connect to the store at " + where + " within " + seconds(timeout) +
        " (" + cause + "); " +
        (agent_store ? "is the launcher that hosts it (TORCHELASTIC_USE_AGENT_STORE=True) running? An init_method "
                       "that names a store of your own needs ddp-launch --worker-store=rank0"
                     : "is rank 0 running, and do MASTER_ADDR/MASTER_PORT name rank 0's host and port?"));
  }
}

// Every rank SETs its own key (for the timeout's message) and ADDs one to a counter; the rank
// that completes the count SETs join/all, which every rank WAITs for: three requests per rank
// and O(world) work for the store. (Waiting on every rank's key cost O(world) per rank: at
// 16384 ranks 268M key checks at the store and 4 GB of WAIT requests.)
void wait_for_all(const compat::StorePtr& store, int rank, int world, std::chrono::milliseconds timeout,
                  const std::string& where) {
  store->set("join/" + std::to_string(rank), std::vector<uint8_t>{'1'});
  if (store->add("join/count", 1) == world) store->set("join/all", std::vector<uint8_t>{'1'});
  try {
    store->wait({"join/all"}, timeout);
  } catch (const std::exception&) {
    std::string missing;  // the error path alone looks at every rank
    for (int r = 0; r < world; ++r) {
      bool joined = false;
      try {
        joined = store->check({"join/" + std::to_string(r)});
      } catch (const std::exception&) {
      }
      if (!joined) missing += (missing.empty() ? "" : ", ") + std::to_string(r);
    }
    if (missing.empty())  // every key is there: a rank joined by hand without counting itself in
      throw TimeoutError("timed out after " + seconds(timeout) + " waiting at " + where + ": every rank of " +
                         std::to_string(world) +
                         " set its join key, but not every rank added itself to join/count; a rank that joins "
                         "libddp's store by hand must ADD join/count and, when that completes it, SET join/all "
                         "(docs/runtime.md, \"Python ranks in a libddp group\")");
    throw TimeoutError("timed out after " + seconds(timeout) + " waiting for rank(s) " + missing + " of " +
                       std::to_string(world) + " to join at " + where +
                       "; are they running, with the same WORLD_SIZE and MASTER_ADDR/MASTER_PORT?");
  }
}

}  // namespace

Rendezvous connect_store(const ProcessGroupOptions& options, const WorkerEnv& env) {
  const std::string& method = options.init_method.empty() ? std::string("env://") : options.init_method;
  Rendezvous rv;
  compat::StorePtr root;
  if (method == "env://") {
    if (env.world_size == 1 && env.master_port == 0) {
      root = c10::make_intrusive<c10d::HashStore>();  // single process, no launcher: nothing to reach
      rv.where = "an in-process store";
    } else {
      if (env.master_port == 0) {
        throw ConfigError("init_method env:// needs MASTER_PORT (and MASTER_ADDR); set them or use tcp://HOST:PORT");
      }
      HostPort hp{env.master_addr, env.master_port};
      rv.where = hp.host + ":" + std::to_string(hp.port);
      root = make_tcp_store(hp, env.rank, env.use_agent_store, options.timeout);
    }
  } else if (starts_with(method, "tcp://")) {
    HostPort hp = parse_tcp(method);
    rv.where = hp.host + ":" + std::to_string(hp.port);
    root = make_tcp_store(hp, env.rank, env.use_agent_store, options.timeout);
  } else if (starts_with(method, "file://")) {
    std::string path = method.substr(7);
    if (path.empty() || path.front() != '/') {
      throw ConfigError("init_method '" + method + "' needs an absolute path; use file:///shared/dir/ddp_init");
    }
    try {
      root = c10::make_intrusive<c10d::FileStore>(path, env.world_size);
    } catch (const std::exception& e) {
      throw ConfigError("cannot use '" + path + "' as a file store: " + std::string(e.what()).substr(0, 200) +
                        "; the directory must exist and be writable by every rank");
    }
    root->setTimeout(options.timeout);
    rv.where = "file " + path;
  } else {
    throw ConfigError("init_method '" + method + "' is not supported; use env:// (MASTER_ADDR/MASTER_PORT), " +
                      "tcp://HOST:PORT or file:///PATH");
  }
  // A restarted group must never read keys written by the previous attempt.
  rv.store = c10::make_intrusive<c10d::PrefixStore>("ddp/restart" + std::to_string(env.restart_count), root);
  rv.store->setTimeout(options.timeout);
  wait_for_all(rv.store, env.rank, env.world_size, options.timeout, rv.where);
  return rv;
}

}  // namespace ddp::detail
