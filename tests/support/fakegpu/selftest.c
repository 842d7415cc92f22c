/* Loads a libnvidia-ml and a libcuda by path and prints what they report; checks the calls
 * that must fail before initialisation. Meant for the fakes (fake_nvml.c, fake_cuda.c) but
 * runs against the real libraries as well.
 *
 *   gcc -O1 -Wall -Wextra -o /tmp/fakegpu-selftest selftest.c -ldl
 *   PI_FAKE_GPU_SCENARIO=scenario.conf /tmp/fakegpu-selftest ./libnvidia-ml.so.1 ./libcuda.so.1
 *
 * Exit status: 0 when every symbol resolved and every check held, 1 otherwise, 2 on usage.
 */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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
  unsigned long long total, free, used;
} nvmlMemory_t;
typedef struct {
  unsigned char clusterUuid[16];
  nvmlReturn_t status;
  unsigned int cliqueId;
  unsigned char state;
} nvmlGpuFabricInfo_t;

typedef int CUresult;
typedef int CUdevice;
typedef struct {
  char bytes[16];
} CUuuid;

static int g_failures;

static void fail(const char* what) {
  printf("FAIL: %s\n", what);
  g_failures++;
}

static void* sym(void* lib, const char* name) {
  void* p = dlsym(lib, name);
  if (p == NULL) {
    printf("FAIL: missing symbol %s\n", name);
    g_failures++;
  }
  return p;
}

/* ---- NVML ----------------------------------------------------------------------- */

static struct {
  nvmlReturn_t (*Init_v2)(void);
  nvmlReturn_t (*InitWithFlags)(unsigned);
  nvmlReturn_t (*Shutdown)(void);
  const char* (*ErrorString)(nvmlReturn_t);
  nvmlReturn_t (*SystemGetDriverVersion)(char*, unsigned);
  nvmlReturn_t (*SystemGetCudaDriverVersion_v2)(int*);
  nvmlReturn_t (*DeviceGetCount_v2)(unsigned*);
  nvmlReturn_t (*DeviceGetHandleByIndex_v2)(unsigned, nvmlDevice_t*);
  nvmlReturn_t (*DeviceGetName)(nvmlDevice_t, char*, unsigned);
  nvmlReturn_t (*DeviceGetUUID)(nvmlDevice_t, char*, unsigned);
  nvmlReturn_t (*DeviceGetPciInfo_v3)(nvmlDevice_t, nvmlPciInfo_t*);
  nvmlReturn_t (*DeviceGetMinorNumber)(nvmlDevice_t, unsigned*);
  nvmlReturn_t (*DeviceGetCudaComputeCapability)(nvmlDevice_t, int*, int*);
  nvmlReturn_t (*DeviceGetMemoryInfo)(nvmlDevice_t, nvmlMemory_t*);
  nvmlReturn_t (*DeviceGetMigMode)(nvmlDevice_t, unsigned*, unsigned*);
  nvmlReturn_t (*DeviceGetMaxMigDeviceCount)(nvmlDevice_t, unsigned*);
  nvmlReturn_t (*DeviceGetMigDeviceHandleByIndex)(nvmlDevice_t, unsigned, nvmlDevice_t*);
  nvmlReturn_t (*DeviceGetPersistenceMode)(nvmlDevice_t, int*);
  nvmlReturn_t (*DeviceGetTotalEccErrors)(nvmlDevice_t, int, int, unsigned long long*);
  nvmlReturn_t (*DeviceGetRemappedRows)(nvmlDevice_t, unsigned*, unsigned*, unsigned*, unsigned*);
  nvmlReturn_t (*DeviceGetGpuFabricInfo)(nvmlDevice_t, nvmlGpuFabricInfo_t*);
} nv;

#define NVSYM(lib, f) (*(void**)& nv.f = sym(lib, "nvml" #f))

static int load_nvml(void* lib) {
  int before = g_failures;
  NVSYM(lib, Init_v2);
  NVSYM(lib, InitWithFlags);
  NVSYM(lib, Shutdown);
  NVSYM(lib, ErrorString);
  NVSYM(lib, SystemGetDriverVersion);
  NVSYM(lib, SystemGetCudaDriverVersion_v2);
  NVSYM(lib, DeviceGetCount_v2);
  NVSYM(lib, DeviceGetHandleByIndex_v2);
  NVSYM(lib, DeviceGetName);
  NVSYM(lib, DeviceGetUUID);
  NVSYM(lib, DeviceGetPciInfo_v3);
  NVSYM(lib, DeviceGetMinorNumber);
  NVSYM(lib, DeviceGetCudaComputeCapability);
  NVSYM(lib, DeviceGetMemoryInfo);
  NVSYM(lib, DeviceGetMigMode);
  NVSYM(lib, DeviceGetMaxMigDeviceCount);
  NVSYM(lib, DeviceGetMigDeviceHandleByIndex);
  NVSYM(lib, DeviceGetPersistenceMode);
  NVSYM(lib, DeviceGetTotalEccErrors);
  NVSYM(lib, DeviceGetRemappedRows);
  NVSYM(lib, DeviceGetGpuFabricInfo);
  return g_failures == before;
}

/* "OK" text for a result, or "error N (text)". */
static const char* nvres(nvmlReturn_t rc) {
  static char buf[8][160];
  static int slot;
  char* b = buf[slot++ % 8];
  snprintf(b, sizeof buf[0], "error %d (%s)", rc, nv.ErrorString(rc));
  return b;
}

static void nvml_device(unsigned i) {
  nvmlDevice_t d;
  nvmlReturn_t rc = nv.DeviceGetHandleByIndex_v2(i, &d);
  if (rc != 0) {
    printf("nvml: gpu %u: handle %s\n", i, nvres(rc));
    return;
  }
  char name[96], uuid[96];
  if ((rc = nv.DeviceGetName(d, name, sizeof name)) != 0)
    snprintf(name, sizeof name, "%s", nvres(rc));
  if ((rc = nv.DeviceGetUUID(d, uuid, sizeof uuid)) != 0)
    snprintf(uuid, sizeof uuid, "%s", nvres(rc));
  printf("nvml: gpu %u: %s  %s\n", i, name, uuid);

  nvmlPciInfo_t pci;
  if ((rc = nv.DeviceGetPciInfo_v3(d, &pci)) == 0)
    printf("  pci %s (legacy %s, domain %u bus %u device %u, id 0x%08X subsys 0x%08X)\n", pci.busId, pci.busIdLegacy,
           pci.domain, pci.bus, pci.device, pci.pciDeviceId, pci.pciSubSystemId);
  else
    printf("  pci %s\n", nvres(rc));

  unsigned minor;
  int ma, mi;
  nvmlMemory_t mem;
  char line[512];
  int n = 0;
  rc = nv.DeviceGetMinorNumber(d, &minor);
  n += rc == 0 ? snprintf(line + n, sizeof line - n, "minor %u", minor)
               : snprintf(line + n, sizeof line - n, "minor %s", nvres(rc));
  rc = nv.DeviceGetCudaComputeCapability(d, &ma, &mi);
  n += rc == 0 ? snprintf(line + n, sizeof line - n, ", cc %d.%d", ma, mi)
               : snprintf(line + n, sizeof line - n, ", cc %s", nvres(rc));
  rc = nv.DeviceGetMemoryInfo(d, &mem);
  if (rc == 0)
    snprintf(line + n, sizeof line - n, ", memory %llu MiB total, %llu MiB free", mem.total >> 20, mem.free >> 20);
  else
    snprintf(line + n, sizeof line - n, ", memory %s", nvres(rc));
  printf("  %s\n", line);

  unsigned cur, pend, maxmig;
  rc = nv.DeviceGetMigMode(d, &cur, &pend);
  if (rc == 0) {
    nvmlReturn_t rc2 = nv.DeviceGetMaxMigDeviceCount(d, &maxmig);
    unsigned exist = 0;
    nvmlDevice_t m;
    nvmlReturn_t rc3;
    while ((rc3 = nv.DeviceGetMigDeviceHandleByIndex(d, exist, &m)) == 0) {
      char mname[128], muuid[96];
      if (nv.DeviceGetName(m, mname, sizeof mname) != 0)
        strcpy(mname, "?");
      if (nv.DeviceGetUUID(m, muuid, sizeof muuid) != 0)
        strcpy(muuid, "?");
      printf("  mig device %u: %s  %s\n", exist, mname, muuid);
      if (++exist > 64)
        break;
    }
    printf("  mig current %u pending %u, max devices %s, %u MIG devices (next index: %s)\n", cur, pend,
           rc2 == 0 ? (snprintf(line, sizeof line, "%u", maxmig), line) : nvres(rc2), exist, nvres(rc3));
  } else {
    printf("  mig %s\n", nvres(rc));
  }

  int pm;
  unsigned long long ecc;
  n = 0;
  rc = nv.DeviceGetPersistenceMode(d, &pm);
  n += rc == 0 ? snprintf(line + n, sizeof line - n, "persistence %d", pm)
               : snprintf(line + n, sizeof line - n, "persistence %s", nvres(rc));
  rc = nv.DeviceGetTotalEccErrors(d, 1, 1, &ecc); /* uncorrected, aggregate */
  n += rc == 0 ? snprintf(line + n, sizeof line - n, ", ecc uncorrected %llu", ecc)
               : snprintf(line + n, sizeof line - n, ", ecc %s", nvres(rc));
  unsigned cr, ur, pending, failure;
  rc = nv.DeviceGetRemappedRows(d, &cr, &ur, &pending, &failure);
  if (rc == 0)
    snprintf(line + n, sizeof line - n, ", remapped rows corr %u unc %u pending %u failure %u", cr, ur, pending,
             failure);
  else
    snprintf(line + n, sizeof line - n, ", remapped rows %s", nvres(rc));
  printf("  %s\n", line);

  nvmlGpuFabricInfo_t fi;
  rc = nv.DeviceGetGpuFabricInfo(d, &fi);
  if (rc == 0)
    printf("  fabric state %u status %d (%s) clique %u\n", fi.state, fi.status, nv.ErrorString(fi.status), fi.cliqueId);
  else
    printf("  fabric %s\n", nvres(rc));
}

static void run_nvml(void* lib) {
  if (!load_nvml(lib))
    return;
  unsigned count = 0;
  nvmlReturn_t rc = nv.DeviceGetCount_v2(&count);
  if (rc != 1)
    fail("nvmlDeviceGetCount_v2 before nvmlInit must return 1 (Uninitialized)");
  if (nv.Shutdown() != 1)
    fail("nvmlShutdown before nvmlInit must return 1 (Uninitialized)");
  if (strcmp(nv.ErrorString(9), "Driver Not Loaded") != 0 || strcmp(nv.ErrorString(999), "Unknown Error") != 0)
    fail("nvmlErrorString texts");

  rc = nv.Init_v2();
  printf("nvml: nvmlInit_v2 -> %d (%s)\n", rc, nv.ErrorString(rc));
  if (rc != 0) {
    nvmlDevice_t d;
    if (nv.DeviceGetHandleByIndex_v2(0, &d) != 1)
      fail("device calls after a failed nvmlInit must return 1 (Uninitialized)");
    return;
  }
  char drv[96];
  int cuda = 0;
  if ((rc = nv.SystemGetCudaDriverVersion_v2(&cuda)) != 0)
    printf("nvml: cuda driver version %s\n", nvres(rc));
  char tiny[2];
  if (nv.SystemGetDriverVersion(tiny, sizeof tiny) != 7)
    fail("nvmlSystemGetDriverVersion into a 2-byte buffer must return 7 (Insufficient Size)");
  if ((rc = nv.SystemGetDriverVersion(drv, sizeof drv)) != 0)
    snprintf(drv, sizeof drv, "%s", nvres(rc));
  printf("nvml: driver %s, CUDA driver %d (%d.%d)\n", drv, cuda, cuda / 1000, cuda % 1000 / 10);
  if ((rc = nv.DeviceGetCount_v2(&count)) != 0) {
    printf("nvml: device count %s\n", nvres(rc));
    count = 0;
  } else {
    printf("nvml: %u GPUs\n", count);
  }
  for (unsigned i = 0; i < count; i++)
    nvml_device(i);
  nvmlDevice_t d;
  if (nv.DeviceGetHandleByIndex_v2(count, &d) != 2)
    fail("nvmlDeviceGetHandleByIndex_v2 past the last GPU must return 2 (Invalid Argument)");
  if ((rc = nv.InitWithFlags(0)) != 0)
    fail("a second nvmlInitWithFlags must succeed");
  if (nv.Shutdown() != 0 || nv.Shutdown() != 0)
    fail("nvmlShutdown after two inits");
  if (nv.DeviceGetCount_v2(&count) != 1)
    fail("nvmlDeviceGetCount_v2 after the last nvmlShutdown must return 1");
  printf("nvml: shut down\n");
}

/* ---- CUDA ----------------------------------------------------------------------- */

static struct {
  CUresult (*DriverGetVersion)(int*);
  CUresult (*Init)(unsigned);
  CUresult (*DeviceGetCount)(int*);
  CUresult (*DeviceGet)(CUdevice*, int);
  CUresult (*DeviceGetName)(char*, int, CUdevice);
  CUresult (*DeviceGetAttribute)(int*, int, CUdevice);
  CUresult (*DeviceTotalMem_v2)(size_t*, CUdevice);
  CUresult (*GetErrorName)(CUresult, const char**);
  CUresult (*GetErrorString)(CUresult, const char**);
} cu;

#define CUSYM(lib, f) (*(void**)& cu.f = sym(lib, "cu" #f))

static const char* cures(CUresult rc) {
  static char buf[8][192];
  static int slot;
  char* b = buf[slot++ % 8];
  const char *name = NULL, *text = NULL;
  cu.GetErrorName(rc, &name);
  cu.GetErrorString(rc, &text);
  snprintf(b, sizeof buf[0], "%d %s (%s)", rc, name ? name : "?", text ? text : "?");
  return b;
}

static void run_cuda(void* lib) {
  int before = g_failures;
  CUSYM(lib, DriverGetVersion);
  CUSYM(lib, Init);
  CUSYM(lib, DeviceGetCount);
  CUSYM(lib, DeviceGet);
  CUSYM(lib, DeviceGetName);
  CUSYM(lib, DeviceGetAttribute);
  CUSYM(lib, DeviceTotalMem_v2);
  CUSYM(lib, GetErrorName);
  CUSYM(lib, GetErrorString);
  if (g_failures != before)
    return;

  const char* s = NULL;
  if (cu.GetErrorName(804, &s) != 0 || s == NULL || strcmp(s, "CUDA_ERROR_COMPAT_NOT_SUPPORTED_ON_DEVICE") != 0)
    fail("cuGetErrorName(804)");
  if (cu.GetErrorName(123456, &s) != 1)
    fail("cuGetErrorName of an unknown code must return 1");

  int ver = 0, count = 0;
  CUresult rc = cu.DriverGetVersion(&ver);
  printf("cuda: cuDriverGetVersion -> %s, %d (%d.%d)\n", cures(rc), ver, ver / 1000, ver % 1000 / 10);
  if (cu.DeviceGetCount(&count) != 3)
    fail("cuDeviceGetCount before cuInit must return 3 (CUDA_ERROR_NOT_INITIALIZED)");
  rc = cu.Init(0);
  printf("cuda: cuInit -> %s\n", cures(rc));
  if (rc != 0) {
    CUdevice dev;
    if (cu.DeviceGet(&dev, 0) != 3)
      fail("cuDeviceGet after a failed cuInit must return 3");
    return;
  }
  if ((rc = cu.DeviceGetCount(&count)) != 0) {
    printf("cuda: cuDeviceGetCount -> %s\n", cures(rc));
    return;
  }
  printf("cuda: %d devices\n", count);
  for (int i = 0; i < count; i++) {
    CUdevice dev;
    if ((rc = cu.DeviceGet(&dev, i)) != 0) {
      printf("cuda: device %d: cuDeviceGet -> %s\n", i, cures(rc));
      continue;
    }
    char name[128];
    int ma = -1, mi = -1, sms = -1, dom = -1, bus = -1, slot = -1;
    size_t mem = 0;
    if ((rc = cu.DeviceGetName(name, sizeof name, dev)) != 0)
      snprintf(name, sizeof name, "%s", cures(rc));
    cu.DeviceGetAttribute(&ma, 75, dev);
    cu.DeviceGetAttribute(&mi, 76, dev);
    cu.DeviceGetAttribute(&sms, 16, dev);
    cu.DeviceGetAttribute(&dom, 50, dev);
    cu.DeviceGetAttribute(&bus, 33, dev);
    cu.DeviceGetAttribute(&slot, 34, dev);
    cu.DeviceTotalMem_v2(&mem, dev);
    printf("cuda: device %d: %s, cc %d.%d, %zu MiB, %d SMs, pci %04x:%02x:%02x\n", i, name, ma, mi, mem >> 20, sms, dom,
           bus, slot);
  }
  CUdevice dev;
  if (cu.DeviceGet(&dev, count) != 101)
    fail("cuDeviceGet past the last device must return 101 (CUDA_ERROR_INVALID_DEVICE)");
}

int main(int argc, char** argv) {
  if (argc != 3) {
    fprintf(stderr, "usage: %s LIBNVIDIA_ML LIBCUDA   (scenario in $PI_FAKE_GPU_SCENARIO)\n", argv[0]);
    return 2;
  }
  setvbuf(stdout, NULL, _IOLBF, 0);
  const char* scen = getenv("PI_FAKE_GPU_SCENARIO");
  printf("scenario: %s\n", scen ? scen : "(unset)");
  void* nvml = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
  if (nvml == NULL)
    printf("FAIL: dlopen %s: %s\n", argv[1], dlerror()), g_failures++;
  else
    run_nvml(nvml);
  void* cuda = dlopen(argv[2], RTLD_NOW | RTLD_LOCAL);
  if (cuda == NULL)
    printf("FAIL: dlopen %s: %s\n", argv[2], dlerror()), g_failures++;
  else
    run_cuda(cuda);
  printf("%s\n", g_failures ? "selftest: FAILED" : "selftest: ok");
  return g_failures ? 1 : 0;
}
