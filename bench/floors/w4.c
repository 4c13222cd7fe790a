// W4's floor: the elementwise chain tanh(1.5x + 0.3) * sigmoid(x) - 0.1x as one hand-written
// C loop (compiled by bench/floors/w4-floor.ts with kiln's flags: -O3 -march=native
// -ffast-math, OpenMP). Under -ffast-math GCC vectorizes tanhf/expf through glibc's libmvec.
#include <stdint.h>
#include <math.h>
#ifdef _OPENMP
#include <omp.h>
#endif

void w4_floor(const float *restrict x, float *restrict y, int64_t n) {
  #pragma omp parallel for simd schedule(static)
  for (int64_t i = 0; i < n; i++) {
    const float v = x[i];
    y[i] = tanhf(1.5f * v + 0.3f) * (1.0f / (1.0f + expf(-v))) - 0.1f * v;
  }
}

void w4_set_threads(int t) {
#ifdef _OPENMP
  if (t > 0) omp_set_num_threads(t);
#else
  (void)t;
#endif
}

int w4_threads(void) {
#ifdef _OPENMP
  return omp_get_max_threads();
#else
  return 1;
#endif
}
