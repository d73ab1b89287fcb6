// Pure bucket assignment (no torch state): groups parameters, in the given order, into buckets
// that never mix dtype/device, closing a bucket once it reaches its size limit (first limit for
// the first bucket of each dtype/device, then the next limits; the last limit repeats).
#pragma once

#include <cstddef>
#include <string>
#include <vector>

namespace ddp::detail {

struct BucketInput {
  size_t bytes;     // numel * element size
  std::string key;  // dtype + device; buckets never mix keys
};

// `order` lists parameter indices in the order they should fill buckets. Returns buckets of
// parameter indices; bucket order = the order in which each bucket was started.
std::vector<std::vector<size_t>> assign_buckets(const std::vector<BucketInput>& params,
                                                const std::vector<size_t>& order, const std::vector<size_t>& limits);

}  // namespace ddp::detail
