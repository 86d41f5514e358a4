/*
 * fstool: the C helpers of the udcfs mount tests (mount-test.sh) and benchmark.
 *
 *   fstool rename2 exchange|noreplace OLD NEW
 *       renameat2 with RENAME_EXCHANGE or RENAME_NOREPLACE; prints "ok" or the error.
 *   fstool populate DIR N
 *       creates DIR/stable_00000 .. stable_<N-1> (empty files).
 *   fstool listcheck DIR N PASSES [BUFSIZE [PAUSE_US [external]]]
 *       lists DIR PASSES times with getdents64 (BUFSIZE bytes per call, default 2048; pausing
 *       PAUSE_US microseconds after each call, default 0, to let more changes in) while a
 *       child process creates and deletes DIR/churn_* files; checks that every stable_* entry
 *       appears exactly once per pass and no churn_* entry twice, and that the child changed the
 *       directory during every pass. Kills and waits for only its own child. With `external`,
 *       another program (a second NFS client) makes the churn: no child is started, and the
 *       caller checks that the directory changed meanwhile.
 *   fstool mix DIR NAMES SECONDS SEED
 *       for SECONDS, random operations on DIR/n0 .. DIR/n<NAMES-1>: create, mkdir, symlink, link,
 *       rename (plain, RENAME_NOREPLACE, RENAME_EXCHANGE), unlink, rmdir, lstat; errors such as
 *       ENOENT or EEXIST are expected (several run at once on the same names). Prints counts.
 *   fstool compare MOUNT BACKING NAMES
 *       for each name n0 .. n<NAMES-1>: lstat through MOUNT and in BACKING must agree (exists,
 *       type, inode number, link count).
 *   fstool endpos DIR
 *       reads DIR to its end with getdents64, then opens it again at the position the read
 *       ended at (lseek, as seekdir does): prints how many entries there were and what the
 *       second open finds there (nothing), or the error.
 *
 * (The negative-entry flood on real paths is c-tests/dcache_stress -D DIR.)
 *
 * Exit status: 0 success, 1 a check failed, 2 usage or setup error.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int usage(void)
{
	fprintf(stderr, "usage: fstool rename2 exchange|noreplace OLD NEW\n"
			"       fstool populate DIR N\n"
			"       fstool listcheck DIR N PASSES [BUFSIZE [PAUSE_US [external]]]\n"
			"       fstool mix DIR NAMES SECONDS SEED\n"
			"       fstool compare MOUNT BACKING NAMES\n"
			"       fstool endpos DIR\n");
	return 2;
}

/* A positive decimal argument, or -1. */
static long number(const char *s)
{
	char *end;
	errno = 0;
	long v = strtol(s, &end, 10);
	return errno || *end || end == s || v <= 0 ? -1 : v;
}

static int cmd_rename2(int argc, char **argv)
{
	unsigned flags;

	if (argc != 5)
		return usage();
	if (strcmp(argv[2], "exchange") == 0)
		flags = RENAME_EXCHANGE;
	else if (strcmp(argv[2], "noreplace") == 0)
		flags = RENAME_NOREPLACE;
	else
		return usage();
	if (renameat2(AT_FDCWD, argv[3], AT_FDCWD, argv[4], flags) < 0) {
		printf("%s\n", strerror(errno));
		return 1;
	}
	printf("ok\n");
	return 0;
}

static int cmd_populate(int argc, char **argv)
{
	char name[64];
	long n;

	if (argc != 4 || (n = number(argv[3])) < 0)
		return usage();
	int dir = open(argv[2], O_RDONLY | O_DIRECTORY);
	if (dir < 0) {
		fprintf(stderr, "fstool: %s: %s\n", argv[2], strerror(errno));
		return 2;
	}
	for (long i = 0; i < n; i++) {
		snprintf(name, sizeof(name), "stable_%05ld", i);
		int fd = openat(dir, name, O_WRONLY | O_CREAT | O_EXCL, 0644);
		if (fd < 0) {
			fprintf(stderr, "fstool: create %s: %s\n", name, strerror(errno));
			return 2;
		}
		close(fd);
	}
	close(dir);
	return 0;
}

/* The churn child: creates churn_<i> and deletes churn_<i - 32>, until told to stop. */
enum { CHURN_WINDOW = 32 };
static volatile sig_atomic_t churn_stop;

static void on_term(int sig)
{
	(void)sig;
	churn_stop = 1;
}

static void churn(int dir, volatile uint64_t *changes)
{
	char name[64];
	long i;

	signal(SIGTERM, on_term);
	for (i = 0; !churn_stop; i++) {
		snprintf(name, sizeof(name), "churn_%ld", i);
		int fd = openat(dir, name, O_WRONLY | O_CREAT | O_EXCL, 0644);
		if (fd < 0) {
			fprintf(stderr, "fstool: churn create %s: %s\n", name, strerror(errno));
			_exit(1);
		}
		close(fd);
		__atomic_add_fetch(changes, 1, __ATOMIC_RELAXED);
		if (i >= CHURN_WINDOW) {
			snprintf(name, sizeof(name), "churn_%ld", i - CHURN_WINDOW);
			if (unlinkat(dir, name, 0) < 0) {
				fprintf(stderr, "fstool: churn unlink %s: %s\n", name, strerror(errno));
				_exit(1);
			}
			__atomic_add_fetch(changes, 1, __ATOMIC_RELAXED);
		}
	}
	for (long j = i - CHURN_WINDOW < 0 ? 0 : i - CHURN_WINDOW; j < i; j++) {
		snprintf(name, sizeof(name), "churn_%ld", j);
		unlinkat(dir, name, 0);
	}
	_exit(0);
}

static int cmp_long(const void *a, const void *b)
{
	long x = *(const long *)a, y = *(const long *)b;
	return (x > y) - (x < y);
}

/* One listing pass: 0 if every check held, 1 if not (reported). */
static int list_pass(const char *path, long n, size_t bufsize, long pause_us, int pass,
		     volatile uint64_t *changes, int external)
{
	unsigned char *seen = calloc((size_t)n, 1);
	char *buf = malloc(bufsize);
	size_t nchurn = 0, cap = 1024;
	long *churned = malloc(cap * sizeof(*churned));
	long calls = 0, others = 0;
	int bad = 0;

	if (!seen || !buf || !churned) {
		fprintf(stderr, "fstool: out of memory\n");
		exit(2);
	}
	uint64_t before = __atomic_load_n(changes, __ATOMIC_RELAXED);
	double t0 = now();
	int fd = open(path, O_RDONLY | O_DIRECTORY);
	if (fd < 0) {
		fprintf(stderr, "fstool: %s: %s\n", path, strerror(errno));
		exit(2);
	}
	for (;;) {
		ssize_t got = getdents64(fd, buf, bufsize);
		calls++;
		if (got < 0) {
			fprintf(stderr, "listcheck: pass %d: getdents64: %s\n", pass, strerror(errno));
			bad = 1;
			break;
		}
		if (got == 0)
			break;
		if (pause_us)
			usleep((useconds_t)pause_us);
		for (ssize_t pos = 0; pos < got;) {
			const struct dirent64 *d = (const struct dirent64 *)(buf + pos);
			char *end;
			long idx;
			pos += d->d_reclen;
			if (strncmp(d->d_name, "stable_", 7) == 0) {
				idx = strtol(d->d_name + 7, &end, 10);
				if (*end || idx < 0 || idx >= n) {
					others++;
					continue;
				}
				if (seen[idx] < 255)
					seen[idx]++;
			} else if (strncmp(d->d_name, "churn_", 6) == 0) {
				idx = strtol(d->d_name + 6, &end, 10);
				if (nchurn == cap) {
					cap *= 2;
					churned = realloc(churned, cap * sizeof(*churned));
					if (!churned)
						exit(2);
				}
				churned[nchurn++] = idx;
			} else if (strcmp(d->d_name, ".") && strcmp(d->d_name, "..")) {
				others++;
			}
		}
	}
	close(fd);
	double t = now() - t0;
	uint64_t during = __atomic_load_n(changes, __ATOMIC_RELAXED) - before;

	long missing = 0, twice = 0, churn_twice = 0;
	for (long i = 0; i < n; i++) {
		if (seen[i] == 0 && missing++ < 5)
			fprintf(stderr, "listcheck: pass %d: stable_%05ld missing\n", pass, i);
		if (seen[i] > 1 && twice++ < 5)
			fprintf(stderr, "listcheck: pass %d: stable_%05ld listed %d times\n", pass,
				i, seen[i]);
	}
	qsort(churned, nchurn, sizeof(*churned), cmp_long);
	for (size_t i = 1; i < nchurn; i++)
		if (churned[i] == churned[i - 1] && churn_twice++ < 5)
			fprintf(stderr, "listcheck: pass %d: churn_%ld listed twice\n", pass,
				churned[i]);
	if (missing || twice || churn_twice || others) {
		fprintf(stderr,
			"listcheck: pass %d: FAILED: %ld missing, %ld duplicated, %ld churn duplicated, "
			"%ld unexpected names\n",
			pass, missing, twice, churn_twice, others);
		bad = 1;
	}
	if (during == 0 && !external) {
		fprintf(stderr, "listcheck: pass %d: FAILED: the directory did not change during "
				"the pass (nothing was tested)\n",
			pass);
		bad = 1;
	}
	printf("listcheck: pass %d: %ld stable entries, each once: %s; %zu churn entries, none "
	       "twice: %s; %llu changes during the pass; %ld getdents calls; %.2f s\n",
	       pass, n - missing, missing || twice ? "NO" : "yes", nchurn,
	       churn_twice ? "NO" : "yes", (unsigned long long)during, calls, t);
	free(seen);
	free(buf);
	free(churned);
	return bad;
}

static int cmd_listcheck(int argc, char **argv)
{
	long n, passes, bufsize = 2048, pause_us = 0;

	if (argc < 5 || argc > 8 || (n = number(argv[3])) < 0 || (passes = number(argv[4])) < 0 ||
	    (argc >= 6 && (bufsize = number(argv[5])) < 0) ||
	    (argc >= 7 && (pause_us = number(argv[6])) < 0) ||
	    (argc == 8 && strcmp(argv[7], "external") != 0))
		return usage();
	int external = argc == 8;
	int dir = open(argv[2], O_RDONLY | O_DIRECTORY);
	if (dir < 0) {
		fprintf(stderr, "fstool: %s: %s\n", argv[2], strerror(errno));
		return 2;
	}
	volatile uint64_t *changes = mmap(NULL, sizeof(uint64_t), PROT_READ | PROT_WRITE,
					  MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (changes == MAP_FAILED)
		return 2;
	pid_t child = external ? 0 : fork();
	if (!external && child < 0) {
		perror("fstool: fork");
		return 2;
	}
	if (!external && child == 0)
		churn(dir, changes);
	/* let the churn start before the first pass */
	while (!external && __atomic_load_n(changes, __ATOMIC_RELAXED) < 2 * CHURN_WINDOW) {
		int status;
		if (waitpid(child, &status, WNOHANG) == child) {
			fprintf(stderr, "listcheck: the churn process died\n");
			return 2;
		}
		usleep(1000);
	}
	int bad = 0;
	for (int pass = 1; pass <= passes; pass++)
		bad |= list_pass(argv[2], n, (size_t)bufsize, pause_us, pass, changes, external);
	int status;
	if (!external && (kill(child, SIGTERM), waitpid(child, &status, 0) != child ||
			  !WIFEXITED(status) || WEXITSTATUS(status))) {
		fprintf(stderr, "listcheck: the churn process failed\n");
		bad = 1;
	}
	close(dir);
	return bad;
}

/* SplitMix64: a small, good generator for test decisions. */
static uint64_t next_random(uint64_t *state)
{
	uint64_t z = (*state += 0x9e3779b97f4a7c15ull);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

static int cmd_mix(int argc, char **argv)
{
	long names, seconds, seed;
	char a[32], b[32];
	long ops = 0, ok = 0;

	if (argc != 6 || (names = number(argv[3])) < 0 || (seconds = number(argv[4])) < 0 ||
	    (seed = number(argv[5])) < 0)
		return usage();
	int dir = open(argv[2], O_RDONLY | O_DIRECTORY);
	if (dir < 0) {
		fprintf(stderr, "fstool: %s: %s\n", argv[2], strerror(errno));
		return 2;
	}
	uint64_t rng = (uint64_t)seed;
	double end = now() + (double)seconds;
	while (now() < end) {
		for (int i = 0; i < 64; i++, ops++) {
			uint64_t r = next_random(&rng);
			snprintf(a, sizeof(a), "n%llu", (unsigned long long)(r % (uint64_t)names));
			snprintf(b, sizeof(b), "n%llu",
				 (unsigned long long)((r >> 20) % (uint64_t)names));
			struct stat st;
			int fd, res;
			switch ((r >> 40) % 12) {
			case 0:
			case 1:
				fd = openat(dir, a, O_WRONLY | O_CREAT, 0644);
				res = fd < 0 ? -1 : close(fd);
				break;
			case 2:
				res = mkdirat(dir, a, 0755);
				break;
			case 3:
				res = symlinkat(b, dir, a);
				break;
			case 4:
				res = linkat(dir, a, dir, b, 0);
				break;
			case 5:
				res = renameat(dir, a, dir, b);
				break;
			case 6:
				res = renameat2(dir, a, dir, b, RENAME_NOREPLACE);
				break;
			case 7:
				res = renameat2(dir, a, dir, b, RENAME_EXCHANGE);
				break;
			case 8:
				res = unlinkat(dir, a, 0);
				break;
			case 9:
				res = unlinkat(dir, a, AT_REMOVEDIR);
				break;
			default:
				res = fstatat(dir, a, &st, AT_SYMLINK_NOFOLLOW);
				break;
			}
			ok += res == 0;
		}
	}
	close(dir);
	printf("mix: %ld operations, %ld succeeded\n", ops, ok);
	return 0;
}

static int cmd_compare(int argc, char **argv)
{
	long names, bad = 0, present = 0;
	char name[32];

	if (argc != 5 || (names = number(argv[4])) < 0)
		return usage();
	int mnt = open(argv[2], O_RDONLY | O_DIRECTORY), back = open(argv[3], O_RDONLY | O_DIRECTORY);
	if (mnt < 0 || back < 0) {
		fprintf(stderr, "fstool: compare: %s\n", strerror(errno));
		return 2;
	}
	for (long i = 0; i < names; i++) {
		struct stat m, k;
		snprintf(name, sizeof(name), "n%ld", i);
		int rm = fstatat(mnt, name, &m, AT_SYMLINK_NOFOLLOW) == 0 ? 0 : errno;
		int rk = fstatat(back, name, &k, AT_SYMLINK_NOFOLLOW) == 0 ? 0 : errno;
		present += rk == 0;
		if (rm != rk || (rm == 0 && ((m.st_mode & S_IFMT) != (k.st_mode & S_IFMT) ||
					     m.st_ino != k.st_ino || m.st_nlink != k.st_nlink))) {
			if (bad++ < 10)
				fprintf(stderr,
					"compare: %s: mount says %s (ino %llu, nlink %lu), backing %s "
					"(ino %llu, nlink %lu)\n",
					name, rm ? strerror(rm) : "exists",
					rm ? 0ull : (unsigned long long)m.st_ino,
					rm ? 0ul : (unsigned long)m.st_nlink,
					rk ? strerror(rk) : "exists",
					rk ? 0ull : (unsigned long long)k.st_ino,
					rk ? 0ul : (unsigned long)k.st_nlink);
		}
	}
	printf("compare: %ld names, %ld present, %ld differ\n", names, present, bad);
	return bad != 0;
}

static int cmd_endpos(int argc, char **argv)
{
	_Alignas(struct dirent64) char buf[4096];
	long entries = 0;
	ssize_t n;

	if (argc != 3)
		return usage();
	int fd = open(argv[2], O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0) {
		fprintf(stderr, "endpos: %s: %s\n", argv[2], strerror(errno));
		return 2;
	}
	while ((n = getdents64(fd, buf, sizeof buf)) > 0)
		for (ssize_t pos = 0; pos < n; entries++)
			pos += ((const struct dirent64 *)(buf + pos))->d_reclen;
	off_t end = lseek(fd, 0, SEEK_CUR);
	close(fd);
	fd = open(argv[2], O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0) {
		fprintf(stderr, "endpos: %s: %s\n", argv[2], strerror(errno));
		return 2;
	}
	if (lseek(fd, end, SEEK_SET) < 0)
		printf("%ld entries; seeking back to the end: %s\n", entries, strerror(errno));
	else
		printf("%ld entries; after the end: %zd bytes\n", entries, getdents64(fd, buf, sizeof buf));
	close(fd);
	return 0;
}

int main(int argc, char **argv)
{
	if (argc < 2)
		return usage();
	if (strcmp(argv[1], "rename2") == 0)
		return cmd_rename2(argc, argv);
	if (strcmp(argv[1], "populate") == 0)
		return cmd_populate(argc, argv);
	if (strcmp(argv[1], "listcheck") == 0)
		return cmd_listcheck(argc, argv);
	if (strcmp(argv[1], "mix") == 0)
		return cmd_mix(argc, argv);
	if (strcmp(argv[1], "compare") == 0)
		return cmd_compare(argc, argv);
	if (strcmp(argv[1], "endpos") == 0)
		return cmd_endpos(argc, argv);
	return usage();
}
