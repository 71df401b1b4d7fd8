// SPDX-License-Identifier: Apache-2.0
/* spank_sealrun.so: the SPANK plugin a Slurm site installs so that sealrun runs fully enforced
 * inside ordinary users' jobs, and so that job steps (srun), which the job_submit.lua gate cannot
 * see, are gated too. In plugstack.conf:
 *
 *   required /usr/lib/x86_64-linux-gnu/sealrun/slurm/spank_sealrun.so sealrun=/usr/bin/sealrun
 *
 * Arguments (all optional): `sealrun=PATH` (repeatable: the sealrun executables a step may run;
 * default /usr/bin/sealrun), `gate=on|off` (default on), `delegate=pids|off` (default pids),
 * `report_only=refuse|allow` (default refuse), `pids_root=DIR` (default /sys/fs/cgroup/pids).
 *
 * Remote context only (slurmstepd); in srun, sbatch and salloc it does nothing:
 * - slurm_spank_task_post_fork (root, each task forked but not yet run): hands the step a pids
 *   group of its user's (delegate.h) and moves the task into it. A failure is logged and the
 *   step runs on: sealrun then refuses an unenforceable run itself (exit 4), which is the
 *   enforcement; failing here would fail (and, for a batch step, drain) the node instead.
 * - slurm_spank_task_init (the task, as the user, just before exec): the step gate (gate.h) for
 *   srun steps. Batch scripts are gated at submission by job_submit.lua (refusing a batch step
 *   here would drain the node), and the extern step runs no user command. A refused step's task
 *   exits 1 before anything of the user's runs, with the reason on its stderr.
 * - slurm_spank_exit (root, the step is over): removes the step's pids group. */
#include <slurm/spank.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "delegate.h"
#include "gate.h"

SPANK_PLUGIN(sealrun, 1);

struct plugin_config {
  struct sealrun_gate_config gate_config;
  int gate;
  int delegate;
  const char* pids_root;
};

static struct plugin_config config;

/* Slurm 22.05 stops a step only when a `required` plugin returns a negative value; ESPANK_ERROR
 * (a positive spank_err_t) is logged and the task runs anyway (plugstack.c, _do_call_stack and its
 * callers test `< 0`). */
static const int kStop = -1;

static int parse_args(int ac, char** av) {
  memset(&config, 0, sizeof config);
  config.gate = 1;
  config.delegate = 1;
  config.pids_root = "/sys/fs/cgroup/pids";
  for (int i = 0; i < ac; ++i) {
    const char* a = av[i];
    if (strncmp(a, "sealrun=", 8) == 0 && a[8] == '/') {
      if (config.gate_config.n_sealrun_paths == SEALRUN_GATE_MAX_PATHS) {
        slurm_error("sealrun: at most %d sealrun= arguments", SEALRUN_GATE_MAX_PATHS);
        return -1;
      }
      config.gate_config.sealrun_paths[config.gate_config.n_sealrun_paths++] = a + 8;
    } else if (strcmp(a, "gate=on") == 0 || strcmp(a, "gate=off") == 0) {
      config.gate = strcmp(a, "gate=on") == 0;
    } else if (strcmp(a, "delegate=pids") == 0 || strcmp(a, "delegate=off") == 0) {
      config.delegate = strcmp(a, "delegate=pids") == 0;
    } else if (strcmp(a, "report_only=refuse") == 0 || strcmp(a, "report_only=allow") == 0) {
      config.gate_config.allow_report_only = strcmp(a, "report_only=allow") == 0;
    } else if (strncmp(a, "pids_root=", 10) == 0 && a[10] == '/') {
      config.pids_root = a + 10;
    } else {
      slurm_error(
          "sealrun: unknown plugin argument '%s' (plugstack.conf); see "
          "contrib/slurm/README.md",
          a);
      return -1;
    }
  }
  if (config.gate_config.n_sealrun_paths == 0)
    config.gate_config.sealrun_paths[config.gate_config.n_sealrun_paths++] = "/usr/bin/sealrun";
  return 0;
}

int slurm_spank_init(spank_t sp, int ac, char** av) {
  (void)sp;
  /* A misconfigured plugstack.conf fails every step, loudly, rather than gating nothing. */
  return parse_args(ac, av) == 0 ? ESPANK_SUCCESS : kStop;
}

struct step_ids {
  uid_t uid;
  gid_t gid;
  uint32_t job_id;
  uint32_t step_id;
  char step[32];
};

static int get_ids(spank_t sp, struct step_ids* ids) {
  if (spank_get_item(sp, S_JOB_UID, &ids->uid) != ESPANK_SUCCESS ||
      spank_get_item(sp, S_JOB_GID, &ids->gid) != ESPANK_SUCCESS ||
      spank_get_item(sp, S_JOB_ID, &ids->job_id) != ESPANK_SUCCESS ||
      spank_get_item(sp, S_JOB_STEPID, &ids->step_id) != ESPANK_SUCCESS)
    return -1;
  sealrun_delegate_step_name(ids->step_id, ids->step);
  return 0;
}

int slurm_spank_task_post_fork(spank_t sp, int ac, char** av) {
  (void)ac;
  (void)av;
  if (!spank_remote(sp) || !config.delegate) return ESPANK_SUCCESS;
  struct step_ids ids;
  pid_t pid = 0;
  char why[512] = "";
  if (get_ids(sp, &ids) != 0 || spank_get_item(sp, S_TASK_PID, &pid) != ESPANK_SUCCESS) {
    slurm_error("sealrun: cannot read the step's ids; no pids group delegated");
    return ESPANK_SUCCESS;
  }
  if (ids.uid == 0) return ESPANK_SUCCESS; /* root makes its groups anywhere */
  int root = sealrun_delegate_open_root(config.pids_root, 1, why, sizeof why);
  int step = root < 0 ? -1
                      : sealrun_delegate_make(root, ids.uid, ids.gid, ids.job_id, ids.step, why,
                                              sizeof why);
  int rc = step < 0 ? -1 : sealrun_delegate_join(step, pid, why, sizeof why);
  if (rc != 0)
    slurm_error(
        "sealrun: job %u %s: no pids group delegated (%s); sealrun will refuse runs "
        "that need pids_max",
        ids.job_id, ids.step, why);
  else
    slurm_verbose("sealrun: job %u %s: task %d in %s/%s/uid_%u/job_%u/%s", ids.job_id, ids.step,
                  (int)pid, config.pids_root, SEALRUN_DELEGATE_TOP, (unsigned)ids.uid, ids.job_id,
                  ids.step);
  if (step >= 0) close(step);
  if (root >= 0) close(root);
  return ESPANK_SUCCESS;
}

int slurm_spank_task_init(spank_t sp, int ac, char** av) {
  (void)ac;
  (void)av;
  if (!spank_remote(sp) || !config.gate) return ESPANK_SUCCESS;
  struct step_ids ids;
  if (get_ids(sp, &ids) != 0) {
    slurm_error("sealrun: cannot read the step's ids: refusing the step");
    return kStop;
  }
  if (ids.step_id == SEALRUN_SLURM_BATCH_SCRIPT || ids.step_id == SEALRUN_SLURM_EXTERN_CONT)
    return ESPANK_SUCCESS;
  int argc = 0;
  char** argv = NULL;
  if (spank_get_item(sp, S_JOB_ARGV, &argc, &argv) != ESPANK_SUCCESS) {
    slurm_error("sealrun: cannot read the step's command: refusing the step");
    return kStop;
  }
  char why[1024] = "";
  if (sealrun_gate_check(&config.gate_config, argc, argv, why, sizeof why) != 0) {
    /* In the task, slurm_error writes to the task's stderr (the user's) and to slurmd's log. */
    slurm_error("sealrun: job %u %s refused: %s", ids.job_id, ids.step, why);
    return kStop;
  }
  return ESPANK_SUCCESS;
}

int slurm_spank_exit(spank_t sp, int ac, char** av) {
  (void)ac;
  (void)av;
  if (!spank_remote(sp) || !config.delegate) return ESPANK_SUCCESS;
  struct step_ids ids;
  if (get_ids(sp, &ids) != 0 || ids.uid == 0) return ESPANK_SUCCESS;
  char why[512] = "";
  int root = sealrun_delegate_open_root(config.pids_root, 1, why, sizeof why);
  if (root < 0) return ESPANK_SUCCESS;
  if (sealrun_delegate_remove(root, ids.uid, ids.job_id, ids.step, why, sizeof why) != 0)
    slurm_error("sealrun: job %u %s: %s (a killed run's group is left for `sealrun sweep`)",
                ids.job_id, ids.step, why);
  close(root);
  return ESPANK_SUCCESS;
}
