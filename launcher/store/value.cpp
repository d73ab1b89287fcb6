#include "launcher/store/value.hpp"

#include <fmt/format.h>

#include <charconv>

#include "launcher/store/store.hpp"

namespace ddp::launch::store {

int64_t add_to_value(const std::string& key, const std::string& current, int64_t delta) {
  int64_t base = 0;
  if (!current.empty()) {
    const char* end = current.data() + current.size();
    auto [ptr, ec] = std::from_chars(current.data(), end, base);
    if (ec != std::errc() || ptr != end) {
      std::string shown = current.substr(0, 40);
      for (char& c : shown)
        if (static_cast<unsigned char>(c) < 0x20 || static_cast<unsigned char>(c) > 0x7e) c = '?';
      throw StoreError(fmt::format("cannot add to key '{}': its value '{}{}' is not an integer", key, shown,
                                   current.size() > 40 ? "..." : ""));
    }
  }
  int64_t result = 0;
  if (__builtin_add_overflow(base, delta, &result))
    throw StoreError(fmt::format("cannot add {} to key '{}': int64 overflow", delta, key));
  return result;
}

}  // namespace ddp::launch::store
