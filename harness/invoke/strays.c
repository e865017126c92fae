/* harness/invoke/strays.c — see strays.h. */
#define _GNU_SOURCE
#include "harness/invoke/strays.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

static pid_t watch_pid;

/* The children this process had when it started (a shell's `exec qmmcheck ... > >(tee log)`
 * leaves its tee to it): never strays, by pid and start time (a pid is reused). */
#define INHERITED_MAX 64
static struct {
    pid_t pid;
    unsigned long long start;
} inherited[INHERITED_MAX];
static int n_inherited;

/* The parent pid and start time in /proc/PID/stat (fields 4 and 22, after the command name's
 * closing parenthesis); -1 when it cannot be read. */
static pid_t parent_of(const char *pid, unsigned long long *start)
{
    char path[64], buf[1024];
    snprintf(path, sizeof path, "/proc/%s/stat", pid);
    FILE *f = fopen(path, "r");
    if (!f)
        return -1;
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = '\0';
    const char *p = strrchr(buf, ')');
    int ppid;
    char state;
    if (!p || sscanf(p + 1, " %c %d", &state, &ppid) != 2)
        return -1;
    /* field 22 is the 20th after the ')' */
    *start = 0;
    for (int field = 3; *p && field < 22; p++)
        if (*p == ' ' && ++field == 22)
            *start = strtoull(p + 1, NULL, 10);
    return (pid_t)ppid;
}

#define OWNED_MAX 1024
static pid_t owned[OWNED_MAX];

void qh_strays_own(pid_t pid)
{
    for (int i = 0; i < OWNED_MAX && pid > 0; i++)
        if (owned[i] == 0) {
            owned[i] = pid;
            return;
        }
}

void qh_strays_disown(pid_t pid)
{
    for (int i = 0; i < OWNED_MAX && pid > 0; i++)
        if (owned[i] == pid)
            owned[i] = 0;
}

static int is_owned(pid_t pid)
{
    for (int i = 0; i < OWNED_MAX; i++)
        if (owned[i] == pid)
            return 1;
    return 0;
}

static int was_inherited(pid_t pid, unsigned long long start)
{
    for (int i = 0; i < n_inherited; i++)
        if (inherited[i].pid == pid && inherited[i].start == start)
            return 1;
    return 0;
}

/* Calls fn(pid, start) for each child of this process found in one look at /proc; the count
 * of calls that returned 1. */
static int each_child(int (*fn)(pid_t, unsigned long long))
{
    DIR *d = opendir("/proc");
    if (!d)
        return 0;
    pid_t self = getpid();
    int n = 0;
    for (struct dirent *e; (e = readdir(d)) != NULL;) {
        unsigned long long start;
        if (isdigit((unsigned char)e->d_name[0]) && parent_of(e->d_name, &start) == self)
            n += fn((pid_t)atoi(e->d_name), start);
    }
    closedir(d);
    return n;
}

static int note_inherited(pid_t pid, unsigned long long start)
{
    if (n_inherited == INHERITED_MAX)
        return 0;
    inherited[n_inherited].pid = pid;
    inherited[n_inherited++].start = start;
    return 1;
}

/* Kills and reaps a child that is not one this process started with. */
static int kill_stray(pid_t pid, unsigned long long start)
{
    if (was_inherited(pid, start) || is_owned(pid))
        return 0;
    kill(pid, SIGKILL);
    while (waitpid(pid, NULL, 0) < 0 && errno == EINTR) {
    }
    return 1;
}

static void strays_at_exit(void)
{
    if (getpid() == watch_pid)
        qh_strays_end();
}

void qh_strays_watch(void)
{
    if (watch_pid)
        return;
    watch_pid = getpid();
    each_child(note_inherited);
    prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0);
    prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
    atexit(strays_at_exit);
}

int qh_strays_end(void)
{
    int total = 0;
    for (int round = 0; round < 64; round++) {
        int n = each_child(kill_stray);
        if (n == 0)
            break;
        total += n;
    }
    return total;
}

void qh_strays_reap_group(pid_t pgid)
{
    /* each was sent SIGKILL with its group: waiting for it is short (WNOHANG, just after the
     * kill, found none of them dead yet, and a long diff gathered one zombie a call) */
    if (pgid > 0)
        while (waitpid(-pgid, NULL, 0) > 0 || errno == EINTR) {
        }
}
