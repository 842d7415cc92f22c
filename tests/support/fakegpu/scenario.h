/* Scenario file reader shared by fake_nvml.c and fake_cuda.c.
 *
 * Everything here is static, so each fake library gets its own private copy of the table
 * and the functions; the includer decides when to call load_scenario() and what a missing
 * scenario means (NVML: driver not loaded; CUDA: no device).
 *
 * The file is named by $PI_FAKE_GPU_SCENARIO. Format: `key = value` lines; `#` starts a
 * comment (at the start of a line or after white space); white space around key and value
 * is dropped; lines without `=` or with an empty key are ignored; a later line for the same
 * key wins. Limits: lines of 1023 bytes, keys of 95, values of 223 (longer ones are cut),
 * at most 4096 entries (more are ignored).
 *
 * Per-GPU values: gpu.N.KEY is the value of KEY for GPU N; gpu.*.KEY is the default for
 * every GPU. A value may ask for an error instead of data: `unsupported` (value_rc gives
 * 3, NVML_ERROR_NOT_SUPPORTED) or `err:N` (value_rc gives N).
 */
#ifndef PI_FAKEGPU_SCENARIO_H
#define PI_FAKEGPU_SCENARIO_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Not every includer uses every helper. */
#define SCENARIO_FN static __attribute__((unused))

#define MAX_ENTRIES 4096
#define MAX_GPUS 64
#define MAX_MIG 8

struct entry {
  char key[96];
  char val[224];
};
static struct entry g_kv[MAX_ENTRIES];
static int g_nkv;
static int g_have_scenario; /* 1 when the last load_scenario() read a file */

SCENARIO_FN char* trim(char* s) {
  while (*s == ' ' || *s == '\t')
    s++;
  size_t n = strlen(s);
  while (n > 0 && (s[n - 1] == ' ' || s[n - 1] == '\t' || s[n - 1] == '\n' || s[n - 1] == '\r'))
    s[--n] = '\0';
  return s;
}

/* (Re)reads the scenario file into g_kv; not thread-safe, the includer serialises calls. */
SCENARIO_FN void load_scenario(void) {
  g_nkv = 0;
  g_have_scenario = 0;
  const char* path = getenv("PI_FAKE_GPU_SCENARIO");
  if (path == NULL || *path == '\0')
    return;
  FILE* f = fopen(path, "r");
  if (f == NULL)
    return;
  char line[1024];
  while (fgets(line, sizeof line, f) != NULL) {
    for (char* p = line; *p; p++)
      if (*p == '#' && (p == line || p[-1] == ' ' || p[-1] == '\t')) {
        *p = '\0';
        break;
      }
    char* eq = strchr(line, '=');
    if (eq == NULL)
      continue;
    *eq = '\0';
    char *k = trim(line), *v = trim(eq + 1);
    if (*k == '\0' || g_nkv == MAX_ENTRIES)
      continue;
    snprintf(g_kv[g_nkv].key, sizeof g_kv[g_nkv].key, "%s", k);
    snprintf(g_kv[g_nkv].val, sizeof g_kv[g_nkv].val, "%s", v);
    g_nkv++;
  }
  fclose(f);
  g_have_scenario = 1;
}

SCENARIO_FN const char* lookup(const char* key) {
  for (int i = g_nkv - 1; i >= 0; i--)
    if (strcmp(g_kv[i].key, key) == 0)
      return g_kv[i].val;
  return NULL;
}

/* gpu.IDX.FIELD, else gpu.*.FIELD, else NULL. */
SCENARIO_FN const char* gpu_lookup(unsigned idx, const char* field) {
  char key[128];
  snprintf(key, sizeof key, "gpu.%u.%s", idx, field);
  const char* v = lookup(key);
  if (v == NULL) {
    snprintf(key, sizeof key, "gpu.*.%s", field);
    v = lookup(key);
  }
  return v;
}

/* Whether a value asks for an error: `unsupported` or `err:...`. */
SCENARIO_FN int is_error_value(const char* v) {
  return v != NULL && (strcmp(v, "unsupported") == 0 || strncmp(v, "err:", 4) == 0);
}

/* The return code a value asks for: `unsupported` -> 3, `err:N` -> N, else 0. */
SCENARIO_FN int value_rc(const char* v) {
  if (!is_error_value(v))
    return 0;
  if (strcmp(v, "unsupported") == 0)
    return 3;
  return (int)strtol(v + 4, NULL, 0);
}

/* The number a value holds (strtoll, base 0); def when it is missing, empty or not a number. */
SCENARIO_FN long long to_ll(const char* v, long long def) {
  if (v == NULL || *v == '\0')
    return def;
  char* end;
  long long x = strtoll(v, &end, 0);
  return end == v ? def : x;
}

SCENARIO_FN long long global_ll(const char* key, long long def) {
  return to_ll(lookup(key), def);
}

/* Field of GPU idx, or NULL when it asks for a non-zero return code; then *rc (when rc is
 * not NULL) gets that code unless it already holds one. */
SCENARIO_FN const char* gpu_value(unsigned idx, const char* field, int* rc) {
  const char* v = gpu_lookup(idx, field);
  int r = value_rc(v);
  if (r != 0) {
    if (rc != NULL && *rc == 0)
      *rc = r;
    return NULL;
  }
  return v;
}

/* Integer field of GPU idx (def if unset or an error); *rc as for gpu_value. */
SCENARIO_FN long long gpu_ll(unsigned idx, const char* field, long long def, int* rc) {
  return to_ll(gpu_value(idx, field, rc), def);
}

/* String field of GPU idx (def if unset or an error); *rc as for gpu_value. */
SCENARIO_FN const char* gpu_str(unsigned idx, const char* field, const char* def, int* rc) {
  const char* v = gpu_value(idx, field, rc);
  return v != NULL ? v : def;
}

#endif /* PI_FAKEGPU_SCENARIO_H */
