// Backoff: the pause before the next try of what many launchers try at once (connecting to a
// store, looking up its name). It doubles from `first` up to `cap`, and each pause adds a random
// part of up to half of it, so that K clients that failed together do not come back together
// (a store refusing or a resolver failing K at once would see them all again at the same
// instant). Pure but for the seeded generator.
#pragma once

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <random>

namespace ddp::launch::net {

class Backoff {
 public:
  Backoff(std::chrono::milliseconds first, std::chrono::milliseconds cap, uint32_t seed = std::random_device{}())
      : next_(first), cap_(cap), rng_(seed) {}

  // The pause before the next try: next_ + [0, next_ / 2]; then next_ doubles (at most cap).
  std::chrono::milliseconds next() {
    const auto base = next_;
    next_ = std::min(next_ * 2, cap_);
    return base + std::chrono::milliseconds(rng_() % (static_cast<uint64_t>(base.count()) / 2 + 1));
  }

 private:
  std::chrono::milliseconds next_;
  std::chrono::milliseconds cap_;
  std::mt19937 rng_;
};

}  // namespace ddp::launch::net
