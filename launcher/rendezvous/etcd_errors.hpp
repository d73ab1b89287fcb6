// How the etcd layer's errors reach the rendezvous, in one place: every etcd::EtcdError
// becomes a store::StoreUnavailable (the agent reports it, exit 124); a reply that is not
// etcd's gets the store's address in front (its own message names no member). EtcdStore
// and the abort wait thread's waiter translate only through here; EtcdStore::open first retries
// EtcdUnavailable until the join timeout (etcd may come up after the launchers).
#pragma once

#include <string>

#include "launcher/etcd/etcd_error.hpp"
#include "launcher/store/store.hpp"

namespace ddp::launch::rendezvous {

inline store::StoreUnavailable as_store_error(const etcd::EtcdError& e, const std::string& address) {
  if (dynamic_cast<const etcd::EtcdProtocolError*>(&e)) return store::StoreUnavailable(address + ": " + e.what());
  return store::StoreUnavailable(e.what());
}

// f(), its etcd errors translated. address: "etcd at h1:p1, h2:p2".
template <class F>
auto with_store_errors(const std::string& address, F&& f) -> decltype(f()) {
  try {
    return f();
  } catch (const etcd::EtcdError& e) {
    throw as_store_error(e, address);
  }
}

}  // namespace ddp::launch::rendezvous
