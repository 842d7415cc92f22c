/* Fake libnvidia-ml.so.1 for GPU-less tests of `paddle-image doctor`.
 *
 * Build (includes scenario.h from this directory):
 *   gcc -shared -fPIC -O1 -Wall -Wl,-soname,libnvidia-ml.so.1 -o libnvidia-ml.so.X fake_nvml.c
 *
 * Everything it answers comes from the scenario file named by $PI_FAKE_GPU_SCENARIO,
 * read when nvmlInit*() is called with no initialisation outstanding. Without that
 * variable, or when the file cannot be read, the library acts like NVML on a host whose
 * kernel driver is not loaded: nvmlInit*() returns 9 (NVML_ERROR_DRIVER_NOT_LOADED).
 *
 * Scenario format (parsed by scenario.h, shared with fake_cuda.c): `key = value` lines;
 * `#` starts a comment (at the start of a line or after white space); a later line for the
 * same key wins. Keys read here (default in []):
 *   nvml.init        nvmlReturn_t of nvmlInit_v2/nvmlInitWithFlags        [0]
 *   nvml.hang        1: nvmlInit* never returns                           [0]
 *   driver           nvmlSystemGetDriverVersion                           [550.54.15]
 *   cuda_driver      nvmlSystemGetCudaDriverVersion_v2                    [12040]
 *   gpu.count        number of GPUs (at most 64)                          [1]
 *   gpu.N.KEY        value of KEY for GPU N; gpu.*.KEY is the default for every GPU:
 *     handle            (only `err:N`) nvmlDeviceGetHandleByIndex_v2 fails, e.g. err:15 GPU lost
 *     name              [NVIDIA H100 80GB HBM3]
 *     uuid              [GPU-00000000-0000-0000-0000-00000000000N]
 *     pci               bus id, normalised to 00000000:BB:DD.F            [00000000:0N:00.0]
 *     pci_device_id     [0x233010DE]    pci_subsystem_id [0x16C110DE]
 *     minor             [N]
 *     cc                compute capability MAJOR.MINOR                    [9.0]
 *     memory_mib        total memory                                      [81559]
 *     memory_used_mib   [0]
 *     mig               CURRENT/PENDING MIG mode                          [0/0]
 *     mig_devices       MIG devices that exist                            [0]
 *     max_mig_devices   [7]
 *     mig_profile       name suffix of MIG devices                        [1g.10gb]
 *     mig_memory_mib    memory of one MIG device                          [9728]
 *     persistence       [1]
 *     ecc_corrected     [0]     ecc_uncorrected [0]
 *     remapped_correctable [0]  remapped_uncorrectable [0]
 *     remapped_pending  [0]     remapped_failure [0]
 *     fabric_state      0 not supported, 1 not started, 2 in progress, 3 completed  [3]
 *     fabric_status     nvmlReturn_t inside the fabric info               [0]
 *     fabric_clique     [0]
 * Any value may instead be `unsupported` (the query returns 3 NOT_SUPPORTED) or `err:N`
 * (the query returns N): e.g. `gpu.*.mig = unsupported` for a GPU without MIG,
 * `gpu.0.fabric_state = unsupported` for a pre-Hopper GPU.
 *
 * If $PI_FAKE_GPU_TRACE names a file, every call appends one line `nvml FUNC -> RC` to it.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define EXPORT __attribute__((visibility("default")))

typedef int nvmlReturn_t;
typedef struct nvmlDevice_st* nvmlDevice_t;

typedef struct {
  char busIdLegacy[16];
  unsigned int domain;
  unsigned int bus;
  unsigned int device;
  unsigned int pciDeviceId;
  unsigned int pciSubSystemId;
  char busId[32];
} nvmlPciInfo_t;

typedef struct {
  unsigned long long total;
  unsigned long long free;
  unsigned long long used;
} nvmlMemory_t;

typedef struct {
  unsigned char clusterUuid[16];
  nvmlReturn_t status;
  unsigned int cliqueId;
  unsigned char state;
} nvmlGpuFabricInfo_t;

enum {
  NVML_SUCCESS = 0,
  NVML_ERROR_UNINITIALIZED = 1,
  NVML_ERROR_INVALID_ARGUMENT = 2,
  NVML_ERROR_NOT_SUPPORTED = 3,
  NVML_ERROR_NOT_FOUND = 6,
  NVML_ERROR_INSUFFICIENT_SIZE = 7,
  NVML_ERROR_DRIVER_NOT_LOADED = 9,
};

/* ---- scenario file (scenario.h) ------------------------------------------------- */

#include "scenario.h"

static pthread_mutex_t g_mu = PTHREAD_MUTEX_INITIALIZER; /* init/shutdown; guards the reload */

/* ---- state ---------------------------------------------------------------------- */

struct nvmlDevice_st {
  unsigned index;
  int mig; /* -1: the physical GPU; else the MIG device index */
};
static struct nvmlDevice_st g_dev[MAX_GPUS];
static struct nvmlDevice_st g_migdev[MAX_GPUS][MAX_MIG];
static int g_refs;       /* successful nvmlInit* calls not yet shut down */
static unsigned g_count; /* gpu.count, clamped */

static nvmlReturn_t trace(const char* fn, nvmlReturn_t rc) {
  const char* path = getenv("PI_FAKE_GPU_TRACE");
  if (path != NULL && *path != '\0') {
    FILE* f = fopen(path, "a");
    if (f != NULL) {
      fprintf(f, "nvml %s -> %d\n", fn, rc);
      fclose(f);
    }
  }
  return rc;
}

#define RETURN(rc) return trace(__func__, (rc))

/* Resolves a handle; returns 0, 1 (not initialised) or 2 (not a handle of ours). */
static nvmlReturn_t resolve(nvmlDevice_t d, unsigned* idx, int* mig) {
  if (g_refs == 0)
    return NVML_ERROR_UNINITIALIZED;
  uintptr_t p = (uintptr_t)d;
  uintptr_t b0 = (uintptr_t)g_dev, e0 = b0 + sizeof g_dev;
  uintptr_t b1 = (uintptr_t)g_migdev, e1 = b1 + sizeof g_migdev;
  int ours =
      (p >= b0 && p < e0 && (p - b0) % sizeof g_dev[0] == 0) || (p >= b1 && p < e1 && (p - b1) % sizeof g_dev[0] == 0);
  if (!ours || d->index >= g_count)
    return NVML_ERROR_INVALID_ARGUMENT;
  *idx = d->index;
  *mig = d->mig;
  return NVML_SUCCESS;
}

#define RESOLVE(dev)                                                                                                   \
  unsigned idx;                                                                                                        \
  int mig;                                                                                                             \
  do {                                                                                                                 \
    nvmlReturn_t r_ = resolve((dev), &idx, &mig);                                                                      \
    if (r_ != NVML_SUCCESS)                                                                                            \
      RETURN(r_);                                                                                                      \
  } while (0)

static nvmlReturn_t copy_out(char* buf, unsigned length, const char* s) {
  if (buf == NULL)
    return NVML_ERROR_INVALID_ARGUMENT;
  if (strlen(s) + 1 > length)
    return NVML_ERROR_INSUFFICIENT_SIZE;
  memcpy(buf, s, strlen(s) + 1);
  return NVML_SUCCESS;
}

/* ---- init ----------------------------------------------------------------------- */

static nvmlReturn_t init(const char* fn) {
  pthread_mutex_lock(&g_mu);
  if (g_refs == 0)
    load_scenario();
  nvmlReturn_t rc = g_have_scenario ? (nvmlReturn_t)global_ll("nvml.init", 0) : NVML_ERROR_DRIVER_NOT_LOADED;
  int hang = g_have_scenario && global_ll("nvml.hang", 0) != 0;
  if (rc == NVML_SUCCESS && !hang) {
    if (g_refs == 0) {
      long long n = global_ll("gpu.count", 1);
      g_count = n < 0 ? 0 : n > MAX_GPUS ? MAX_GPUS : (unsigned)n;
      for (unsigned i = 0; i < MAX_GPUS; i++) {
        g_dev[i].index = i;
        g_dev[i].mig = -1;
        for (int m = 0; m < MAX_MIG; m++) {
          g_migdev[i][m].index = i;
          g_migdev[i][m].mig = m;
        }
      }
    }
    g_refs++;
  }
  pthread_mutex_unlock(&g_mu);
  if (hang) {
    trace(fn, -1);
    for (;;)
      pause();
  }
  return trace(fn, rc);
}

EXPORT nvmlReturn_t nvmlInitWithFlags(unsigned int flags) {
  (void)flags;
  return init(__func__);
}
EXPORT nvmlReturn_t nvmlInit_v2(void) {
  return init(__func__);
}
EXPORT nvmlReturn_t nvmlInit(void) {
  return init(__func__);
}

EXPORT nvmlReturn_t nvmlShutdown(void) {
  pthread_mutex_lock(&g_mu);
  nvmlReturn_t rc = NVML_ERROR_UNINITIALIZED;
  if (g_refs > 0) {
    g_refs--;
    rc = NVML_SUCCESS;
  }
  pthread_mutex_unlock(&g_mu);
  RETURN(rc);
}

EXPORT const char* nvmlErrorString(nvmlReturn_t result) {
  switch (result) {
  case 0:
    return "Success";
  case 1:
    return "Uninitialized";
  case 2:
    return "Invalid Argument";
  case 3:
    return "Not Supported";
  case 4:
    return "Insufficient Permissions";
  case 5:
    return "Already Initialized";
  case 6:
    return "Not Found";
  case 7:
    return "Insufficient Size";
  case 8:
    return "Insufficient External Power";
  case 9:
    return "Driver Not Loaded";
  case 10:
    return "Timeout";
  case 11:
    return "Interrupt Request Issue";
  case 12:
    return "NVML Shared Library Not Found";
  case 13:
    return "Function Not Found";
  case 14:
    return "Corrupted infoROM";
  case 15:
    return "GPU is lost";
  case 16:
    return "GPU requires restart";
  case 17:
    return "The operating system has blocked the request";
  case 18:
    return "RM has detected an NVML/RM version mismatch";
  case 19:
    return "In use by another client";
  case 20:
    return "Insufficient Memory";
  case 21:
    return "No data";
  case 22:
    return "The requested vgpu operation is not available on target device, because ECC is "
           "enabled";
  case 23:
    return "Insufficient Resources";
  case 24:
    return "Frequency not supported";
  case 25:
    return "Argument version mismatch";
  case 26:
    return "Deprecated";
  case 27:
    return "Not Ready";
  case 28:
    return "GPU not found";
  case 29:
    return "Invalid state";
  default:
    return "Unknown Error";
  }
}

/* ---- system --------------------------------------------------------------------- */

EXPORT nvmlReturn_t nvmlSystemGetDriverVersion(char* version, unsigned int length) {
  if (g_refs == 0)
    RETURN(NVML_ERROR_UNINITIALIZED);
  const char* v = lookup("driver");
  RETURN(copy_out(version, length, v != NULL ? v : "550.54.15"));
}

EXPORT nvmlReturn_t nvmlSystemGetCudaDriverVersion_v2(int* cudaDriverVersion) {
  if (g_refs == 0)
    RETURN(NVML_ERROR_UNINITIALIZED);
  if (cudaDriverVersion == NULL)
    RETURN(NVML_ERROR_INVALID_ARGUMENT);
  *cudaDriverVersion = (int)global_ll("cuda_driver", 12040);
  RETURN(NVML_SUCCESS);
}

EXPORT nvmlReturn_t nvmlSystemGetCudaDriverVersion(int* cudaDriverVersion) {
  return nvmlSystemGetCudaDriverVersion_v2(cudaDriverVersion);
}

/* ---- enumeration ---------------------------------------------------------------- */

EXPORT nvmlReturn_t nvmlDeviceGetCount_v2(unsigned int* deviceCount) {
  if (g_refs == 0)
    RETURN(NVML_ERROR_UNINITIALIZED);
  if (deviceCount == NULL)
    RETURN(NVML_ERROR_INVALID_ARGUMENT);
  *deviceCount = g_count;
  RETURN(NVML_SUCCESS);
}

EXPORT nvmlReturn_t nvmlDeviceGetCount(unsigned int* deviceCount) {
  return nvmlDeviceGetCount_v2(deviceCount);
}

EXPORT nvmlReturn_t nvmlDeviceGetHandleByIndex_v2(unsigned int index, nvmlDevice_t* device) {
  if (g_refs == 0)
    RETURN(NVML_ERROR_UNINITIALIZED);
  if (device == NULL || index >= g_count)
    RETURN(NVML_ERROR_INVALID_ARGUMENT);
  nvmlReturn_t rc = value_rc(gpu_lookup(index, "handle"));
  if (rc != NVML_SUCCESS)
    RETURN(rc);
  *device = &g_dev[index];
  RETURN(NVML_SUCCESS);
}

EXPORT nvmlReturn_t nvmlDeviceGetHandleByIndex(unsigned int index, nvmlDevice_t* device) {
  return nvmlDeviceGetHandleByIndex_v2(index, device);
}

/* ---- identity ------------------------------------------------------------------- */

EXPORT nvmlReturn_t nvmlDeviceGetName(nvmlDevice_t device, char* name, unsigned int length) {
  RESOLVE(device);
  nvmlReturn_t rc = NVML_SUCCESS;
  const char* n = gpu_str(idx, "name", "NVIDIA H100 80GB HBM3", &rc);
  if (rc != NVML_SUCCESS)
    RETURN(rc);
  if (mig < 0)
    RETURN(copy_out(name, length, n));
  char buf[320];
  snprintf(buf, sizeof buf, "%s MIG %s", n, gpu_str(idx, "mig_profile", "1g.10gb", NULL));
  RETURN(copy_out(name, length, buf));
}

EXPORT nvmlReturn_t nvmlDeviceGetUUID(nvmlDevice_t device, char* uuid, unsigned int length) {
  RESOLVE(device);
  nvmlReturn_t rc = NVML_SUCCESS;
  char def[64], buf[128];
  if (mig < 0) {
    snprintf(def, sizeof def, "GPU-00000000-0000-0000-0000-%012u", idx);
    const char* u = gpu_str(idx, "uuid", def, &rc);
    if (rc != NVML_SUCCESS)
      RETURN(rc);
    snprintf(buf, sizeof buf, "%s", u);
  } else {
    snprintf(buf, sizeof buf, "MIG-00000000-0000-0000-%04u-%012d", idx, mig);
  }
  RETURN(copy_out(uuid, length, buf));
}

EXPORT nvmlReturn_t nvmlDeviceGetPciInfo_v3(nvmlDevice_t device, nvmlPciInfo_t* pci) {
  RESOLVE(device);
  if (pci == NULL)
    RETURN(NVML_ERROR_INVALID_ARGUMENT);
  if (mig >= 0)
    RETURN(NVML_ERROR_NOT_SUPPORTED);
  nvmlReturn_t rc = NVML_SUCCESS;
  char def[32];
  snprintf(def, sizeof def, "00000000:%02X:00.0", idx & 0xffu);
  const char* s = gpu_str(idx, "pci", def, &rc);
  long long devid = gpu_ll(idx, "pci_device_id", 0x233010DE, &rc);
  long long subsys = gpu_ll(idx, "pci_subsystem_id", 0x16C110DE, &rc);
  if (rc != NVML_SUCCESS)
    RETURN(rc);
  unsigned dom = 0, bus = 0, dev = 0, fn = 0;
  if (sscanf(s, "%x:%x:%x.%x", &dom, &bus, &dev, &fn) != 4) {
    dom = 0;
    bus = idx & 0xffu;
    dev = fn = 0;
  }
  memset(pci, 0, sizeof *pci);
  snprintf(pci->busIdLegacy, sizeof pci->busIdLegacy, "%04X:%02X:%02X.%X", dom & 0xffffu, bus & 0xffu, dev & 0x1fu,
           fn & 0x7u);
  snprintf(pci->busId, sizeof pci->busId, "%08X:%02X:%02X.%X", dom, bus & 0xffu, dev & 0x1fu, fn & 0x7u);
  pci->domain = dom;
  pci->bus = bus;
  pci->device = dev;
  pci->pciDeviceId = (unsigned)devid;
  pci->pciSubSystemId = (unsigned)subsys;
  RETURN(NVML_SUCCESS);
}

EXPORT nvmlReturn_t nvmlDeviceGetMinorNumber(nvmlDevice_t device, unsigned int* minorNumber) {
  RESOLVE(device);
  if (minorNumber == NULL)
    RETURN(NVML_ERROR_INVALID_ARGUMENT);
  if (mig >= 0)
    RETURN(NVML_ERROR_NOT_SUPPORTED);
  nvmlReturn_t rc = NVML_SUCCESS;
  long long m = gpu_ll(idx, "minor", idx, &rc);
  if (rc == NVML_SUCCESS)
    *minorNumber = (unsigned)m;
  RETURN(rc);
}

EXPORT nvmlReturn_t nvmlDeviceGetCudaComputeCapability(nvmlDevice_t device, int* major, int* minor) {
  RESOLVE(device);
  if (major == NULL || minor == NULL)
    RETURN(NVML_ERROR_INVALID_ARGUMENT);
  nvmlReturn_t rc = NVML_SUCCESS;
  const char* cc = gpu_str(idx, "cc", "9.0", &rc);
  if (rc != NVML_SUCCESS)
    RETURN(rc);
  int ma = 0, mi = 0;
  if (sscanf(cc, "%d.%d", &ma, &mi) < 1)
    ma = 9, mi = 0;
  *major = ma;
  *minor = mi;
  RETURN(NVML_SUCCESS);
}

/* ---- memory, MIG ---------------------------------------------------------------- */

EXPORT nvmlReturn_t nvmlDeviceGetMemoryInfo(nvmlDevice_t device, nvmlMemory_t* memory) {
  RESOLVE(device);
  if (memory == NULL)
    RETURN(NVML_ERROR_INVALID_ARGUMENT);
  nvmlReturn_t rc = NVML_SUCCESS;
  long long total = mig < 0 ? gpu_ll(idx, "memory_mib", 81559, &rc) : gpu_ll(idx, "mig_memory_mib", 9728, &rc);
  long long used = mig < 0 ? gpu_ll(idx, "memory_used_mib", 0, &rc) : 0;
  if (rc != NVML_SUCCESS)
    RETURN(rc);
  if (used > total)
    used = total;
  memory->total = (unsigned long long)total << 20;
  memory->used = (unsigned long long)used << 20;
  memory->free = memory->total - memory->used;
  RETURN(NVML_SUCCESS);
}

static nvmlReturn_t mig_mode(unsigned idx, unsigned* cur, unsigned* pend) {
  const char* v = gpu_lookup(idx, "mig");
  nvmlReturn_t rc = value_rc(v);
  if (rc != NVML_SUCCESS)
    return rc;
  unsigned c = 0, p = 0;
  if (v != NULL) {
    int n = sscanf(v, "%u/%u", &c, &p);
    if (n == 1)
      p = c;
    else if (n < 1)
      c = p = 0;
  }
  *cur = c;
  *pend = p;
  return NVML_SUCCESS;
}

EXPORT nvmlReturn_t nvmlDeviceGetMigMode(nvmlDevice_t device, unsigned int* currentMode, unsigned int* pendingMode) {
  RESOLVE(device);
  if (currentMode == NULL || pendingMode == NULL || mig >= 0)
    RETURN(NVML_ERROR_INVALID_ARGUMENT);
  RETURN(mig_mode(idx, currentMode, pendingMode));
}

EXPORT nvmlReturn_t nvmlDeviceGetMaxMigDeviceCount(nvmlDevice_t device, unsigned int* count) {
  RESOLVE(device);
  if (count == NULL || mig >= 0)
    RETURN(NVML_ERROR_INVALID_ARGUMENT);
  unsigned c, p;
  nvmlReturn_t rc = mig_mode(idx, &c, &p);
  long long n = gpu_ll(idx, "max_mig_devices", 7, &rc);
  if (rc == NVML_SUCCESS)
    *count = (unsigned)n;
  RETURN(rc);
}

EXPORT nvmlReturn_t nvmlDeviceGetMigDeviceHandleByIndex(nvmlDevice_t device, unsigned int index,
                                                        nvmlDevice_t* migDevice) {
  RESOLVE(device);
  if (migDevice == NULL || mig >= 0)
    RETURN(NVML_ERROR_INVALID_ARGUMENT);
  unsigned c, p;
  nvmlReturn_t rc = mig_mode(idx, &c, &p);
  long long n = gpu_ll(idx, "mig_devices", 0, &rc);
  if (rc != NVML_SUCCESS)
    RETURN(rc);
  if (n > MAX_MIG)
    n = MAX_MIG;
  if (c != 1 || (long long)index >= n)
    RETURN(NVML_ERROR_NOT_FOUND);
  *migDevice = &g_migdev[idx][index];
  RETURN(NVML_SUCCESS);
}

/* ---- health --------------------------------------------------------------------- */

EXPORT nvmlReturn_t nvmlDeviceGetPersistenceMode(nvmlDevice_t device, int* mode) {
  RESOLVE(device);
  if (mode == NULL || mig >= 0)
    RETURN(NVML_ERROR_INVALID_ARGUMENT);
  nvmlReturn_t rc = NVML_SUCCESS;
  long long m = gpu_ll(idx, "persistence", 1, &rc);
  if (rc == NVML_SUCCESS)
    *mode = m != 0;
  RETURN(rc);
}

EXPORT nvmlReturn_t nvmlDeviceGetTotalEccErrors(nvmlDevice_t device, int errorType, int counterType,
                                                unsigned long long* eccCounts) {
  RESOLVE(device);
  if (eccCounts == NULL || errorType < 0 || errorType > 1 || counterType < 0 || counterType > 1)
    RETURN(NVML_ERROR_INVALID_ARGUMENT);
  nvmlReturn_t rc = NVML_SUCCESS;
  long long n = gpu_ll(idx, errorType == 1 ? "ecc_uncorrected" : "ecc_corrected", 0, &rc);
  if (rc == NVML_SUCCESS)
    *eccCounts = (unsigned long long)n;
  RETURN(rc);
}

EXPORT nvmlReturn_t nvmlDeviceGetRemappedRows(nvmlDevice_t device, unsigned int* corrRows, unsigned int* uncRows,
                                              unsigned int* isPending, unsigned int* failureOccurred) {
  RESOLVE(device);
  if (corrRows == NULL || uncRows == NULL || isPending == NULL || failureOccurred == NULL || mig >= 0)
    RETURN(NVML_ERROR_INVALID_ARGUMENT);
  nvmlReturn_t rc = NVML_SUCCESS;
  long long c = gpu_ll(idx, "remapped_correctable", 0, &rc);
  long long u = gpu_ll(idx, "remapped_uncorrectable", 0, &rc);
  long long p = gpu_ll(idx, "remapped_pending", 0, &rc);
  long long f = gpu_ll(idx, "remapped_failure", 0, &rc);
  if (rc != NVML_SUCCESS)
    RETURN(rc);
  *corrRows = (unsigned)c;
  *uncRows = (unsigned)u;
  *isPending = p != 0;
  *failureOccurred = f != 0;
  RETURN(NVML_SUCCESS);
}

EXPORT nvmlReturn_t nvmlDeviceGetGpuFabricInfo(nvmlDevice_t device, nvmlGpuFabricInfo_t* gpuFabricInfo) {
  RESOLVE(device);
  if (gpuFabricInfo == NULL || mig >= 0)
    RETURN(NVML_ERROR_INVALID_ARGUMENT);
  nvmlReturn_t rc = NVML_SUCCESS;
  long long state = gpu_ll(idx, "fabric_state", 3, &rc);
  long long status = gpu_ll(idx, "fabric_status", 0, &rc);
  long long clique = gpu_ll(idx, "fabric_clique", 0, &rc);
  if (rc != NVML_SUCCESS)
    RETURN(rc);
  memset(gpuFabricInfo, 0, sizeof *gpuFabricInfo);
  gpuFabricInfo->state = (unsigned char)state;
  gpuFabricInfo->status = (nvmlReturn_t)status;
  gpuFabricInfo->cliqueId = (unsigned)clique;
  RETURN(NVML_SUCCESS);
}
