#include "powersgd_kernels.hpp"

#include <vector>

namespace ddp::powersgd_kernels {
namespace {

// Independent partial sums, so the compiler vectorises the dot product without reassociating.
constexpr int64_t kLanes = 16;

float dot(const float* a, const float* b, int64_t n) {
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

void add(float* y, const float* x, int64_t n) {
  for (int64_t c = 0; c < n; ++c) y[c] += x[c];
}

void axpy(float* y, float a, const float* x, int64_t n) {
  for (int64_t c = 0; c < n; ++c) y[c] += a * x[c];
}

}  // namespace

void add_error_and_project(const Shape& s, float* m, const float* e, const float* qt, float* pt) {
  for (int64_t i = 0; i < s.rows; ++i) {
    float* row = m + i * s.cols;
    if (e) add(row, e + i * s.cols, s.cols);
    for (int64_t j = 0; j < s.rank; ++j) pt[j * s.rows + i] = dot(row, qt + j * s.cols, s.cols);
  }
}

void project_back(const Shape& s, const float* m, const float* pt, float* qt) {
  for (int64_t k = 0; k < s.rank * s.cols; ++k) qt[k] = 0;
  for (int64_t i = 0; i < s.rows; ++i) {
    const float* row = m + i * s.cols;
    for (int64_t j = 0; j < s.rank; ++j) axpy(qt + j * s.cols, pt[j * s.rows + i], row, s.cols);
  }
}

void reconstruct(const Shape& s, float* m, float* e, const float* pt, const float* qt) {
  std::vector<float> approx(static_cast<size_t>(s.cols));
  for (int64_t i = 0; i < s.rows; ++i) {
    for (int64_t c = 0; c < s.cols; ++c) approx[c] = pt[i] * qt[c];
    for (int64_t j = 1; j < s.rank; ++j) axpy(approx.data(), pt[j * s.rows + i], qt + j * s.cols, s.cols);
    float* row = m + i * s.cols;
    if (e) {
      float* erow = e + i * s.cols;
      for (int64_t c = 0; c < s.cols; ++c) erow[c] = row[c] - approx[c];
    }
    for (int64_t c = 0; c < s.cols; ++c) row[c] = approx[c];
  }
}

}  // namespace ddp::powersgd_kernels
