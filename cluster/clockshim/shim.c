/*
 * clockshim: shifts the wall clock of the process it is preloaded into.
 *
 * The offset (int64 nanoseconds, host byte order) lives in the 8-byte file
 * named by LOCKTEST_CLOCK_FILE; the coordinator rewrites it during a run with
 * an atomic store through its own mapping, and every read here sees the
 * current value. Only wall clocks move (CLOCK_REALTIME and friends,
 * gettimeofday, time): a real clock step leaves CLOCK_MONOTONIC alone.
 *
 * No malloc, no dlsym, no locks: redis-server links jemalloc, which reads the
 * clock while it initializes; a shim that allocates on its first call
 * deadlocks there (Debian's libfaketime does). The real clocks are read with
 * the raw system call, which costs a little more than the vDSO and needs
 * nothing to be resolved.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

static const volatile int64_t *offset_ns; /* NULL: no file, no shift */

__attribute__((constructor)) static void clockshim_init(void) {
	const char *path = getenv("LOCKTEST_CLOCK_FILE");
	if (path == NULL)
		return;
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return;
	void *p = mmap(NULL, sizeof(int64_t), PROT_READ, MAP_SHARED, fd, 0);
	close(fd);
	if (p != MAP_FAILED)
		offset_ns = p;
}

static int64_t offset(void) {
	return offset_ns ? __atomic_load_n(offset_ns, __ATOMIC_RELAXED) : 0;
}

static int is_wall(clockid_t id) {
	return id == CLOCK_REALTIME || id == CLOCK_REALTIME_COARSE || id == CLOCK_TAI;
}

static void shift(struct timespec *ts, int64_t off) {
	int64_t ns = (int64_t)ts->tv_sec * 1000000000 + ts->tv_nsec + off;
	ts->tv_sec = ns / 1000000000;
	ts->tv_nsec = ns % 1000000000;
	if (ts->tv_nsec < 0) {
		ts->tv_nsec += 1000000000;
		ts->tv_sec--;
	}
}

int clock_gettime(clockid_t id, struct timespec *ts) {
	int r = (int)syscall(SYS_clock_gettime, id, ts);
	if (r == 0 && is_wall(id))
		shift(ts, offset());
	return r;
}

int gettimeofday(struct timeval *restrict tv, void *restrict tz) {
	struct timespec ts;
	(void)tz; /* obsolete; Linux fills it with zeros at most */
	if (clock_gettime(CLOCK_REALTIME, &ts) != 0)
		return -1;
	tv->tv_sec = ts.tv_sec; /* glibc declares tv nonnull */
	tv->tv_usec = ts.tv_nsec / 1000;
	return 0;
}

time_t time(time_t *t) {
	struct timespec ts;
	if (clock_gettime(CLOCK_REALTIME, &ts) != 0)
		return (time_t)-1;
	if (t != NULL)
		*t = ts.tv_sec;
	return ts.tv_sec;
}
