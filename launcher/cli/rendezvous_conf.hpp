// --rdzv-conf k=v,...: the rendezvous settings of a multi-node run (torchrun's keys where
// they exist; matching surrounding quotes around the whole value, an item or a value are
// dropped, as a shell would have: a Kubernetes args list passes them on verbatim), with DDP_LAUNCH_RDZV_TOKEN as the
// token's default and DDP_LAUNCH_ETCD_PASSWORD as the etcd password (never a flag: ps shows command lines). Pure; a bad
// value of a known key throws LaunchError(kUsage) naming the key; an unknown key is ignored (as torchrun does) and
// listed in ignored_keys for a warning.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "launcher/cli/environment.hpp"

namespace ddp::launch::cli {

// Seconds throughout.
struct RendezvousConf {
  double join_timeout_s = 600;            // join_timeout (static: also `timeout`)
  double last_call_timeout_s = 30;        // last_call_timeout: wait for more nodes once MIN joined
  double heartbeat_interval_s = 1;        // heartbeat_interval (alias keep_alive_interval)
  double heartbeat_timeout_s = 3;         // heartbeat_timeout: silence before a node counts as lost
  std::string token;                      // token (or env DDP_LAUNCH_RDZV_TOKEN): shared secret
  std::optional<bool> is_host;            // is_host: force hosting (or not) the agent store
  std::vector<std::string> ignored_keys;  // unknown keys, in the order given
  bool quotes_stripped = false;           // the value had quotes a shell would have removed
  bool bind_all = false;                  // bind_all: the store listens on every interface
  // --rdzv-backend=etcd (torchrun's etcd keys): TLS and user/password authentication.
  bool https = false;             // protocol=https (or http)
  std::string cacert, cert, key;  // cacert=, cert=, key=: PEM files
  std::string username;           // username=: etcd user (auth enabled)
  std::string password;           // env DDP_LAUNCH_ETCD_PASSWORD
  std::string password_file;      // password_file=: read at start (first line)
};

RendezvousConf parse_rdzv_conf(const std::string& value, const Environment& env);

}  // namespace ddp::launch::cli
