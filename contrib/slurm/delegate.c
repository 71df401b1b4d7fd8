// SPDX-License-Identifier: Apache-2.0
/* Making, joining and removing the delegated pids group of a step (delegate.h). Every path is
 * walked one component at a time from the hierarchy's root fd with O_NOFOLLOW, so nothing below
 * the root (whose step directories belong to users) can redirect root's mkdir, chown or write. */
#include "delegate.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/magic.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <unistd.h>

#include "reason.h"

void sealrun_delegate_step_name(uint32_t step_id, char out[32]) {
  if (step_id == SEALRUN_SLURM_BATCH_SCRIPT)
    snprintf(out, 32, "step_batch");
  else if (step_id == SEALRUN_SLURM_EXTERN_CONT)
    snprintf(out, 32, "step_extern");
  else if (step_id == SEALRUN_SLURM_INTERACTIVE_STEP)
    snprintf(out, 32, "step_interactive");
  else
    snprintf(out, 32, "step_%u", step_id);
}

int sealrun_delegate_open_root(const char* path, int require_cgroupfs, char* why, size_t why_len) {
  int fd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) return sealrun_fail(why, why_len, "open %s: %s", path, strerror(errno));
  struct statfs sfs;
  if (require_cgroupfs && (fstatfs(fd, &sfs) != 0 || sfs.f_type != CGROUP_SUPER_MAGIC)) {
    close(fd);
    return sealrun_fail(why, why_len, "%s is not a cgroup v1 hierarchy", path);
  }
  return fd;
}

/* mkdir (EEXIST is fine) and open one level, refusing anything but a real directory. */
static int step_into(int parent, const char* name, char* why, size_t why_len) {
  if (mkdirat(parent, name, 0755) != 0 && errno != EEXIST)
    return sealrun_fail(why, why_len, "mkdir %s: %s", name, strerror(errno));
  int fd = openat(parent, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) return sealrun_fail(why, why_len, "open %s: %s", name, strerror(errno));
  return fd;
}

static int make_once(int root_fd, uid_t uid, gid_t gid, uint32_t job_id, const char* step,
                     char* why, size_t why_len) {
  char uid_name[32], job_name[32];
  snprintf(uid_name, sizeof uid_name, "uid_%u", (unsigned)uid);
  snprintf(job_name, sizeof job_name, "job_%u", job_id);
  const char* levels[] = {SEALRUN_DELEGATE_TOP, uid_name, job_name, step};
  int fd = -1, parent = root_fd;
  for (size_t i = 0; i < sizeof levels / sizeof levels[0]; ++i) {
    fd = step_into(parent, levels[i], why, why_len);
    if (parent != root_fd) close(parent);
    if (fd < 0) return -1;
    parent = fd;
  }
  /* Only the step's own directory is the user's: creating groups needs write access to it, and
   * the kernel then makes the new group's files the user's. Its cgroup.procs stays root's. */
  if (fchown(fd, uid, gid) != 0) {
    int e = errno;
    close(fd);
    return sealrun_fail(why, why_len, "chown the step's pids group to %u:%u: %s", (unsigned)uid,
                        (unsigned)gid, strerror(e));
  }
  return fd;
}

int sealrun_delegate_make(int root_fd, uid_t uid, gid_t gid, uint32_t job_id, const char* step,
                          char* why, size_t why_len) {
  /* Another step of the job ending at the same moment may remove the (then empty) job group
   * between our mkdir and the next level's; a second walk makes it again. */
  for (int attempt = 0; attempt < 3; ++attempt) {
    int fd = make_once(root_fd, uid, gid, job_id, step, why, why_len);
    if (fd >= 0) return fd;
  }
  return -1;
}

int sealrun_delegate_join(int step_fd, pid_t pid, char* why, size_t why_len) {
  int fd = openat(step_fd, "cgroup.procs", O_WRONLY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) return sealrun_fail(why, why_len, "open cgroup.procs: %s", strerror(errno));
  char text[32];
  int n = snprintf(text, sizeof text, "%d", (int)pid);
  ssize_t w = write(fd, text, (size_t)n);
  int e = errno;
  close(fd);
  if (w != n)
    return sealrun_fail(why, why_len, "move pid %d into the step's pids group: %s", (int)pid,
                        w < 0 ? strerror(e) : "short write");
  return 0;
}

/* rmdir of every empty step_* group of one job, then of the job's group. An rmdir of a cgroup
 * that holds a process or a child group fails (EBUSY, ENOTEMPTY): nothing in use is removed. */
static void remove_empty_job(int user_fd, const char* job_name) {
  int job = openat(user_fd, job_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (job < 0) return;
  DIR* d = fdopendir(job);
  if (d == NULL) {
    close(job);
    return;
  }
  struct dirent* e;
  while ((e = readdir(d)) != NULL)
    if (e->d_type == DT_DIR && strncmp(e->d_name, "step_", 5) == 0)
      (void)unlinkat(dirfd(d), e->d_name, AT_REMOVEDIR);
  closedir(d);
  (void)unlinkat(user_fd, job_name, AT_REMOVEDIR);
}

int sealrun_delegate_remove(int root_fd, uid_t uid, uint32_t job_id, const char* step, char* why,
                            size_t why_len) {
  char uid_name[32], job_name[32];
  snprintf(uid_name, sizeof uid_name, "uid_%u", (unsigned)uid);
  snprintf(job_name, sizeof job_name, "job_%u", job_id);
  int top = openat(root_fd, SEALRUN_DELEGATE_TOP, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (top < 0) return errno == ENOENT ? 0 : sealrun_fail(why, why_len, "open: %s", strerror(errno));
  int user = openat(top, uid_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  int job = user < 0 ? -1 : openat(user, job_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  int rc = 0;
  if (job >= 0 && unlinkat(job, step, AT_REMOVEDIR) != 0 && errno != ENOENT)
    rc = sealrun_fail(why, why_len, "rmdir %s/%s/%s/%s: %s", SEALRUN_DELEGATE_TOP, uid_name,
                      job_name, step, strerror(errno));
  if (job >= 0) close(job);
  if (user >= 0) {
    /* This job's group goes when no other step uses it. The user's other jobs' groups are tried
     * too: a killed run leaves its step's group behind (it holds the run's own group until
     * `sealrun sweep` removes that), and nothing else would ever remove it afterwards. */
    int scan = dup(user);
    DIR* d = scan < 0 ? NULL : fdopendir(scan);
    if (d == NULL && scan >= 0) close(scan);
    struct dirent* e;
    while (d != NULL && (e = readdir(d)) != NULL)
      if (e->d_type == DT_DIR && strncmp(e->d_name, "job_", 4) == 0)
        remove_empty_job(user, e->d_name);
    if (d != NULL) closedir(d);
    close(user);
  }
  (void)unlinkat(top, uid_name, AT_REMOVEDIR);
  close(top);
  return rc;
}
