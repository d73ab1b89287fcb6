// Fingerprint layout: [kind, dtype, root, reduce_op, ndim, d0..d5, send[size], recv[size]];
// dims past the sixth are folded into d5 (their product), enough to compare and to print.
#include "runtime/src/group/shape_check.hpp"

#include <algorithm>

namespace ddp::detail::shape_check {
namespace {

thread_local int skip_depth = 0;
constexpr size_t kDims = 6;
constexpr size_t kHeader = 5 + kDims;
const char* const kReduceNames[] = {"sum", "avg", "product", "min", "max", "band", "bor", "bxor"};

int64_t numel(const Call& c) {
  int64_t n = 1;
  for (int64_t d : c.shape) n *= d;
  return n;
}

std::string shape_text(const Call& c) {
  std::string s = "[";
  for (size_t i = 0; i < c.shape.size(); ++i) s += (i ? ", " : "") + std::to_string(c.shape[i]);
  return s + "]";
}

std::string list_text(const std::vector<int64_t>& v) {
  std::string s = "[";
  for (size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + std::to_string(v[i]);
  return s + "]";
}

}  // namespace

Skip::Skip() { ++skip_depth; }
Skip::~Skip() { --skip_depth; }
bool skipped() { return skip_depth > 0; }

size_t length(int size) { return kHeader + 2 * static_cast<size_t>(size); }

std::vector<int64_t> encode(const Call& call, int size) {
  std::vector<int64_t> v(length(size), 0);
  v[0] = call.kind;
  v[1] = call.dtype;
  v[2] = call.root;
  v[3] = call.reduce_op;
  v[4] = static_cast<int64_t>(std::min(call.shape.size(), kDims));
  for (size_t i = 0; i < call.shape.size(); ++i) {
    const size_t slot = std::min(i, kDims - 1);
    v[5 + slot] = i < kDims ? call.shape[i] : v[5 + slot] * call.shape[i];
  }
  for (size_t j = 0; j < call.send_elems.size() && j < static_cast<size_t>(size); ++j) {
    v[kHeader + j] = call.send_elems[j];
    v[kHeader + static_cast<size_t>(size) + j] = call.recv_elems[j];
  }
  if (call.send_elems.empty()) v[kHeader] = -1;  // "no splits"
  return v;
}

Call decode(const int64_t* d, int size) {
  Call c;
  c.kind = d[0];
  c.dtype = d[1];
  c.root = d[2];
  c.reduce_op = d[3];
  c.shape.assign(d + 5, d + 5 + std::clamp<int64_t>(d[4], 0, kDims));
  if (d[kHeader] != -1) {
    c.send_elems.assign(d + kHeader, d + kHeader + size);
    c.recv_elems.assign(d + kHeader + size, d + kHeader + 2 * size);
  }
  return c;
}

std::string mismatch(const std::vector<Call>& calls, const std::vector<int>& ranks, const char* (*op_name)(uint32_t),
                     std::string (*dtype_name)(int64_t)) {
  auto describe = [&](size_t i) {
    const Call& c = calls[i];
    std::string s = "rank " + std::to_string(ranks[i]) + ": " + op_name(static_cast<uint32_t>(c.kind));
    if (c.reduce_op >= 0 && c.reduce_op < 8) s += std::string(" (") + kReduceNames[c.reduce_op] + ")";
    if (c.dtype >= 0) s += " " + shape_text(c) + " " + dtype_name(c.dtype);
    if (c.root >= 0) s += " root " + std::to_string(ranks[static_cast<size_t>(c.root)]);
    if (!c.send_elems.empty()) s += " send " + list_text(c.send_elems) + " recv " + list_text(c.recv_elems);
    return s;
  };
  auto all = [&] {
    std::string s;
    for (size_t i = 0; i < calls.size(); ++i) s += (i ? "; " : "") + describe(i);
    return s;
  };
  const Call& first = calls.front();
  for (const Call& c : calls) {
    if (c.kind != first.kind || c.root != first.root || c.reduce_op != first.reduce_op) {
      return "the members called different collectives (or roots, or reduce ops): " + all() +
             "; every member must issue the same collectives in the same order";
    }
  }
  for (const Call& c : calls) {
    if (c.dtype != first.dtype) return "the members passed different dtypes: " + all();
  }
  if (!first.send_elems.empty()) {
    for (size_t i = 0; i < calls.size(); ++i) {
      for (size_t j = 0; j < calls.size(); ++j) {
        if (calls[i].send_elems.size() != calls.size() || calls[j].recv_elems.size() != calls.size()) continue;
        if (calls[i].send_elems[j] != calls[j].recv_elems[i]) {
          return "rank " + std::to_string(ranks[i]) + " sends " + std::to_string(calls[i].send_elems[j]) +
                 " elements to rank " + std::to_string(ranks[j]) + ", which expects " +
                 std::to_string(calls[j].recv_elems[i]) + " from it: " + all() +
                 "; the output splits of each member must match what the others send it";
        }
      }
    }
    return "";
  }
  for (const Call& c : calls) {
    if (numel(c) != numel(first)) {
      return "the members passed tensors of different sizes: " + all() + "; pass the same shape on every member";
    }
  }
  return "";
}

}  // namespace ddp::detail::shape_check
