// Parameter lists compared across a group's members (DDP's and ZeroRedundancyOptimizer's
// construction checks): each member all-gathers one fixed-width row per parameter (dim, dtype,
// up to six sizes) and gets the first parameter whose row differs from the lowest member's, so
// that every member throws the same error in its caller's words. Collective; the members must
// already agree on the number of parameters.
#pragma once

#include <algorithm>
#include <optional>
#include <string>
#include <vector>

#include <torch/torch.h>

#include "ddp/process_group.hpp"

namespace ddp::detail {

struct SignatureMismatch {
  size_t index;      // position in the parameter list
  int rank, other;   // global ranks: the lowest member and the one that differs
  std::string mine;  // "[3, 4] Float" on `rank`
  std::string theirs;
};

inline constexpr int64_t kSignatureWidth = 8;  // per parameter: ndim, dtype, sizes[0..5]

inline std::string signature_text(const int64_t* row) {
  std::string s = "[";
  for (int64_t d = 0; d < std::min<int64_t>(row[0], 6); ++d) s += (d ? ", " : "") + std::to_string(row[2 + d]);
  if (row[0] > 6) s += ", ...";
  return s + "] " + c10::toString(static_cast<c10::ScalarType>(row[1]));
}

inline std::optional<SignatureMismatch> first_parameter_mismatch(const std::vector<torch::Tensor>& params,
                                                                 const Group& group) {
  auto sig = torch::full({static_cast<int64_t>(params.size()) * kSignatureWidth}, -1, torch::kLong);
  int64_t* s = sig.data_ptr<int64_t>();
  for (size_t i = 0; i < params.size(); ++i) {
    int64_t* row = s + i * kSignatureWidth;
    row[0] = params[i].dim();
    row[1] = static_cast<int64_t>(params[i].scalar_type());
    for (int64_t d = 0; d < std::min<int64_t>(params[i].dim(), 6); ++d) row[2 + d] = params[i].size(d);
  }
  const auto sigs = all_gather(sig, group);
  const auto ranks = group.ranks();
  const int64_t* a = sigs[0].data_ptr<int64_t>();
  for (size_t r = 1; r < sigs.size(); ++r) {
    const int64_t* b = sigs[r].data_ptr<int64_t>();
    for (size_t i = 0; i < params.size(); ++i) {
      if (!std::equal(a + i * kSignatureWidth, a + (i + 1) * kSignatureWidth, b + i * kSignatureWidth))
        return SignatureMismatch{i, ranks[0], ranks[r], signature_text(a + i * kSignatureWidth),
                                 signature_text(b + i * kSignatureWidth)};
    }
  }
  return std::nullopt;
}

}  // namespace ddp::detail
