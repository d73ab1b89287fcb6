// PowerSGD's three passes over a gradient matrix, fused: plain single-threaded loops over the
// rows of a contiguous row-major float32 M (rows x cols), with P and Q stored transposed (P^T:
// rank x rows, Q^T: rank x cols, each row contiguous). Each pass reads M (and E) from memory
// once; a row stays in L1 while all r columns use it. Results depend only on the inputs and a
// fixed summation order: the same inputs give the same bits on every rank. Pointers must not
// alias each other.
#pragma once

#include <cstdint>

namespace ddp::powersgd_kernels {

// The shapes of one compressed gradient.
struct Shape {
  int64_t rows = 0, cols = 0, rank = 0;
};

// M += E (E null: no error feedback), then P^T[j][i] = sum_c M[i][c] * Q^T[j][c] for every j.
void add_error_and_project(const Shape& s, float* m, const float* e, const float* qt, float* pt);

// Q^T[j][c] = sum_i M[i][c] * P^T[j][i] for every j (rows accumulated in order).
void project_back(const Shape& s, const float* m, const float* pt, float* qt);

// E = M - P Q^T (E null: skipped), then M = P Q^T.
void reconstruct(const Shape& s, float* m, float* e, const float* pt, const float* qt);

}  // namespace ddp::powersgd_kernels
