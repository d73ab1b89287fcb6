/* A stand-in for NVIDIA's libnvidia-ml.so.1 for the pre-flight GPU check's tests
 * (launcher/preflight/gpu_probe.cpp loads it through DDP_LAUNCH_NVML_LIBRARY): the few NVML calls
 * the check makes, answering from FAKE_NVML, e.g. "ecc=0,3;pending=0,1;events=0,0x40" (one value
 * per GPU; the GPU count is the longest list; missing values are 0). FAKE_NVML_INIT=N makes
 * nvmlInit_v2 return N. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_GPUS 16

static unsigned long long values[3][MAX_GPUS]; /* ecc, pending, events */
static unsigned count;

static void load(void) {
  const char* spec = getenv("FAKE_NVML");
  static const char* keys[3] = {"ecc=", "pending=", "events="};
  memset(values, 0, sizeof values);
  count = 0;
  for (int k = 0; k < 3 && spec; ++k) {
    const char* at = strstr(spec, keys[k]);
    if (!at) continue;
    at += strlen(keys[k]);
    unsigned i = 0;
    while (i < MAX_GPUS && *at && *at != ';') {
      char* end = NULL;
      values[k][i++] = strtoull(at, &end, 0);
      at = *end == ',' ? end + 1 : end;
    }
    if (i > count) count = i;
  }
}

int nvmlInit_v2(void) {
  load();
  const char* rc = getenv("FAKE_NVML_INIT");
  return rc ? atoi(rc) : 0;
}
int nvmlShutdown(void) { return 0; }
const char* nvmlErrorString(int rc) { return rc == 9 ? "Driver Not Loaded" : "Unknown Error"; }
int nvmlDeviceGetCount_v2(unsigned* n) {
  *n = count;
  return 0;
}
int nvmlDeviceGetHandleByIndex_v2(unsigned i, void** device) {
  if (i >= count) return 2; /* NVML_ERROR_INVALID_ARGUMENT */
  *device = (void*)(unsigned long)(i + 1);
  return 0;
}
static unsigned index_of(void* device) { return (unsigned)(unsigned long)device - 1; }
int nvmlDeviceGetName(void* device, char* name, unsigned length) {
  snprintf(name, length, "Fake GPU %u", index_of(device));
  return 0;
}
int nvmlDeviceGetUUID(void* device, char* uuid, unsigned length) {
  snprintf(uuid, length, "GPU-fa4e%04u-0000-0000-0000-000000000000", index_of(device));
  return 0;
}
int nvmlDeviceGetTotalEccErrors(void* device, int error_type, int counter_type, unsigned long long* n) {
  (void)error_type;
  (void)counter_type;
  *n = values[0][index_of(device)];
  return 0;
}
int nvmlDeviceGetRetiredPagesPendingStatus(void* device, int* pending) {
  *pending = (int)values[1][index_of(device)];
  return 0;
}
int nvmlDeviceGetCurrentClocksEventReasons(void* device, unsigned long long* reasons) {
  *reasons = values[2][index_of(device)];
  return 0;
}
int nvmlDeviceGetClockInfo(void* device, int type, unsigned* mhz) {
  (void)type;
  *mhz = values[2][index_of(device)] ? 800 : 1980;
  return 0;
}
int nvmlDeviceGetMaxClockInfo(void* device, int type, unsigned* mhz) {
  (void)device;
  (void)type;
  *mhz = 1980;
  return 0;
}
