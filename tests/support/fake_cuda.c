/* A stand-in for the CUDA driver (libcuda.so.1) and NCCL (libnccl.so.2) for the pre-flight NCCL
 * check's tests (launcher/preflight/nccl_probe.cpp loads them through DDP_LAUNCH_CUDA_LIBRARY and
 * DDP_LAUNCH_NCCL_LIBRARY; this one file serves as both). "Device memory" is the host's; an
 * all-reduce sums the buffers (their first and last 1024 floats: all the check reads) and takes
 * the time a ring of FAKE_NCCL_GBPS GB/s bus bandwidth would (default 100). FAKE_CUDA_GPUS: the
 * GPU count (default 2), or CUDA_VISIBLE_DEVICES's entries where that is set, as the driver
 * counts; FAKE_CUDA_BROKEN=ID,...: those GPUs (their CUDA_VISIBLE_DEVICES ids, else ordinals)
 * fail cuDevicePrimaryCtxRetain; FAKE_CUDA_INIT=N: cuInit returns N; FAKE_NCCL_FAIL=init:
 * ncclCommInitAll fails, =sum: the all-reduce adds one too many. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define MAX_GPUS 16
#define EDGE 1024

static int ranks;
static struct {
  float* data;
  size_t count;
} pending[MAX_GPUS];
static int pending_n;

static const char* env(const char* name) {
  const char* v = getenv(name);
  return v ? v : "";
}

int cuInit(unsigned flags) {
  (void)flags;
  return *env("FAKE_CUDA_INIT") ? atoi(env("FAKE_CUDA_INIT")) : 0;
}
int cuGetErrorString(int rc, const char** text) {
  *text = rc == 100 ? "no CUDA-capable device is detected" : "unknown error";
  return 0;
}
/* The id of visible GPU `ordinal` (CUDA_VISIBLE_DEVICES's entry, else the ordinal) into buf. */
static void visible_id(int ordinal, char* buf, size_t size) {
  const char* list = getenv("CUDA_VISIBLE_DEVICES");
  if (!list) {
    snprintf(buf, size, "%d", ordinal);
    return;
  }
  for (int i = 0; i < ordinal && list; ++i) list = strchr(list, ',') ? strchr(list, ',') + 1 : NULL;
  size_t n = list ? strcspn(list, ",") : 0;
  if (n >= size) n = size - 1;
  memcpy(buf, list ? list : "", n);
  buf[n] = 0;
}
int cuDeviceGetCount(int* n) {
  const char* list = getenv("CUDA_VISIBLE_DEVICES");
  *n = *env("FAKE_CUDA_GPUS") ? atoi(env("FAKE_CUDA_GPUS")) : 2;
  if (list) {
    *n = *list ? 1 : 0;
    for (const char* c = list; *c; ++c) *n += *c == ',';
  }
  return 0;
}
int cuDeviceGet(int* device, int ordinal) {
  *device = ordinal;
  return 0;
}
int cuDevicePrimaryCtxRetain(void** context, int device) {
  char id[64], broken[256];
  visible_id(device, id, sizeof id);
  snprintf(broken, sizeof broken, ",%s,", env("FAKE_CUDA_BROKEN"));
  char key[70];
  snprintf(key, sizeof key, ",%s,", id);
  if (strstr(broken, key)) return 999; /* CUDA_ERROR_UNKNOWN */
  *context = (void*)(unsigned long)(device + 1);
  return 0;
}
int cuDevicePrimaryCtxRelease_v2(int device) { return device < 0; }
int cuCtxSetCurrent(void* context) { return context == NULL; }
int cuMemAlloc_v2(unsigned long long* ptr, size_t bytes) {
  void* p = malloc(bytes);
  *ptr = (unsigned long long)(unsigned long)p;
  return p ? 0 : 2; /* CUDA_ERROR_OUT_OF_MEMORY */
}
int cuMemFree_v2(unsigned long long ptr) {
  free((void*)(unsigned long)ptr);
  return 0;
}
int cuMemsetD32_v2(unsigned long long ptr, unsigned value, size_t n) {
  unsigned* p = (unsigned*)(unsigned long)ptr;
  for (size_t i = 0; i < n; ++i) p[i] = value;
  return 0;
}
int cuMemcpyDtoH_v2(void* dst, unsigned long long src, size_t bytes) {
  memcpy(dst, (void*)(unsigned long)src, bytes);
  return 0;
}
int cuStreamCreate(void** stream, unsigned flags) {
  *stream = (void*)(unsigned long)(flags + 1);
  return 0;
}
int cuStreamSynchronize(void* stream) { return stream == NULL; }
int cuStreamDestroy_v2(void* stream) { return stream == NULL; }

int ncclGetVersion(int* version) {
  *version = 22707;
  return 0;
}
const char* ncclGetErrorString(int rc) { return rc == 2 ? "unhandled system error" : "unknown result"; }
int ncclCommInitAll(void** comms, int n, const int* devices) {
  if (!strcmp(env("FAKE_NCCL_FAIL"), "init") || n > MAX_GPUS) return 2; /* ncclSystemError */
  for (int i = 0; i < n; ++i) comms[i] = (void*)(unsigned long)(devices[i] + 1);
  ranks = n;
  return 0;
}
int ncclCommDestroy(void* comm) { return comm == NULL; }
int ncclGroupStart(void) {
  pending_n = 0;
  return 0;
}
int ncclAllReduce(const void* send, void* recv, size_t count, int type, int op, void* comm, void* stream) {
  (void)send, (void)type, (void)op, (void)comm, (void)stream;
  if (pending_n == MAX_GPUS) return 4; /* ncclInvalidArgument */
  pending[pending_n].data = recv;
  pending[pending_n++].count = count;
  return 0;
}
static void sum_at(size_t at) {
  float total = !strcmp(env("FAKE_NCCL_FAIL"), "sum") ? 1.0f : 0.0f;
  for (int g = 0; g < pending_n; ++g) total += pending[g].data[at];
  for (int g = 0; g < pending_n; ++g) pending[g].data[at] = total;
}
int ncclGroupEnd(void) {
  if (pending_n != ranks || pending_n == 0) return 5; /* ncclInvalidUsage */
  const size_t count = pending[0].count;
  for (size_t i = 0; i < count && i < EDGE; ++i) sum_at(i);
  for (size_t i = count > EDGE ? (count - EDGE > EDGE ? count - EDGE : EDGE) : count; i < count; ++i) sum_at(i);
  const double gbps = *env("FAKE_NCCL_GBPS") ? atof(env("FAKE_NCCL_GBPS")) : 100;
  const double factor = ranks > 1 ? 2.0 * (ranks - 1) / ranks : 1.0;
  const double seconds = (double)count * sizeof(float) * factor / (gbps * 1e9);
  struct timespec t = {(time_t)seconds, (long)((seconds - (double)(time_t)seconds) * 1e9)};
  nanosleep(&t, NULL);
  return 0;
}
