#include "runtime/src/parallel/powersgd_kernels.hpp"

#include <cstddef>
#include <vector>

// P and Q are each rank's own values before their all-reduce, so they may take the widest
// vector unit (AVX2 + FMA where the CPU has it). The reconstruction after the all-reduces
// must give the same bits on every rank whatever its CPU: it keeps the baseline ISA.
#if defined(__GNUC__) && defined(__x86_64__) && !defined(__clang__)
#define DDP_WIDEST_ISA __attribute__((target_clones("arch=haswell", "default")))
#else
#define DDP_WIDEST_ISA
#endif

namespace ddp::powersgd_kernels {
namespace {

// Independent partial sums, so the compiler vectorises the dot product without reassociating.
constexpr int64_t kLanes = 16;

inline float dot(const float* a, const float* b, int64_t n) {
  float lanes[kLanes] = {};
  int64_t c = 0;
  for (; c + kLanes <= n; c += kLanes) {
    for (int64_t l = 0; l < kLanes; ++l) lanes[l] += a[c + l] * b[c + l];
  }
  float sum = 0;
  for (; c < n; ++c) sum += a[c] * b[c];
  for (int64_t l = 0; l < kLanes; ++l) sum += lanes[l];
  return sum;
}

inline void add(float* y, const float* x, int64_t n) {
  for (int64_t c = 0; c < n; ++c) y[c] += x[c];
}

inline void axpy(float* y, float a, const float* x, int64_t n) {
  for (int64_t c = 0; c < n; ++c) y[c] += a * x[c];
}

}  // namespace

DDP_WIDEST_ISA void add_error_and_project(const Shape& s, float* m, const float* e, const float* qt, float* pt) {
  for (int64_t i = 0; i < s.rows; ++i) {
    float* row = m + i * s.cols;
    if (e) add(row, e + i * s.cols, s.cols);
    for (int64_t j = 0; j < s.rank; ++j) pt[j * s.rows + i] = dot(row, qt + j * s.cols, s.cols);
  }
}

// Four rows at a time: each column of Q is loaded and stored once per four rows of M.
DDP_WIDEST_ISA void project_back(const Shape& s, const float* m, const float* pt, float* qt) {
  for (int64_t k = 0; k < s.rank * s.cols; ++k) qt[k] = 0;
  int64_t i = 0;
  for (; i + 4 <= s.rows; i += 4) {
    const float* r0 = m + i * s.cols;
    const float *r1 = r0 + s.cols, *r2 = r1 + s.cols, *r3 = r2 + s.cols;
    for (int64_t j = 0; j < s.rank; ++j) {
      const float* p = pt + j * s.rows + i;
      const float p0 = p[0], p1 = p[1], p2 = p[2], p3 = p[3];
      float* q = qt + j * s.cols;
      for (int64_t c = 0; c < s.cols; ++c) q[c] += (p0 * r0[c] + p1 * r1[c]) + (p2 * r2[c] + p3 * r3[c]);
    }
  }
  for (; i < s.rows; ++i) {
    for (int64_t j = 0; j < s.rank; ++j) axpy(qt + j * s.cols, pt[j * s.rows + i], m + i * s.cols, s.cols);
  }
}

namespace {

// One row of P Q^T for a compile-time rank: products summed in column order 0..R-1, as the
// generic loop below does, so both give the same bits.
template <int64_t R>
void reconstruct_row(int64_t cols, float* row, float* erow, const float* p, const float* qt) {
  for (int64_t c = 0; c < cols; ++c) {
    float approx = p[0] * qt[c];
    for (int64_t j = 1; j < R; ++j) approx += p[j] * qt[j * cols + c];
    if (erow) erow[c] = row[c] - approx;
    row[c] = approx;
  }
}

}  // namespace

void reconstruct(const Shape& s, float* m, float* e, const float* pt, const float* qt) {
  std::vector<float> approx(static_cast<std::size_t>(s.cols));
  float p[4];
  for (int64_t i = 0; i < s.rows; ++i) {
    float* row = m + i * s.cols;
    float* erow = e ? e + i * s.cols : nullptr;
    if (s.rank <= 4) {
      for (int64_t j = 0; j < s.rank; ++j) p[j] = pt[j * s.rows + i];
      switch (s.rank) {
        case 1: reconstruct_row<1>(s.cols, row, erow, p, qt); continue;
        case 2: reconstruct_row<2>(s.cols, row, erow, p, qt); continue;
        case 3: reconstruct_row<3>(s.cols, row, erow, p, qt); continue;
        default: reconstruct_row<4>(s.cols, row, erow, p, qt); continue;
      }
    }
    for (int64_t c = 0; c < s.cols; ++c) approx[c] = pt[i] * qt[c];
    for (int64_t j = 1; j < s.rank; ++j) axpy(approx.data(), pt[j * s.rows + i], qt + j * s.cols, s.cols);
    if (erow) {
      for (int64_t c = 0; c < s.cols; ++c) erow[c] = row[c] - approx[c];
    }
    for (int64_t c = 0; c < s.cols; ++c) row[c] = approx[c];
  }
}

}  // namespace ddp::powersgd_kernels
