#include "launcher/cli/rendezvous_conf.hpp"

#include <fmt/format.h>

#include "launcher/base/text.hpp"
#include "launcher/cli/usage_error.hpp"

namespace ddp::launch::cli {
namespace {

double seconds(const std::string& key, const std::string& value) {
  auto s = parse_seconds(value, SecondsFloor::kPositive);
  if (!s) usage_error(fmt::format("--rdzv-conf {}={}: expected a number of seconds > 0", key, value));
  return *s;
}

// Applies one key=value item to conf.
void apply_item(const std::string& key, const std::string& v, RendezvousConf& conf) {
  if (key == "join_timeout" || key == "timeout") conf.join_timeout_s = seconds(key, v);
  else if (key == "last_call_timeout") conf.last_call_timeout_s = seconds(key, v);
  else if (key == "heartbeat_interval" || key == "keep_alive_interval") conf.heartbeat_interval_s = seconds(key, v);
  else if (key == "heartbeat_timeout") conf.heartbeat_timeout_s = seconds(key, v);
  else if (key == "token") conf.token = v;
  else if (key == "is_host") conf.is_host = (v == "1" || v == "true" || v == "True");
  else if (key == "bind_all") conf.bind_all = (v == "1" || v == "true" || v == "True");
  else if (key == "protocol") {
    if (v != "http" && v != "https") usage_error(fmt::format("--rdzv-conf protocol={}: expected http or https", v));
    conf.https = v == "https";
  } else if (key == "cacert" || key == "ca_cert") conf.cacert = v;
  else if (key == "cert") conf.cert = v;
  else if (key == "key") conf.key = v;
  else if (key == "username" || key == "user") conf.username = v;
  else if (key == "password_file") conf.password_file = v;
  else if (key == "password")
    usage_error(
        "--rdzv-conf password= would show the password to anyone who runs ps; put it in "
        "DDP_LAUNCH_ETCD_PASSWORD or in a file named by --rdzv-conf password_file=PATH");
  else if (key == "close_timeout" || key == "keep_alive_max_attempt" || key == "read_timeout" || key == "store_type" ||
           key == "use_libuv")
    return;  // torchrun keys with no meaning here
  else conf.ignored_keys.push_back(key);
}

// v without one pair of matching surrounding quotes ('...' or "..."), as a shell would
// have removed them; stripped is set when it had them.
std::string unquote(const std::string& v, bool& stripped) {
  std::string t = trim(v);
  if (t.size() < 2 || (t.front() != '\'' && t.front() != '"') || t.back() != t.front()) return t;
  stripped = true;
  return trim(t.substr(1, t.size() - 2));
}

}  // namespace

RendezvousConf parse_rdzv_conf(const std::string& value, const Environment& env) {
  RendezvousConf conf;
  if (auto token = lookup(env, "DDP_LAUNCH_RDZV_TOKEN")) conf.token = *token;
  if (auto password = lookup(env, "DDP_LAUNCH_ETCD_PASSWORD")) conf.password = *password;
  const std::string whole = unquote(value, conf.quotes_stripped);
  if (whole.empty()) return conf;
  for (const auto& quoted_item : split(whole, ',')) {
    const std::string item = unquote(quoted_item, conf.quotes_stripped);
    auto kv = split_once(item, '=');
    if (!kv) usage_error(fmt::format("--rdzv-conf expects key=value items, got '{}'", item));
    apply_item(trim(kv->first), unquote(kv->second, conf.quotes_stripped), conf);
  }
  if (conf.cert.empty() != conf.key.empty())
    usage_error("--rdzv-conf cert= and key= go together: the client certificate and its private key");
  if (conf.heartbeat_timeout_s <= conf.heartbeat_interval_s)
    usage_error("--rdzv-conf heartbeat_timeout must be longer than heartbeat_interval");
  return conf;
}

}  // namespace ddp::launch::cli
