// SPDX-License-Identifier: Apache-2.0
/* The pids group the sealrun SPANK plugin hands to a job step on a cgroup v1 node. Slurm 22.05's
 * cgroup/v1 plugin gives a step memory and freezer groups owned by the job's user but leaves its
 * processes in the root of the pids hierarchy, where an ordinary user cannot create a group;
 * sealrun (which makes its own groups under the process's own group in each hierarchy, see
 * containment/resgroup/cgroup_v1.h) then cannot enforce pids_max and refuses to run. The plugin
 * makes <pids>/sealrun_slurm/uid_U/job_J/step_S, owned by the job's user, and puts the step's
 * tasks in it before they run; it removes the groups again when the step ends. Plain C over a
 * directory fd, so the unit tests can point it at a temp tree. */
#ifndef SEALRUN_CONTRIB_SLURM_DELEGATE_H
#define SEALRUN_CONTRIB_SLURM_DELEGATE_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Slurm's reserved step ids (slurm.h: SLURM_BATCH_SCRIPT, SLURM_EXTERN_CONT,
 * SLURM_INTERACTIVE_STEP), repeated here so this file needs no Slurm header. */
#define SEALRUN_SLURM_BATCH_SCRIPT 0xfffffffbu
#define SEALRUN_SLURM_EXTERN_CONT 0xfffffffcu
#define SEALRUN_SLURM_INTERACTIVE_STEP 0xfffffffau

/* The directory below the pids hierarchy's root that holds every delegated group. */
#define SEALRUN_DELEGATE_TOP "sealrun_slurm"

/* Slurm's name for a step in its group paths: "batch", "extern", "interactive" or the number. */
void sealrun_delegate_step_name(uint32_t step_id, char out[32]);

/* Opens `path` (the pids hierarchy's root) as a directory; with `require_cgroupfs`, refuses one
 * that is not a cgroup v1 file system. Returns the fd or -1 with a reason. */
int sealrun_delegate_open_root(const char* path, int require_cgroupfs, char* why, size_t why_len);

/* Makes (or reuses) <root>/sealrun_slurm/uid_U/job_J/<step>: every level mode 0755 and owned by
 * root except the step's directory, which is handed to uid:gid so that the user can create groups
 * below it. Never follows a symlink. Returns an O_DIRECTORY fd of the step's group, or -1. */
int sealrun_delegate_make(int root_fd, uid_t uid, gid_t gid, uint32_t job_id, const char* step,
                          char* why, size_t why_len);

/* Moves `pid` into the group (writes its cgroup.procs). */
int sealrun_delegate_join(int step_fd, pid_t pid, char* why, size_t why_len);

/* Removes the step's group, then the job's and the user's if they are empty, and the empty groups
 * of the user's earlier jobs (left when a killed run's group was still inside them and removed
 * since by `sealrun sweep`). A step group that still holds a group of sealrun's (left by a killed
 * run, for `sealrun sweep`) stays: -1 with a reason. */
int sealrun_delegate_remove(int root_fd, uid_t uid, uint32_t job_id, const char* step, char* why,
                            size_t why_len);

#ifdef __cplusplus
}
#endif

#endif
