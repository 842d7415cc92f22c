/* Fake libcuda.so.1 (CUDA driver API) for GPU-less tests of `paddle-image doctor`.
 *
 * Build (includes scenario.h from this directory):
 *   gcc -shared -fPIC -O1 -Wall -Wl,-soname,libcuda.so.1 -o libcuda.so.X fake_cuda.c
 *
 * Reads the same scenario file as fake_nvml.c with the same parser (scenario.h:
 * $PI_FAKE_GPU_SCENARIO, `key = value` lines, `#` comments, later lines win), once, on the
 * first call that needs it. Without the variable, or when the file cannot be read, cuInit
 * returns 100 (CUDA_ERROR_NO_DEVICE) like a libcuda whose kernel driver is not loaded.
 * Keys read here (default in []):
 *   cuda.init            CUresult of cuInit                                    [0]
 *   cuda.hang            1: cuInit never returns                               [0]
 *   cuda.driver_version  cuDriverGetVersion, e.g. a forward-compat libcuda     [cuda_driver]
 *   cuda_driver          cuDriverGetVersion when cuda.driver_version is unset  [12040]
 *   gpu.count            [1]
 *   gpu.N.KEY / gpu.*.KEY as in fake_nvml.c: name, uuid, pci, cc, memory_mib, mig,
 *                        mig_devices, mig_profile, mig_memory_mib, and
 *   gpu.N.sm_count       multiprocessor count [132]; MIG devices: gpu.N.mig_sm_count [14]
 * A GPU value `unsupported` or `err:N` reads as its default here (CUDA has no per-field
 * errors).
 * CUDA devices are what a process without CUDA_VISIBLE_DEVICES sees: each GPU whose
 * current MIG mode is not 1 is one device; a GPU with MIG enabled contributes one device
 * per existing MIG device (gpu.N.mig_devices), so MIG enabled with no instances hides it.
 * The scenario should then say `cuda.init = 100` when no device is left, as CUDA does.
 * Every device call before a successful cuInit returns 3 (CUDA_ERROR_NOT_INITIALIZED).
 *
 * If $PI_FAKE_GPU_TRACE names a file, every call appends one line `cuda FUNC -> RC` to it.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define EXPORT __attribute__((visibility("default")))

typedef int CUresult;
typedef int CUdevice;
typedef struct {
  char bytes[16];
} CUuuid;

enum {
  CUDA_SUCCESS = 0,
  CUDA_ERROR_INVALID_VALUE = 1,
  CUDA_ERROR_NOT_INITIALIZED = 3,
  CUDA_ERROR_NO_DEVICE = 100,
  CUDA_ERROR_INVALID_DEVICE = 101,
};

enum {
  ATTR_MULTIPROCESSOR_COUNT = 16,
  ATTR_PCI_BUS_ID = 33,
  ATTR_PCI_DEVICE_ID = 34,
  ATTR_PCI_DOMAIN_ID = 50,
  ATTR_COMPUTE_CAPABILITY_MAJOR = 75,
  ATTR_COMPUTE_CAPABILITY_MINOR = 76,
};

/* ---- scenario file (scenario.h) ------------------------------------------------- */

#include "scenario.h"

static pthread_once_t g_once = PTHREAD_ONCE_INIT;

static void ensure_loaded(void) {
  pthread_once(&g_once, load_scenario);
}

/* CUDA has no per-field error: a value asking for one (`unsupported`, any `err:...`, even
 * err:0) reads as the default, like an unset one. */
static const char* gpu_str_or_default(unsigned idx, const char* field, const char* def) {
  const char* v = gpu_lookup(idx, field);
  return v != NULL && !is_error_value(v) ? v : def;
}

/* ---- state ---------------------------------------------------------------------- */

struct cudev {
  unsigned gpu;
  int mig; /* -1: the whole GPU; else the MIG device index */
};
static struct cudev g_devs[MAX_GPUS * MAX_MIG];
static int g_ndevs;
static int g_initialized;
static pthread_mutex_t g_mu = PTHREAD_MUTEX_INITIALIZER;

static CUresult trace(const char* fn, CUresult rc) {
  const char* path = getenv("PI_FAKE_GPU_TRACE");
  if (path != NULL && *path != '\0') {
    FILE* f = fopen(path, "a");
    if (f != NULL) {
      fprintf(f, "cuda %s -> %d\n", fn, rc);
      fclose(f);
    }
  }
  return rc;
}

#define RETURN(rc) return trace(__func__, (rc))

static void enumerate(void) {
  long long n = global_ll("gpu.count", 1);
  unsigned count = n < 0 ? 0 : n > MAX_GPUS ? MAX_GPUS : (unsigned)n;
  g_ndevs = 0;
  for (unsigned i = 0; i < count; i++) {
    unsigned cur = 0;
    const char* mig = gpu_lookup(i, "mig");
    if (mig == NULL || sscanf(mig, "%u", &cur) != 1)
      cur = 0;
    if (cur != 1) {
      g_devs[g_ndevs].gpu = i;
      g_devs[g_ndevs].mig = -1;
      g_ndevs++;
      continue;
    }
    long long m = gpu_ll(i, "mig_devices", 0, NULL);
    for (long long j = 0; j < m && j < MAX_MIG; j++) {
      g_devs[g_ndevs].gpu = i;
      g_devs[g_ndevs].mig = (int)j;
      g_ndevs++;
    }
  }
}

/* Checks init and the ordinal; on success *d is the device. */
static CUresult get_dev(CUdevice dev, const struct cudev** d) {
  if (!g_initialized)
    return CUDA_ERROR_NOT_INITIALIZED;
  if (dev < 0 || dev >= g_ndevs)
    return CUDA_ERROR_INVALID_DEVICE;
  *d = &g_devs[dev];
  return CUDA_SUCCESS;
}

#define GET_DEV(dev)                                                                                                   \
  const struct cudev* d;                                                                                               \
  do {                                                                                                                 \
    CUresult r_ = get_dev((dev), &d);                                                                                  \
    if (r_ != CUDA_SUCCESS)                                                                                            \
      RETURN(r_);                                                                                                      \
  } while (0)

/* ---- version, init -------------------------------------------------------------- */

EXPORT CUresult cuDriverGetVersion(int* driverVersion) {
  ensure_loaded();
  if (driverVersion == NULL)
    RETURN(CUDA_ERROR_INVALID_VALUE);
  const char* v = lookup("cuda.driver_version");
  *driverVersion = (int)to_ll(v != NULL ? v : lookup("cuda_driver"), 12040);
  RETURN(CUDA_SUCCESS);
}

EXPORT CUresult cuInit(unsigned int flags) {
  ensure_loaded();
  if (flags != 0)
    RETURN(CUDA_ERROR_INVALID_VALUE);
  if (!g_have_scenario)
    RETURN(CUDA_ERROR_NO_DEVICE);
  if (global_ll("cuda.hang", 0) != 0) {
    trace(__func__, -1);
    for (;;)
      pause();
  }
  CUresult rc = (CUresult)global_ll("cuda.init", 0);
  pthread_mutex_lock(&g_mu);
  if (rc == CUDA_SUCCESS && !g_initialized) {
    enumerate();
    g_initialized = 1;
  }
  pthread_mutex_unlock(&g_mu);
  RETURN(rc);
}

/* ---- devices -------------------------------------------------------------------- */

EXPORT CUresult cuDeviceGetCount(int* count) {
  if (!g_initialized)
    RETURN(CUDA_ERROR_NOT_INITIALIZED);
  if (count == NULL)
    RETURN(CUDA_ERROR_INVALID_VALUE);
  *count = g_ndevs;
  RETURN(CUDA_SUCCESS);
}

EXPORT CUresult cuDeviceGet(CUdevice* device, int ordinal) {
  if (!g_initialized)
    RETURN(CUDA_ERROR_NOT_INITIALIZED);
  if (device == NULL)
    RETURN(CUDA_ERROR_INVALID_VALUE);
  if (ordinal < 0 || ordinal >= g_ndevs)
    RETURN(CUDA_ERROR_INVALID_DEVICE);
  *device = ordinal;
  RETURN(CUDA_SUCCESS);
}

EXPORT CUresult cuDeviceGetName(char* name, int len, CUdevice dev) {
  GET_DEV(dev);
  if (name == NULL || len <= 0)
    RETURN(CUDA_ERROR_INVALID_VALUE);
  const char* n = gpu_str_or_default(d->gpu, "name", "NVIDIA H100 80GB HBM3");
  if (d->mig < 0)
    snprintf(name, (size_t)len, "%s", n);
  else
    snprintf(name, (size_t)len, "%s MIG %s", n, gpu_str_or_default(d->gpu, "mig_profile", "1g.10gb"));
  RETURN(CUDA_SUCCESS);
}

EXPORT CUresult cuDeviceGetAttribute(int* pi, int attrib, CUdevice dev) {
  GET_DEV(dev);
  if (pi == NULL)
    RETURN(CUDA_ERROR_INVALID_VALUE);
  int major = 9, minor = 0;
  unsigned dom = 0, bus = d->gpu & 0xffu, slot = 0, fn = 0;
  switch (attrib) {
  case ATTR_COMPUTE_CAPABILITY_MAJOR:
  case ATTR_COMPUTE_CAPABILITY_MINOR:
    if (sscanf(gpu_str_or_default(d->gpu, "cc", "9.0"), "%d.%d", &major, &minor) < 1)
      major = 9, minor = 0;
    *pi = attrib == ATTR_COMPUTE_CAPABILITY_MAJOR ? major : minor;
    break;
  case ATTR_MULTIPROCESSOR_COUNT:
    *pi = d->mig < 0 ? (int)gpu_ll(d->gpu, "sm_count", 132, NULL) : (int)gpu_ll(d->gpu, "mig_sm_count", 14, NULL);
    break;
  case ATTR_PCI_DOMAIN_ID:
  case ATTR_PCI_BUS_ID:
  case ATTR_PCI_DEVICE_ID: {
    const char* s = gpu_str_or_default(d->gpu, "pci", NULL);
    if (s == NULL || sscanf(s, "%x:%x:%x.%x", &dom, &bus, &slot, &fn) != 4) {
      dom = slot = 0;
      bus = d->gpu & 0xffu;
    }
    *pi = (int)(attrib == ATTR_PCI_DOMAIN_ID ? dom : attrib == ATTR_PCI_BUS_ID ? bus : slot);
    break;
  }
  default:
    RETURN(CUDA_ERROR_INVALID_VALUE);
  }
  RETURN(CUDA_SUCCESS);
}

EXPORT CUresult cuDeviceTotalMem_v2(size_t* bytes, CUdevice dev) {
  GET_DEV(dev);
  if (bytes == NULL)
    RETURN(CUDA_ERROR_INVALID_VALUE);
  long long mib = d->mig < 0 ? gpu_ll(d->gpu, "memory_mib", 81559, NULL) : gpu_ll(d->gpu, "mig_memory_mib", 9728, NULL);
  *bytes = (size_t)mib << 20;
  RETURN(CUDA_SUCCESS);
}

/* The 16 bytes of the GPU's UUID (GPU-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx). */
EXPORT CUresult cuDeviceGetUuid(CUuuid* uuid, CUdevice dev) {
  GET_DEV(dev);
  if (uuid == NULL)
    RETURN(CUDA_ERROR_INVALID_VALUE);
  char def[64];
  snprintf(def, sizeof def, "GPU-00000000-0000-0000-0000-%012u", d->gpu);
  const char* s = gpu_str_or_default(d->gpu, "uuid", def);
  if (strncmp(s, "GPU-", 4) == 0)
    s += 4;
  memset(uuid->bytes, 0, sizeof uuid->bytes);
  int n = 0;
  for (; *s && n < 32; s++) {
    int v;
    if (*s >= '0' && *s <= '9')
      v = *s - '0';
    else if (*s >= 'a' && *s <= 'f')
      v = *s - 'a' + 10;
    else if (*s >= 'A' && *s <= 'F')
      v = *s - 'A' + 10;
    else
      continue;
    uuid->bytes[n / 2] = (char)(uuid->bytes[n / 2] | (n % 2 ? v : v << 4));
    n++;
  }
  if (d->mig >= 0)
    uuid->bytes[15] = (char)(uuid->bytes[15] ^ (d->mig + 1));
  RETURN(CUDA_SUCCESS);
}

EXPORT CUresult cuDeviceGetUuid_v2(CUuuid* uuid, CUdevice dev) {
  return cuDeviceGetUuid(uuid, dev);
}

/* ---- errors --------------------------------------------------------------------- */

struct cuerr {
  CUresult code;
  const char* name;
  const char* text;
};
static const struct cuerr g_errors[] = {
    {0, "CUDA_SUCCESS", "no error"},
    {1, "CUDA_ERROR_INVALID_VALUE", "invalid argument"},
    {2, "CUDA_ERROR_OUT_OF_MEMORY", "out of memory"},
    {3, "CUDA_ERROR_NOT_INITIALIZED", "initialization error"},
    {4, "CUDA_ERROR_DEINITIALIZED", "driver shutting down"},
    {34, "CUDA_ERROR_STUB_LIBRARY", "CUDA driver is a stub library"},
    {46, "CUDA_ERROR_DEVICE_UNAVAILABLE", "CUDA-capable device(s) is/are busy or unavailable"},
    {100, "CUDA_ERROR_NO_DEVICE", "no CUDA-capable device is detected"},
    {101, "CUDA_ERROR_INVALID_DEVICE", "invalid device ordinal"},
    {209, "CUDA_ERROR_NO_BINARY_FOR_GPU", "no kernel image is available for execution on the device"},
    {222, "CUDA_ERROR_UNSUPPORTED_PTX_VERSION", "the provided PTX was compiled with an unsupported toolchain."},
    {304, "CUDA_ERROR_OPERATING_SYSTEM", "OS call failed or operation not supported on this OS"},
    {800, "CUDA_ERROR_NOT_PERMITTED", "operation not permitted"},
    {801, "CUDA_ERROR_NOT_SUPPORTED", "operation not supported"},
    {802, "CUDA_ERROR_SYSTEM_NOT_READY", "system not yet initialized"},
    {803, "CUDA_ERROR_SYSTEM_DRIVER_MISMATCH", "system has unsupported display driver / cuda driver combination"},
    {804, "CUDA_ERROR_COMPAT_NOT_SUPPORTED_ON_DEVICE", "forward compatibility was attempted on non supported HW"},
    {999, "CUDA_ERROR_UNKNOWN", "unknown error"},
};

static const struct cuerr* find_error(CUresult error) {
  for (size_t i = 0; i < sizeof g_errors / sizeof g_errors[0]; i++)
    if (g_errors[i].code == error)
      return &g_errors[i];
  return NULL;
}

EXPORT CUresult cuGetErrorName(CUresult error, const char** pStr) {
  if (pStr == NULL)
    RETURN(CUDA_ERROR_INVALID_VALUE);
  const struct cuerr* e = find_error(error);
  *pStr = e != NULL ? e->name : NULL;
  RETURN(e != NULL ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE);
}

EXPORT CUresult cuGetErrorString(CUresult error, const char** pStr) {
  if (pStr == NULL)
    RETURN(CUDA_ERROR_INVALID_VALUE);
  const struct cuerr* e = find_error(error);
  *pStr = e != NULL ? e->text : NULL;
  RETURN(e != NULL ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE);
}
