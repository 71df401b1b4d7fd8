// SPDX-License-Identifier: Apache-2.0
/* Test job: allocates and touches N MiB (argv[1]) one page at a time, so the memory is really
 * charged to its cgroup, then reports "touched N MiB" on stdout. Under a smaller memory limit it
 * is OOM-killed before the report. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

int main(int argc, char** argv) {
  if (argc != 2) return 2;
  size_t mib = strtoull(argv[1], NULL, 10);
  size_t len = mib << 20;
  char* p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) return 3;
  long page = sysconf(_SC_PAGESIZE);
  for (size_t off = 0; off < len; off += (size_t)page) p[off] = 1;
  printf("touched %zu MiB\n", mib);
  return 0;
}
