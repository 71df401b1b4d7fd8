// SPDX-License-Identifier: Apache-2.0
/* The step gate (gate.h): the shape of an admitted `sealrun run` command line and the SHA-256 of
 * its admission file. An early refusal with a clear message, not the enforcement: sealrun checks
 * the admission again, byte for byte, before it runs anything. */
#include "gate.h"

#include <errno.h>
#include <fcntl.h>
#include <openssl/evp.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "reason.h"

static int is_hex64(const char* s) {
  size_t i;
  for (i = 0; s[i] != '\0'; ++i)
    if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f'))) return 0;
  return i == 64;
}

int sealrun_gate_sha256_file(const char* path, char hex[65], char* why, size_t why_len) {
  /* O_NONBLOCK: opening a FIFO must not wait for a writer; the fstat below refuses it anyway. */
  int fd = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0)
    return sealrun_fail(why, why_len, "cannot open the admission '%s': %s", path, strerror(errno));
  struct stat st;
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    close(fd);
    return sealrun_fail(why, why_len, "the admission '%s' is not a regular file", path);
  }
  if (st.st_size > SEALRUN_GATE_MAX_ADMISSION) {
    close(fd);
    return sealrun_fail(why, why_len, "the admission '%s' is larger than %d bytes", path,
                        SEALRUN_GATE_MAX_ADMISSION);
  }
  EVP_MD_CTX* ctx = EVP_MD_CTX_new();
  if (ctx == NULL || EVP_DigestInit_ex(ctx, EVP_sha256(), NULL) != 1) {
    EVP_MD_CTX_free(ctx);
    close(fd);
    return sealrun_fail(why, why_len, "SHA-256 is not available");
  }
  unsigned char buf[65536];
  size_t total = 0;
  int rc = 0;
  for (;;) {
    ssize_t n = read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      rc = sealrun_fail(why, why_len, "reading the admission '%s': %s", path, strerror(errno));
      break;
    }
    if (n == 0) break;
    total += (size_t)n;
    /* The file may grow after the fstat: the bound holds on what is read, too. */
    if (total > SEALRUN_GATE_MAX_ADMISSION) {
      rc = sealrun_fail(why, why_len, "the admission '%s' is larger than %d bytes", path,
                        SEALRUN_GATE_MAX_ADMISSION);
      break;
    }
    EVP_DigestUpdate(ctx, buf, (size_t)n);
  }
  unsigned char md[32];
  unsigned int md_len = 0;
  if (rc == 0 && EVP_DigestFinal_ex(ctx, md, &md_len) != 1)
    rc = sealrun_fail(why, why_len, "SHA-256 of '%s' failed", path);
  EVP_MD_CTX_free(ctx);
  close(fd);
  if (rc != 0) return rc;
  for (unsigned int i = 0; i < md_len; ++i) snprintf(hex + 2 * i, 3, "%02x", md[i]);
  hex[64] = '\0';
  return 0;
}

int sealrun_gate_check(const struct sealrun_gate_config* config, int argc, char* const argv[],
                       char* why, size_t why_len) {
  if (argc < 1 || argv == NULL || argv[0] == NULL)
    return sealrun_fail(why, why_len, "the step has no command");
  int known = 0;
  for (size_t i = 0; i < config->n_sealrun_paths; ++i)
    if (strcmp(argv[0], config->sealrun_paths[i]) == 0) known = 1;
  if (!known) {
    /* A name looked up on the user's PATH could be any program called sealrun. */
    return sealrun_fail(why, why_len,
                        "this cluster runs only admitted sealrun runs: the step must run `%s run "
                        "ADMISSION --sha256 HEX ...` (with that full path), not '%s'",
                        config->n_sealrun_paths > 0 ? config->sealrun_paths[0] : "/usr/bin/sealrun",
                        argv[0]);
  }
  if (argc < 3 || strcmp(argv[1], "run") != 0 || argv[2][0] == '-')
    return sealrun_fail(
        why, why_len,
        "this cluster runs only admitted sealrun runs: `%s run ADMISSION --sha256 HEX "
        "...` (the admission right after `run`)",
        argv[0]);
  const char* admission = argv[2];
  const char* sha = NULL;
  for (int i = 3; i < argc; ++i) {
    const char* a = argv[i];
    const char* value = NULL;
    if (strcmp(a, "--") == 0) break;
    if (strcmp(a, "--sha256") == 0) {
      if (i + 1 >= argc) return sealrun_fail(why, why_len, "--sha256 needs a value");
      value = argv[++i];
    } else if (strncmp(a, "--sha256=", 9) == 0) {
      value = a + 9;
    } else if ((strcmp(a, "--mode") == 0 && i + 1 < argc &&
                strcmp(argv[i + 1], "report-only") == 0) ||
               strcmp(a, "--mode=report-only") == 0) {
      if (!config->allow_report_only)
        return sealrun_fail(
            why, why_len, "this cluster refuses `--mode report-only`: runs here must be enforced");
      continue;
    } else {
      continue;
    }
    if (sha != NULL) return sealrun_fail(why, why_len, "--sha256 is given more than once");
    sha = value;
  }
  if (sha == NULL)
    return sealrun_fail(why, why_len,
                        "the sealrun run has no --sha256: give the admission's SHA-256");
  if (!is_hex64(sha))
    return sealrun_fail(why, why_len, "--sha256 '%s' is not 64 lower-case hex digits", sha);
  char observed[65];
  if (sealrun_gate_sha256_file(admission, observed, why, why_len) != 0) return -1;
  if (strcmp(observed, sha) != 0)
    return sealrun_fail(
        why, why_len,
        "the admission '%s' does not match --sha256: its SHA-256 is %s, the command "
        "says %s",
        admission, observed, sha);
  return 0;
}
