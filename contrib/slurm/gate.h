/* The step gate of the sealrun SPANK plugin, as plain C with no Slurm types: given a step's argv
 * and working directory, decide whether it is an admitted `sealrun run` (the site's sealrun
 * executable, `run`, an admission file, `--sha256 HEX` matching that file's SHA-256) and, when it
 * is not, say why in one sentence for the user. The same rules as contrib/slurm/job_submit.lua
 * applies to batch scripts; kept free of spank.h so the unit tests can call it directly. */
#ifndef SEALRUN_CONTRIB_SLURM_GATE_H
#define SEALRUN_CONTRIB_SLURM_GATE_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The admission size bound sealrun itself applies (docs/contract.md: at most 1 MiB). */
#define SEALRUN_GATE_MAX_ADMISSION (1024 * 1024)
#define SEALRUN_GATE_MAX_PATHS 8

struct sealrun_gate_config {
  /* The sealrun executables a step may run, as absolute paths (argv[0] must be one of them). */
  const char* sealrun_paths[SEALRUN_GATE_MAX_PATHS];
  size_t n_sealrun_paths;
  /* Allow `--mode report-only` (the run proceeds with an unenforced dimension). Off by default. */
  int allow_report_only;
};

/* Fills `hex` (65 bytes) with the SHA-256 of the regular file `path` (never following a
 * symlink, never blocking on a FIFO, at most SEALRUN_GATE_MAX_ADMISSION bytes). Returns 0, or -1
 * with a reason in `why`. */
int sealrun_gate_sha256_file(const char* path, char hex[65], char* why, size_t why_len);

/* Returns 0 when argv is an admitted `sealrun run` whose admission (a path relative to the
 * process's working directory, or absolute) hashes to its `--sha256`; otherwise -1 with the
 * reason for the user in `why`. */
int sealrun_gate_check(const struct sealrun_gate_config* config, int argc, char* const argv[],
                       char* why, size_t why_len);

#ifdef __cplusplus
}
#endif

#endif
