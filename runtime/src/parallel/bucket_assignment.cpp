// Bucket assignment by size and (dtype, device) key; see bucket_assignment.hpp.
#include "runtime/src/parallel/bucket_assignment.hpp"

#include <map>

namespace ddp::detail {

std::vector<std::vector<size_t>> assign_buckets(const std::vector<BucketInput>& params,
                                                const std::vector<size_t>& order, const std::vector<size_t>& limits) {
  struct Open {
    size_t bucket;  // index into result
    size_t bytes = 0;
    size_t limit_index = 0;
  };
  std::vector<std::vector<size_t>> result;
  std::map<std::string, Open> open;      // key -> bucket being filled
  std::map<std::string, size_t> closed;  // key -> how many buckets closed (limit index)
  for (size_t index : order) {
    const BucketInput& p = params.at(index);
    auto it = open.find(p.key);
    if (it == open.end()) {
      result.emplace_back();
      it = open.emplace(p.key, Open{result.size() - 1, 0, closed[p.key]}).first;
    }
    result[it->second.bucket].push_back(index);
    it->second.bytes += p.bytes;
    size_t li = std::min(it->second.limit_index, limits.empty() ? 0 : limits.size() - 1);
    size_t limit = limits.empty() ? SIZE_MAX : limits[li];
    if (it->second.bytes >= limit) {
      closed[p.key] = it->second.limit_index + 1;
      open.erase(it);
    }
  }
  return result;
}

}  // namespace ddp::detail
