// PrefixStore: namespaces every key as prefix + "/" + key over another Store (per job,
// per round, per attempt). Does not own the inner store, which must outlive it.
// As thread-safe as the inner store; blocks where the inner store blocks.
#pragma once

#include "launcher/store/store.hpp"

namespace ddp::launch::store {

class PrefixStore : public Store {
 public:
  PrefixStore(std::string prefix, Store& inner) : prefix_(std::move(prefix)), inner_(inner) {}

  void set(const std::string& key, const std::string& value) override;
  std::string get(const std::string& key, Duration timeout) override;
  int64_t add(const std::string& key, int64_t delta) override;
  std::string compare_set(const std::string& key, const std::string& expected, const std::string& desired) override;
  bool wait(const std::vector<std::string>& keys, Duration timeout) override;
  bool check(const std::vector<std::string>& keys) override;
  bool remove(const std::string& key) override;
  std::vector<std::string> multi_get(const std::vector<std::string>& keys, Duration timeout) override;
  void multi_set(const std::vector<std::pair<std::string, std::string>>& items) override;
  std::optional<std::string> try_get(const std::string& key) override;

  const std::string& prefix() const { return prefix_; }
  std::string full_key(const std::string& key) const { return prefix_ + "/" + key; }

 private:
  std::vector<std::string> full_keys(const std::vector<std::string>& keys) const;

  std::string prefix_;
  Store& inner_;
};

}  // namespace ddp::launch::store
