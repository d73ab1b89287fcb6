#include "launcher/etcd/etcd_codec.hpp"

#include <array>
#include <stdexcept>

#include <nlohmann/json.hpp>

#include "launcher/base/host_port.hpp"

namespace ddp::launch::etcd {
namespace {

using nlohmann::json;

constexpr const char* kAlphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

// nlohmann's accessors (value(), get()) throw on a field of the wrong type: a reply that is
// not etcd's. The parse_* that use them read through this (parse_error catches its own).
template <class F>
auto reading(const char* what, F f) -> decltype(f()) {
  try {
    return f();
  } catch (const json::exception& e) {
    throw EtcdProtocolError(std::string("etcd sent a ") + what + " reply of an unexpected shape: " + e.what());
  }
}

json parse_json(const std::string& body) {
  json j = json::parse(body, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object())
    throw EtcdProtocolError("etcd sent a reply that is not a JSON object: '" + body.substr(0, 200) + "'");
  return j;
}

// grpc-gateway writes int64 as a string; accept numbers too. Missing = 0.
int64_t int64_field(const json& j, const char* name) {
  auto it = j.find(name);
  if (it == j.end() || it->is_null()) return 0;
  if (it->is_number_integer()) return it->get<int64_t>();
  if (it->is_string()) {
    try {
      return std::stoll(it->get<std::string>());
    } catch (const std::exception&) {  // reported below with the field's name
    }
  }
  throw EtcdProtocolError(std::string("etcd sent a field '") + name + "' that is not a number: " + it->dump());
}

std::string bytes_field(const json& j, const char* name) {
  auto it = j.find(name);
  if (it == j.end() || it->is_null()) return "";
  if (!it->is_string()) throw EtcdProtocolError(std::string("etcd sent a field '") + name + "' that is not a string");
  auto decoded = base64_decode(it->get<std::string>());
  if (!decoded) throw EtcdProtocolError(std::string("etcd sent a field '") + name + "' that is not base64");
  return *decoded;
}

KeyValue key_value(const json& j) {
  KeyValue kv;
  kv.key = bytes_field(j, "key");
  kv.value = bytes_field(j, "value");
  kv.create_revision = int64_field(j, "create_revision");
  kv.mod_revision = int64_field(j, "mod_revision");
  kv.lease = int64_field(j, "lease");
  return kv;
}

std::vector<KeyValue> key_values(const json& j) {
  std::vector<KeyValue> out;
  auto it = j.find("kvs");
  if (it != j.end() && it->is_array())
    for (const auto& kv : *it) out.push_back(key_value(kv));
  return out;
}

int64_t header_revision(const json& j) {
  auto it = j.find("header");
  return it == j.end() ? 0 : int64_field(*it, "revision");
}

const char* target_name(Compare::Target t) {
  switch (t) {
    case Compare::Target::kCreateRevision: return "CREATE";
    case Compare::Target::kModRevision: return "MOD";
    case Compare::Target::kValue: return "VALUE";
  }
  return "VALUE";
}

json compare_json(const Compare& c) {
  json j = {{"key", base64_encode(c.key)}, {"result", "EQUAL"}, {"target", target_name(c.target)}};
  if (c.target == Compare::Target::kCreateRevision) j["create_revision"] = std::to_string(c.revision);
  else if (c.target == Compare::Target::kModRevision) j["mod_revision"] = std::to_string(c.revision);
  else j["value"] = base64_encode(c.value);
  return j;
}

json put_json(const PutOp& put) {
  json j = {{"key", base64_encode(put.key)}, {"value", base64_encode(put.value)}};
  if (put.lease != 0) j["lease"] = std::to_string(put.lease);
  return j;
}

WatchBatch parse_watch_json(const json& j, const std::string& line) {
  if (auto err = j.find("error"); err != j.end())
    throw EtcdProtocolError("etcd ended the watch: " +
                            (err->is_object() ? err->value("message", err->dump()) : err->dump()));
  auto result = j.find("result");
  if (result == j.end())
    throw EtcdProtocolError("etcd sent a watch message without a result: '" + line.substr(0, 200) + "'");
  WatchBatch w;
  w.created = result->value("created", false);
  w.canceled = result->value("canceled", false);
  w.compact_revision = int64_field(*result, "compact_revision");
  if (auto events = result->find("events"); events != result->end() && events->is_array())
    w.events = static_cast<int>(events->size());
  return w;
}

ErrorReply parse_error_json(const std::string& body) {
  json j = json::parse(body, nullptr, false);
  if (j.is_discarded() || !j.is_object()) return {0, body.substr(0, 200)};
  if (auto e = j.find("error"); e != j.end() && e->is_object()) j = *e;  // streams wrap it
  ErrorReply r;
  r.code = j.value("code", 0);
  r.message = j.value("message", j.value("error", std::string()));
  return r;
}

}  // namespace

std::string base64_encode(std::string_view bytes) {
  std::string out;
  out.reserve((bytes.size() + 2) / 3 * 4);
  size_t i = 0;
  for (; i + 2 < bytes.size(); i += 3) {
    uint32_t n = (uint8_t(bytes[i]) << 16) | (uint8_t(bytes[i + 1]) << 8) | uint8_t(bytes[i + 2]);
    for (int shift : {18, 12, 6, 0}) out += kAlphabet[(n >> shift) & 63];
  }
  if (size_t rest = bytes.size() - i) {
    uint32_t n = uint8_t(bytes[i]) << 16;
    if (rest == 2) n |= uint8_t(bytes[i + 1]) << 8;
    out += kAlphabet[(n >> 18) & 63];
    out += kAlphabet[(n >> 12) & 63];
    out += rest == 2 ? kAlphabet[(n >> 6) & 63] : '=';
    out += '=';
  }
  return out;
}

std::optional<std::string> base64_decode(std::string_view text) {
  std::array<int, 256> value{};
  value.fill(-1);
  for (int i = 0; i < 64; ++i) value[uint8_t(kAlphabet[i])] = i;
  if (text.size() % 4 != 0) return std::nullopt;
  std::string out;
  out.reserve(text.size() / 4 * 3);
  for (size_t i = 0; i < text.size(); i += 4) {
    uint32_t n = 0;
    int pad = 0;
    for (size_t k = 0; k < 4; ++k) {
      const char c = text[i + k];
      if (c == '=' && i + 4 == text.size() && k >= 2) {
        ++pad;
        n <<= 6;
        continue;
      }
      if (pad > 0 || value[uint8_t(c)] < 0) return std::nullopt;
      n = (n << 6) | uint32_t(value[uint8_t(c)]);
    }
    out += char((n >> 16) & 0xff);
    if (pad < 2) out += char((n >> 8) & 0xff);
    if (pad < 1) out += char(n & 0xff);
  }
  return out;
}

std::string prefix_range_end(const std::string& prefix) {
  std::string end = prefix;
  while (!end.empty()) {
    if (uint8_t(end.back()) < 0xff) {
      end.back() = char(uint8_t(end.back()) + 1);
      return end;
    }
    end.pop_back();
  }
  return std::string(1, '\0');
}

std::vector<Endpoint> parse_endpoints(const std::string& text, int default_port, bool* https_seen) {
  if (text.find_first_not_of(" \t,") == std::string::npos)
    throw HostPortError("expected at least one etcd member as HOST[:PORT][,HOST[:PORT]...], got '" + text + "'");
  return endpoints_of(parse_http_endpoint_list(text, default_port), default_port, https_seen);
}

std::vector<Endpoint> endpoints_of(const std::vector<HttpEndpoint>& members, int default_port, bool* https_seen) {
  std::vector<Endpoint> out;
  for (const HttpEndpoint& e : members) {
    if (https_seen && e.https) *https_seen = true;
    out.push_back(Endpoint{e.address.host, e.address.port != 0 ? e.address.port : default_port});
  }
  return out;
}

std::string endpoints_text(const std::vector<Endpoint>& endpoints) {
  std::string out;
  for (const auto& e : endpoints) out += (out.empty() ? "" : ", ") + e.text();
  return out;
}

std::string range_body(const std::string& key, const std::string& range_end, bool count_only) {
  json j = {{"key", base64_encode(key)}};
  if (!range_end.empty()) j["range_end"] = base64_encode(range_end);
  if (count_only) j["count_only"] = true;
  return j.dump();
}

std::string put_body(const PutOp& put) { return put_json(put).dump(); }

std::string delete_body(const std::string& key, const std::string& range_end) {
  json j = {{"key", base64_encode(key)}};
  if (!range_end.empty()) j["range_end"] = base64_encode(range_end);
  return j.dump();
}

std::string txn_body(const TxnRequest& txn) {
  json j = {{"compare", json::array()}, {"success", json::array()}, {"failure", json::array()}};
  for (const auto& c : txn.compare) j["compare"].push_back(compare_json(c));
  for (const auto& p : txn.success) j["success"].push_back({{"request_put", put_json(p)}});
  if (!txn.failure_range.empty())
    j["failure"].push_back({{"request_range", {{"key", base64_encode(txn.failure_range)}}}});
  return j.dump();
}

std::string lease_grant_body(int64_t ttl_s) { return json{{"TTL", std::to_string(ttl_s)}, {"ID", "0"}}.dump(); }
std::string lease_id_body(int64_t id) { return json{{"ID", std::to_string(id)}}.dump(); }

std::string watch_body(const std::string& key, int64_t start_revision) {
  return json{{"create_request", {{"key", base64_encode(key)}, {"start_revision", std::to_string(start_revision)}}}}
      .dump();
}

std::string authenticate_body(const std::string& name, const std::string& password) {
  return json{{"name", name}, {"password", password}}.dump();
}

RangeResult parse_range(const std::string& body) {
  return reading("range", [&] {
    json j = parse_json(body);
    RangeResult r;
    r.revision = header_revision(j);
    r.count = int64_field(j, "count");
    r.kvs = key_values(j);
    return r;
  });
}

int64_t parse_revision(const std::string& body) {
  return reading("put", [&] { return header_revision(parse_json(body)); });
}

int64_t parse_deleted(const std::string& body) {
  return reading("deleterange", [&] { return int64_field(parse_json(body), "deleted"); });
}

TxnResult parse_txn(const std::string& body) {
  return reading("txn", [&] {
    json j = parse_json(body);
    TxnResult t;
    t.revision = header_revision(j);
    t.succeeded = j.value("succeeded", false);
    auto responses = j.find("responses");
    if (!t.succeeded && responses != j.end() && responses->is_array())
      for (const auto& r : *responses)
        if (auto range = r.find("response_range"); range != r.end()) t.failure_kvs = key_values(*range);
    return t;
  });
}

int64_t parse_lease_id(const std::string& body) {
  int64_t id = reading("lease grant", [&] { return int64_field(parse_json(body), "ID"); });
  if (id == 0) throw EtcdProtocolError("etcd granted no lease: '" + body.substr(0, 200) + "'");
  return id;
}

int64_t parse_lease_ttl(const std::string& body) {
  return reading("keepalive", [&] {
    // keepalive is a stream: the gateway wraps each message in {"result": ...}.
    json j = parse_json(body.substr(0, body.find('\n')));
    auto result = j.find("result");
    return int64_field(result == j.end() ? j : *result, "TTL");
  });
}

std::string parse_token(const std::string& body) {
  json j = parse_json(body);
  auto it = j.find("token");
  if (it == j.end() || !it->is_string() || it->get<std::string>().empty())
    throw EtcdProtocolError("etcd's authenticate reply holds no token");
  return it->get<std::string>();
}

WatchBatch parse_watch_line(const std::string& line) {
  return reading("watch", [&] { return parse_watch_json(parse_json(line), line); });
}

ErrorReply parse_error(const std::string& body) {
  try {
    return parse_error_json(body);
  } catch (const json::exception&) {  // an error body of an odd shape: keep its text
    return {0, body.substr(0, 200)};
  }
}

}  // namespace ddp::launch::etcd
