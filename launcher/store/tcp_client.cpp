#include "launcher/store/tcp_client.hpp"

#include "launcher/store/tcp_connection.hpp"

namespace ddp::launch::store {

TcpStoreClient::TcpStoreClient(std::string host, uint16_t port, ClientOptions options)
    : conn_(std::make_unique<Connection>(std::move(host), port, std::move(options))) {}

TcpStoreClient::~TcpStoreClient() = default;

namespace {
Request make(Op op, std::vector<std::string> keys = {}, std::vector<std::string> values = {}) {
  Request q;
  q.op = op;
  q.keys = std::move(keys);
  q.values = std::move(values);
  return q;
}
}  // namespace

void TcpStoreClient::set(const std::string& key, const std::string& value) {
  conn_->call(make(Op::kSet, {key}, {value}));
}

std::string TcpStoreClient::get(const std::string& key, Duration timeout) { return multi_get({key}, timeout).front(); }

int64_t TcpStoreClient::add(const std::string& key, int64_t delta) {
  Request q = make(Op::kAdd, {key});
  q.delta = delta;
  return conn_->call(q).number;
}

std::string TcpStoreClient::compare_set(const std::string& key, const std::string& expected,
                                        const std::string& desired) {
  return conn_->call(make(Op::kCompareSet, {key}, {expected, desired})).values.at(0);
}

bool TcpStoreClient::wait(const std::vector<std::string>& keys, Duration timeout) {
  Request q = make(Op::kWait, keys);
  q.timeout_ms = to_wire_ms(timeout);
  return conn_->call(q).status == Status::kOk;
}

bool TcpStoreClient::check(const std::vector<std::string>& keys) { return conn_->call(make(Op::kCheck, keys)).flag; }

bool TcpStoreClient::remove(const std::string& key) { return conn_->call(make(Op::kDelete, {key})).flag; }

std::vector<std::string> TcpStoreClient::multi_get(const std::vector<std::string>& keys, Duration timeout) {
  Request q = make(keys.size() == 1 ? Op::kGet : Op::kMultiGet, keys);
  q.timeout_ms = to_wire_ms(timeout);
  Response r = conn_->call(q);
  if (r.status == Status::kTimeout)
    throw StoreTimeout(
        fmt::format("timed out after {} waiting for {} in the rendezvous store at {}; are the "
                    "other nodes running?",
                    seconds(timeout), describe_missing(r.values, keys.size()), conn_->endpoint()));
  if (r.values.size() != keys.size())
    throw StoreUnavailable(fmt::format("bad reply from the rendezvous store at {}: {} values for {} keys",
                                       conn_->endpoint(), r.values.size(), keys.size()));
  return std::move(r.values);
}

void TcpStoreClient::multi_set(const std::vector<std::pair<std::string, std::string>>& items) {
  Request q = make(Op::kMultiSet);
  for (const auto& [k, v] : items) {
    q.keys.push_back(k);
    q.values.push_back(v);
  }
  conn_->call(q);
}

std::optional<std::string> TcpStoreClient::try_get(const std::string& key) {
  Response r = conn_->call(make(Op::kTryGet, {key}));
  if (!r.flag) return std::nullopt;
  return r.values.at(0);
}

void TcpStoreClient::ping() { conn_->call(make(Op::kPing)); }

void TcpStoreClient::interrupt() { conn_->interrupt(); }

void TcpStoreClient::close_gracefully() { conn_->close(true); }

void TcpStoreClient::close_abruptly() { conn_->close(false); }

const std::string& TcpStoreClient::endpoint() const { return conn_->endpoint(); }

}  // namespace ddp::launch::store
