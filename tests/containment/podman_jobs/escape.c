// SPDX-License-Identifier: Apache-2.0
/* A hostile job for the podman integration tests: tries ONE escape named by argv[1] and reports.
 * Exit 0: the attempt was refused (what the sandbox must do); 1: it succeeded (an escape);
 * 2: usage. Statically linked, because the busybox test image has no C library.
 *   escape unshare-user | clone-newuser | keyctl | add_key | ptrace-1 | mount | setns-user
 *          io_uring_setup | bpf | perf_event_open | userfaultfd
 *          connect-tcp PORT | connect-abstract NAME | fds | tiocsti
 *          fork N: forks up to N sleeping children, prints "started K", kills them (exit 0) */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <sched.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/ptrace.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

static int report(const char* what, long rc) {
  if (rc < 0) {
    printf("%s: denied (%s)\n", what, strerror(errno));
    return 0;
  }
  printf("%s: ALLOWED\n", what);
  return 1;
}

static long try_clone_newuser(void) {
  long pid = syscall(SYS_clone, CLONE_NEWUSER | SIGCHLD, 0, 0, 0, 0);
  if (pid == 0) _exit(0);
  if (pid > 0) waitpid((pid_t)pid, NULL, 0);
  return pid;
}

static long try_connect_tcp(int port) {
  int s = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (s < 0) return -1;
  struct sockaddr_in a;
  memset(&a, 0, sizeof a);
  a.sin_family = AF_INET;
  a.sin_port = htons((unsigned short)port);
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  long rc = connect(s, (struct sockaddr*)&a, sizeof a);
  close(s);
  return rc;
}

static long try_connect_abstract(const char* name) {
  int s = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (s < 0) return -1;
  struct sockaddr_un a;
  memset(&a, 0, sizeof a);
  a.sun_family = AF_UNIX;
  size_t n = strlen(name);
  if (n > sizeof a.sun_path - 2) n = sizeof a.sun_path - 2;
  memcpy(a.sun_path + 1, name, n); /* leading NUL: the abstract namespace */
  long rc =
      connect(s, (struct sockaddr*)&a, (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + n));
  close(s);
  return rc;
}

/* Lists open descriptors other than the one reading /proc/self/fd; 0 if only 0, 1, 2. */
static int list_fds(void) {
  DIR* d = opendir("/proc/self/fd");
  if (d == NULL) return 2;
  int extra = 0;
  struct dirent* e;
  while ((e = readdir(d)) != NULL) {
    if (e->d_name[0] == '.') continue;
    int fd = atoi(e->d_name);
    if (fd == dirfd(d)) continue;
    printf("fd %d\n", fd);
    if (fd > 2) extra = 1;
  }
  closedir(d);
  return extra;
}

/* A bounded fork bomb: the pids limit must stop it short of n. */
static int fork_many(int n) {
  pid_t kids[4096];
  int k = 0;
  if (n > 4096) n = 4096;
  while (k < n) {
    pid_t pid = fork();
    if (pid == 0) {
      pause();
      _exit(0);
    }
    if (pid < 0) break;
    kids[k++] = pid;
  }
  printf("started %d\n", k);
  for (int i = 0; i < k; ++i) kill(kids[i], SIGKILL);
  for (int i = 0; i < k; ++i) waitpid(kids[i], NULL, 0);
  return 0;
}

/* TIOCSTI pushes a byte into a terminal's input queue, as if typed: tried on stdin, stdout, stderr
 * and the controlling terminal. Succeeds if any of them takes it. */
static long try_tiocsti(void) {
  char c = 'x';
  int last = ENOTTY;
  for (int fd = 0; fd <= 2; ++fd) {
    if (ioctl(fd, TIOCSTI, &c) == 0) return 0;
    last = errno;
  }
  int tty = open("/dev/tty", O_RDWR | O_NOCTTY);
  if (tty >= 0) {
    int rc = ioctl(tty, TIOCSTI, &c);
    if (rc != 0) last = errno;
    close(tty);
    if (rc == 0) return 0;
  }
  errno = last;
  return -1;
}

int main(int argc, char** argv) {
  if (argc < 2) return 2;
  const char* m = argv[1];
  setvbuf(stdout, NULL, _IONBF, 0);
  if (!strcmp(m, "unshare-user")) return report(m, unshare(CLONE_NEWUSER));
  if (!strcmp(m, "clone-newuser")) return report(m, try_clone_newuser());
  if (!strcmp(m, "keyctl")) return report(m, syscall(SYS_keyctl, 0 /* GET_KEYRING_ID */, -3, 1));
  if (!strcmp(m, "add_key"))
    return report(m, syscall(SYS_add_key, "user", "sealrun", "x", 1, -3 /* session */));
  if (!strcmp(m, "ptrace-1")) return report(m, ptrace(PTRACE_ATTACH, 1, 0, 0));
  if (!strcmp(m, "mount")) return report(m, mount("x", "/tmp", "tmpfs", 0, NULL));
  if (!strcmp(m, "setns-user")) {
    int fd = open("/proc/1/ns/user", O_RDONLY | O_CLOEXEC);
    return report(m, fd < 0 ? -1 : setns(fd, 0));
  }
  if (!strcmp(m, "io_uring_setup")) {
    char params[120];
    memset(params, 0, sizeof params);
    return report(m, syscall(SYS_io_uring_setup, 1, params));
  }
  if (!strcmp(m, "bpf")) {
    char attr[128];
    memset(attr, 0, sizeof attr);
    return report(m, syscall(SYS_bpf, 0 /* BPF_MAP_CREATE */, attr, sizeof attr));
  }
  if (!strcmp(m, "perf_event_open")) {
    char attr[128];
    memset(attr, 0, sizeof attr);
    *(unsigned*)(attr + 4) = sizeof attr; /* attr.size */
    return report(m, syscall(SYS_perf_event_open, attr, 0, -1, -1, 0));
  }
  if (!strcmp(m, "userfaultfd")) return report(m, syscall(SYS_userfaultfd, O_CLOEXEC));
  if (!strcmp(m, "connect-tcp") && argc > 2) return report(m, try_connect_tcp(atoi(argv[2])));
  if (!strcmp(m, "connect-abstract") && argc > 2) return report(m, try_connect_abstract(argv[2]));
  if (!strcmp(m, "fds")) return list_fds();
  if (!strcmp(m, "tiocsti")) return report(m, try_tiocsti());
  if (!strcmp(m, "fork") && argc > 2) return fork_many(atoi(argv[2]));
  fprintf(stderr, "escape: unknown mode %s\n", m);
  return 2;
}
