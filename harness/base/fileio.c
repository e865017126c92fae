/* harness/base/fileio.c — reading and writing whole files, and paths (fileio.h). */
#include "harness/base/fileio.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

int qh_self_exe(char *buf, size_t size)
{
    ssize_t n = size > 1 ? readlink("/proc/self/exe", buf, size - 1) : -1;
    if (n <= 0 || (size_t)n >= size - 1)
        return -1;
    buf[n] = '\0';
    return (int)n;
}

const char *qh_file_kind(unsigned mode)
{
    switch (mode & S_IFMT) {
    case S_IFREG: return "a regular file";
    case S_IFDIR: return "a directory";
    case S_IFIFO: return "a FIFO";
    case S_IFCHR: return "a character device";
    case S_IFBLK: return "a block device";
    case S_IFSOCK: return "a socket";
    case S_IFLNK: return "a symbolic link";
    default: return "an unknown kind of file";
    }
}

int qh_read_file(const char *path, size_t max, uint8_t **buf, size_t *len, qh_error *err)
{
    *buf = NULL;
    *len = 0;
    /* O_NONBLOCK so that opening a FIFO (or a device that waits for a peer) returns at once
     * instead of blocking until a writer appears; what is not a regular file is then refused
     * before anything is read. A symlink to a regular file is followed like the file. */
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
    if (fd < 0)
        return qh_fail(err, "%s: cannot open: %s", path, strerror(errno));
    struct stat st;
    if (fstat(fd, &st) != 0) {
        int e = errno;
        close(fd);
        return qh_fail(err, "%s: cannot stat: %s", path, strerror(e));
    }
    if (!S_ISREG(st.st_mode)) {
        close(fd);
        return qh_fail(err, "%s: not a regular file (%s)", path, qh_file_kind(st.st_mode));
    }
    int fl = fcntl(fd, F_GETFL);
    if (fl < 0 || fcntl(fd, F_SETFL, fl & ~O_NONBLOCK) != 0) {
        int e = errno;
        close(fd);
        return qh_fail(err, "%s: cannot open: %s", path, strerror(e));
    }
    if (st.st_size > 0 && (uint64_t)st.st_size > (uint64_t)max) {
        close(fd);
        return qh_fail(err, "%s: %lld bytes exceeds the limit of %zu", path,
                       (long long)st.st_size, max);
    }
    /* A regular file holds the bytes its size says: reading past them tells a file that grew
     * while it was read, or a pseudo-file whose size says 0 and whose reads go on (a symlink
     * to /proc/self/pagemap read 8.5 GB in 22 s before this), from the file; neither is read
     * on. (The room past the size is a page: pagemap refuses reads shorter than 8 bytes.) */
    size_t size = (size_t)st.st_size, cap = size + 4096;
    uint8_t *p = malloc(cap);
    if (!p) {
        close(fd);
        return qh_fail(err, "%s: out of memory", path);
    }
    size_t n = 0;
    for (;;) {
        if (n > size) {
            free(p);
            close(fd);
            return size == 0 ? qh_fail(err, "%s: its size says 0 bytes but it reads more (a /proc "
                                            "or /sys file?): not read",
                                       path)
                             : qh_fail(err, "%s: it grew while it was read (its size said %zu "
                                            "bytes): not read",
                                       path, size);
        }
        ssize_t r = read(fd, p + n, cap - n);
        if (r < 0) {
            if (errno == EINTR)
                continue;
            int e = errno;
            free(p);
            close(fd);
            return qh_fail(err, "%s: read error: %s", path, strerror(e));
        }
        if (r == 0)
            break;
        n += (size_t)r;
    }
    close(fd);
    *buf = p;
    *len = n;
    return 0;
}

/* A new file beside `path` with an unpredictable name: O_EXCL | O_NOFOLLOW, so neither a
 * planted file nor a planted symlink can take the write. The fd, or -1 with err. */
int qh_open_temp(const char *path, char *tmp, size_t size, qh_error *err)
{
    for (int tries = 0; tries < 100; tries++) {
        uint64_t r;
        if (getrandom(&r, sizeof r, GRND_NONBLOCK) != (ssize_t)sizeof r)
            r = (uint64_t)time(NULL) * 6364136223846793005ull +
                (uint64_t)getpid() * 1442695040888963407ull + (uint64_t)tries;
        int k = snprintf(tmp, size, "%s.tmp-%016llx", path, (unsigned long long)r);
        if (k < 0 || (size_t)k >= size) {
            snprintf(err->msg, sizeof err->msg, "%s: path too long", path);
            return -1;
        }
        int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
        if (fd >= 0)
            return fd;
        if (errno != EEXIST) {
            snprintf(err->msg, sizeof err->msg, "%s: cannot create %s: %s", path, tmp,
                     strerror(errno));
            return -1;
        }
    }
    snprintf(err->msg, sizeof err->msg, "%s: cannot create a temporary file beside it", path);
    return -1;
}

int qh_write_file_atomic(const char *path, const void *buf, size_t len, qh_error *err)
{
    char tmp[4096];
    int fd = qh_open_temp(path, tmp, sizeof tmp, err);
    if (fd < 0)
        return -1;
    const uint8_t *p = buf;
    size_t left = len;
    while (left) {
        ssize_t w = write(fd, p, left);
        if (w < 0) {
            if (errno == EINTR)
                continue;
            int e = errno;
            close(fd);
            unlink(tmp);
            return qh_fail(err, "%s: write error: %s", path, strerror(e));
        }
        p += w;
        left -= (size_t)w;
    }
    if (close(fd) != 0) {
        int e = errno;
        unlink(tmp);
        return qh_fail(err, "%s: write error: %s", path, strerror(e));
    }
    if (rename(tmp, path) != 0) {
        int e = errno;
        unlink(tmp);
        return qh_fail(err, "%s: cannot rename %s: %s", path, tmp, strerror(e));
    }
    return 0;
}

char *qh_path_join(const char *dir, const char *name)
{
    size_t ld = strlen(dir), ln = strlen(name);
    char *p = malloc(ld + ln + 2);
    if (!p)
        return NULL;
    memcpy(p, dir, ld);
    size_t o = ld;
    if (ld > 0 && dir[ld - 1] != '/')
        p[o++] = '/';
    memcpy(p + o, name, ln + 1);
    return p;
}

int qh_path_exists(const char *path)
{
    struct stat st;
    return lstat(path, &st) == 0;
}

int qh_path_is_dir(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}
