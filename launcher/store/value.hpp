// Value rules shared by MemoryStore and the server's table, so both stores agree:
// ADD treats a missing value as 0 and refuses a value that is not a decimal int64.
// Pure; thread-safe.
#pragma once

#include <cstdint>
#include <string>

namespace ddp::launch::store {

// current + delta; throws StoreError naming key when current is not an integer or overflows.
int64_t add_to_value(const std::string& key, const std::string& current, int64_t delta);

}  // namespace ddp::launch::store
