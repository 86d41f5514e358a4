/*
 * nfsctl — a second NFSv3 client (libnfs) that changes an export behind
 * udcfs's back, for the udcfs NFS backend tests and benchmarks.
 *
 *   nfsctl URL COMMAND ARGS...
 *
 * URL is the export's libnfs URL, as printed by ganesha.sh start, e.g.
 *   nfs://127.0.0.1/srv/x?version=3&nfsport=32049&mountport=32048
 * Every PATH is relative to the export root ("" or "." is the root).
 * Commands: see usage() below.
 * Errors: one line "nfsctl: COMMAND PATH: <libnfs error>" on stderr, exit 1;
 * bad usage: exit 2.
 *
 * Build (C11):
 *   cc -std=c11 -D_GNU_SOURCE -Wall -Wextra -Werror -O2 -o nfsctl nfsctl.c \
 *      $(pkg-config --cflags --libs libnfs)
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <poll.h>
#include <stdint.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <nfsc/libnfs.h>
#include <nfsc/libnfs-raw.h>
#include <nfsc/libnfs-raw-nfs.h>

/*
 * Not in libnfs 4.0.0's public headers, but exported by libnfs.so; the
 * struct and prototype are copied from its include/libnfs-private.h.
 * nfs_get_fh() (declared in nfsc/libnfs-raw.h) returns the same struct.
 */
struct nfs_fh {
	int len;
	char *val;
};
const struct nfs_fh *nfs_get_rootfh(struct nfs_context *nfs);

static const char *g_cmd = "";
static struct nfs_context *g_nfs;

static void usage(void)
{
	fputs(
	    "usage: nfsctl URL COMMAND ARGS...\n"
	    "  create PATH [DATA]     exclusive create (mode 0644), write DATA\n"
	    "  write PATH DATA        truncate and write DATA (file must exist)\n"
	    "  unlink PATH | mkdir PATH | rmdir PATH\n"
	    "  rename FROM TO | chmod MODE(octal) PATH | symlink TARGET PATH\n"
	    "  stat PATH              'type mode size nlink uid gid mtime' (lstat;\n"
	    "                         type as find's %y, mode octal perms,\n"
	    "                         mtime SEC.NSEC)\n"
	    "  cat PATH               file contents to stdout\n"
	    "  ls DIR                 names, C-sorted, without . and ..\n"
	    "  tree DIR               recursive 'relpath type mode size nlink',\n"
	    "                         same as: find DIR -mindepth 1 -printf\n"
	    "                         '%P %y %m %s %n\\n' | LC_ALL=C sort\n"
	    "  churn DIR SECONDS RATE PREFIX\n"
	    "                         create/unlink PREFIX<n> at ~RATE ops/s for\n"
	    "                         SECONDS, <= 100 alive; prints counts\n"
	    "  populate DIR COUNT PREFIX\n"
	    "                         create empty PREFIX0..PREFIX<COUNT-1>\n"
	    "                         (pipelined); prints count, time, rate\n"
	    "  rootfh                 root file handle (hex) two ways\n",
	    stderr);
	exit(2);
}

static void fail(const char *what, int err)
{
	const char *msg = g_nfs ? nfs_get_error(g_nfs) : NULL;
	if (msg == NULL || *msg == '\0')
		msg = strerror(err < 0 ? -err : err);
	fprintf(stderr, "nfsctl: %s %s: %s\n", g_cmd, what, msg);
	exit(1);
}

static void failmsg(const char *what, const char *msg)
{
	fprintf(stderr, "nfsctl: %s %s: %s\n", g_cmd, what, msg);
	exit(1);
}

/* "a/b" -> "/a/b"; "" and "." -> "/". Caller frees. */
static char *apath(const char *p)
{
	char *r;
	while (p[0] == '.' && p[1] == '/')
		p += 2;
	if (strcmp(p, ".") == 0)
		p = "";
	if (asprintf(&r, "%s%s", p[0] == '/' ? "" : "/", p) < 0) {
		perror("nfsctl: asprintf");
		exit(1);
	}
	return r;
}

static char *join(const char *dir, const char *name)
{
	char *r;
	size_t n = strlen(dir);
	if (asprintf(&r, "%s%s%s", dir, (n && dir[n - 1] == '/') ? "" : "/",
		     name) < 0) {
		perror("nfsctl: asprintf");
		exit(1);
	}
	return r;
}

static char type_char(uint64_t mode)
{
	switch (mode & S_IFMT) {
	case S_IFREG: return 'f';
	case S_IFDIR: return 'd';
	case S_IFLNK: return 'l';
	case S_IFBLK: return 'b';
	case S_IFCHR: return 'c';
	case S_IFIFO: return 'p';
	case S_IFSOCK: return 's';
	default: return 'U';
	}
}

static void write_all(const char *path, struct nfsfh *fh, const char *data)
{
	uint64_t left = strlen(data);
	const char *p = data;
	while (left > 0) {
		int n = nfs_write(g_nfs, fh, left, p);
		if (n < 0)
			fail(path, n);
		if (n == 0)
			failmsg(path, "short write");
		p += n;
		left -= (uint64_t)n;
	}
}

static int cmpstr(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

struct strv {
	char **v;
	size_t n, cap;
};

static void strv_push(struct strv *s, char *str)
{
	if (s->n == s->cap) {
		s->cap = s->cap ? 2 * s->cap : 64;
		s->v = realloc(s->v, s->cap * sizeof *s->v);
		if (!s->v) {
			perror("nfsctl: realloc");
			exit(1);
		}
	}
	s->v[s->n++] = str;
}

static int is_dot(const char *n)
{
	return strcmp(n, ".") == 0 || strcmp(n, "..") == 0;
}

/* ---- tree ---- */

static void tree_walk(const char *abs, const char *rel, struct strv *out)
{
	struct nfsdir *d;
	struct nfsdirent *e;
	struct strv subdirs = {0};
	int r = nfs_opendir(g_nfs, abs, &d);
	if (r < 0)
		fail(abs, r);
	while ((e = nfs_readdir(g_nfs, d)) != NULL) {
		char *line, *relp;
		if (is_dot(e->name))
			continue;
		if (*rel) {
			relp = join(rel, e->name);
		} else {
			relp = strdup(e->name);
		}
		/* READDIRPLUS attributes; fall back to LOOKUP+GETATTR if the
		 * server sent none (mode 0 / type 0). */
		uint64_t mode = e->mode, size = e->size, nlink = e->nlink;
		if (e->type == 0 || (mode & S_IFMT) == 0) {
			struct nfs_stat_64 st;
			char *p = join(abs, e->name);
			r = nfs_lstat64(g_nfs, p, &st);
			if (r < 0)
				fail(p, r);
			free(p);
			mode = st.nfs_mode;
			size = st.nfs_size;
			nlink = st.nfs_nlink;
		}
		if (asprintf(&line, "%s %c %" PRIo64 " %" PRIu64 " %" PRIu64,
			     relp, type_char(mode), mode & 07777, size,
			     nlink) < 0) {
			perror("nfsctl: asprintf");
			exit(1);
		}
		strv_push(out, line);
		if ((mode & S_IFMT) == S_IFDIR)
			strv_push(&subdirs, relp);
		else
			free(relp);
	}
	nfs_closedir(g_nfs, d);
	for (size_t i = 0; i < subdirs.n; i++) {
		char *a = join(abs, strrchr(subdirs.v[i], '/')
					? strrchr(subdirs.v[i], '/') + 1
					: subdirs.v[i]);
		tree_walk(a, subdirs.v[i], out);
		free(a);
		free(subdirs.v[i]);
	}
	free(subdirs.v);
}

/* ---- time ---- */

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static unsigned long parse_ul(const char *s, const char *what,
			      unsigned long max)
{
	char *end;
	errno = 0;
	unsigned long v = strtoul(s, &end, 10);
	if (errno || end == s || *end || v > max) {
		fprintf(stderr, "nfsctl: bad %s '%s' (0..%lu)\n", what, s, max);
		exit(2);
	}
	return v;
}

/* ---- churn ---- */

#define CHURN_MAX_ALIVE 100
#define CHURN_TARGET 50

/*
 * SIGTERM ends a churn early, between two operations, with its figures printed. It stays
 * blocked while an operation runs: libnfs's synchronous calls take a poll() that a signal
 * interrupts for a broken connection, reconnect and send the call again, and the server then
 * answers a CREATE or REMOVE it has already done with NFS3ERR_EXIST or NFS3ERR_NOENT.
 */
static sigset_t churn_term;

/* Waits until t on the monotonic clock; returns 1 as soon as a SIGTERM is pending, 0 at t. */
static int term_by(double t)
{
	for (;;) {
		double d = t - now();
		if (d < 0)
			d = 0;
		struct timespec ts = {(time_t)d, (long)((d - (double)(time_t)d) * 1e9)};
		if (sigtimedwait(&churn_term, NULL, &ts) == SIGTERM)
			return 1;
		if (errno == EAGAIN)
			return 0;
	}
}

static int cmd_churn(const char *dir, const char *secs_s, const char *rate_s,
		     const char *prefix)
{
	unsigned long secs = parse_ul(secs_s, "SECONDS", 86400);
	unsigned long rate = parse_ul(rate_s, "RATE", 1000000);
	if (rate == 0)
		rate = 1;
	char *d = apath(dir);
	/* ring of alive indices, oldest first */
	unsigned long ring[CHURN_MAX_ALIVE];
	size_t head = 0, alive = 0;
	unsigned long next = 0, ops = 0, created = 0, removed = 0;
	unsigned long max_ops = secs * rate + 1;
	double t0 = now(), period = 1.0 / (double)rate, tnext = t0;
	int phase = 0;

	sigemptyset(&churn_term);
	sigaddset(&churn_term, SIGTERM);
	sigprocmask(SIG_BLOCK, &churn_term, NULL);
	while (ops < max_ops && now() - t0 < (double)secs) {
		char name[NAME_MAX + 1];
		int create = alive < CHURN_TARGET ||
			     (alive < CHURN_MAX_ALIVE && (phase ^= 1));
		if (create) {
			struct nfsfh *fh;
			snprintf(name, sizeof name, "%s%lu", prefix, next);
			char *p = join(d, name);
			int r = nfs_create(g_nfs, p, O_EXCL, 0644, &fh);
			if (r < 0)
				fail(p, r);
			nfs_close(g_nfs, fh);
			free(p);
			ring[(head + alive) % CHURN_MAX_ALIVE] = next++;
			alive++;
			created++;
		} else {
			snprintf(name, sizeof name, "%s%lu", prefix, ring[head]);
			char *p = join(d, name);
			int r = nfs_unlink(g_nfs, p);
			if (r < 0)
				fail(p, r);
			free(p);
			head = (head + 1) % CHURN_MAX_ALIVE;
			alive--;
			removed++;
		}
		ops++;
		tnext += period;
		if (now() - tnext > 0.5)
			tnext = now(); /* cannot keep up: do not burst later */
		if (term_by(tnext))
			break;
	}
	double el = now() - t0;
	printf("ops %lu created %lu removed %lu alive %zu seconds %.2f rate %.0f/s\n",
	       ops, created, removed, alive, el, el > 0 ? (double)ops / el : 0.0);
	free(d);
	return 0;
}

/* ---- populate (pipelined async CREATE) ---- */

struct pop {
	unsigned long count, issued, done;
	int err;
	char errmsg[512];
	const char *dir, *prefix;
};

static void close_cb(int err, struct nfs_context *nfs, void *data, void *priv)
{
	(void)err;
	(void)nfs;
	(void)data;
	(void)priv;
}

static void pop_cb(int err, struct nfs_context *nfs, void *data, void *priv)
{
	struct pop *p = priv;
	p->done++;
	if (err < 0) {
		if (!p->err) {
			p->err = err;
			snprintf(p->errmsg, sizeof p->errmsg, "%s",
				 data ? (const char *)data : strerror(-err));
		}
		return;
	}
	nfs_close_async(nfs, data, close_cb, NULL);
}

static int cmd_populate(const char *dir, const char *count_s,
			const char *prefix)
{
	struct pop p = {0};
	unsigned long window = 64;
	const char *w = getenv("NFSCTL_WINDOW");
	if (w)
		window = parse_ul(w, "NFSCTL_WINDOW", 4096);
	if (window == 0)
		window = 1;
	p.count = parse_ul(count_s, "COUNT", 100000000);
	char *d = apath(dir);
	p.dir = d;
	p.prefix = prefix;
	double t0 = now();

	while (p.done < p.count) {
		while (!p.err && p.issued < p.count &&
		       p.issued - p.done < window) {
			char name[NAME_MAX + 1];
			snprintf(name, sizeof name, "%s%lu", prefix, p.issued);
			char *path = join(d, name); /* libnfs copies it */
			int r = nfs_create_async(g_nfs, path, O_EXCL, 0644,
						 pop_cb, &p);
			if (r < 0)
				fail(path, r);
			free(path);
			p.issued++;
		}
		if (p.err && p.done == p.issued)
			break;
		struct pollfd pfd = {
		    .fd = nfs_get_fd(g_nfs),
		    .events = (short)nfs_which_events(g_nfs),
		};
		int r = poll(&pfd, 1, 1000);
		if (r < 0 && errno != EINTR) {
			perror("nfsctl: poll");
			exit(1);
		}
		if (nfs_service(g_nfs, r > 0 ? pfd.revents : 0) < 0)
			fail(d, -EIO);
	}
	double el = now() - t0;
	if (p.err) {
		fprintf(stderr, "nfsctl: populate %s: %s (after %lu)\n", d,
			p.errmsg, p.done);
		exit(1);
	}
	printf("created %lu seconds %.2f rate %.0f/s window %lu\n", p.count,
	       el, el > 0 ? (double)p.count / el : 0.0, window);
	free(d);
	return 0;
}

/* ---- rootfh ---- */

static void print_fh(const char *label, const struct nfs_fh *fh)
{
	printf("%s len %d ", label, fh ? fh->len : -1);
	for (int i = 0; fh && i < fh->len; i++)
		printf("%02x", (unsigned char)fh->val[i]);
	printf("\n");
}

static int cmd_rootfh(void)
{
	struct nfsfh *fh;
	print_fh("nfs_get_rootfh", nfs_get_rootfh(g_nfs));
	int r = nfs_open(g_nfs, "/", O_RDONLY, &fh);
	if (r < 0)
		fail("/ (nfs_open)", r);
	print_fh("nfs_open(\"/\")+nfs_get_fh", nfs_get_fh(fh));
	nfs_close(g_nfs, fh);
	return 0;
}

int main(int argc, char **argv)
{
	if (argc < 3)
		usage();
	const char *url_s = argv[1];
	const char *cmd = argv[2];
	char **a = argv + 3;
	int na = argc - 3;
	g_cmd = cmd;

	/* argument counts first, before any network traffic */
	struct {
		const char *name;
		int min, max;
	} tab[] = {
	    {"create", 1, 2}, {"write", 2, 2},  {"unlink", 1, 1},
	    {"mkdir", 1, 1},  {"rmdir", 1, 1},  {"rename", 2, 2},
	    {"chmod", 2, 2},  {"symlink", 2, 2}, {"stat", 1, 1},
	    {"cat", 1, 1},    {"ls", 1, 1},     {"tree", 1, 1},
	    {"churn", 4, 4},  {"populate", 3, 3}, {"rootfh", 0, 0},
	};
	size_t i;
	for (i = 0; i < sizeof tab / sizeof tab[0]; i++)
		if (strcmp(tab[i].name, cmd) == 0)
			break;
	if (i == sizeof tab / sizeof tab[0] || na < tab[i].min ||
	    na > tab[i].max)
		usage();
	unsigned long chmod_mode = 0;
	if (strcmp(cmd, "chmod") == 0) {
		char *end;
		errno = 0;
		chmod_mode = strtoul(a[0], &end, 8);
		if (errno || end == a[0] || *end || chmod_mode > 07777) {
			fprintf(stderr, "nfsctl: bad octal MODE '%s'\n", a[0]);
			exit(2);
		}
	}

	g_nfs = nfs_init_context();
	if (!g_nfs) {
		fprintf(stderr, "nfsctl: nfs_init_context failed\n");
		exit(1);
	}
	struct nfs_url *url = nfs_parse_url_dir(g_nfs, url_s);
	if (!url)
		fail(url_s, -EINVAL);
	int r = nfs_mount(g_nfs, url->server, url->path);
	if (r < 0)
		fail(url_s, r);
	nfs_umask(g_nfs, 0);

	int ret = 0;
	char *p = na > 0 ? apath(a[na - 1]) : NULL; /* the (last) PATH */
	if (strcmp(cmd, "create") == 0 || strcmp(cmd, "write") == 0) {
		struct nfsfh *fh;
		free(p);
		p = apath(a[0]);
		if (cmd[0] == 'c')
			r = nfs_create(g_nfs, p, O_EXCL, 0644, &fh);
		else
			r = nfs_open(g_nfs, p, O_WRONLY | O_TRUNC, &fh);
		if (r < 0)
			fail(p, r);
		if (na == 2)
			write_all(p, fh, a[1]);
		r = nfs_close(g_nfs, fh);
		if (r < 0)
			fail(p, r);
	} else if (strcmp(cmd, "unlink") == 0) {
		if ((r = nfs_unlink(g_nfs, p)) < 0)
			fail(p, r);
	} else if (strcmp(cmd, "mkdir") == 0) {
		if ((r = nfs_mkdir2(g_nfs, p, 0755)) < 0)
			fail(p, r);
	} else if (strcmp(cmd, "rmdir") == 0) {
		if ((r = nfs_rmdir(g_nfs, p)) < 0)
			fail(p, r);
	} else if (strcmp(cmd, "rename") == 0) {
		char *from = apath(a[0]);
		if ((r = nfs_rename(g_nfs, from, p)) < 0)
			fail(from, r);
		free(from);
	} else if (strcmp(cmd, "chmod") == 0) {
		if ((r = nfs_chmod(g_nfs, p, (int)chmod_mode)) < 0)
			fail(p, r);
	} else if (strcmp(cmd, "symlink") == 0) {
		/* target is stored verbatim, not made absolute */
		if ((r = nfs_symlink(g_nfs, a[0], p)) < 0)
			fail(p, r);
	} else if (strcmp(cmd, "stat") == 0) {
		struct nfs_stat_64 st;
		if ((r = nfs_lstat64(g_nfs, p, &st)) < 0)
			fail(p, r);
		printf("%c %" PRIo64 " %" PRIu64 " %" PRIu64 " %" PRIu64
		       " %" PRIu64 " %" PRIu64 ".%09" PRIu64 "\n",
		       type_char(st.nfs_mode), st.nfs_mode & 07777,
		       st.nfs_size, st.nfs_nlink, st.nfs_uid, st.nfs_gid,
		       st.nfs_mtime, st.nfs_mtime_nsec);
	} else if (strcmp(cmd, "cat") == 0) {
		struct nfsfh *fh;
		char buf[65536];
		if ((r = nfs_open(g_nfs, p, O_RDONLY, &fh)) < 0)
			fail(p, r);
		while ((r = nfs_read(g_nfs, fh, sizeof buf, buf)) > 0)
			fwrite(buf, 1, (size_t)r, stdout);
		if (r < 0)
			fail(p, r);
		nfs_close(g_nfs, fh);
	} else if (strcmp(cmd, "ls") == 0) {
		struct nfsdir *d;
		struct nfsdirent *e;
		struct strv names = {0};
		if ((r = nfs_opendir(g_nfs, p, &d)) < 0)
			fail(p, r);
		while ((e = nfs_readdir(g_nfs, d)) != NULL)
			if (!is_dot(e->name))
				strv_push(&names, strdup(e->name));
		nfs_closedir(g_nfs, d);
		qsort(names.v, names.n, sizeof *names.v, cmpstr);
		for (size_t k = 0; k < names.n; k++) {
			puts(names.v[k]);
			free(names.v[k]);
		}
		free(names.v);
	} else if (strcmp(cmd, "tree") == 0) {
		struct strv lines = {0};
		tree_walk(p, "", &lines);
		qsort(lines.v, lines.n, sizeof *lines.v, cmpstr);
		for (size_t k = 0; k < lines.n; k++) {
			puts(lines.v[k]);
			free(lines.v[k]);
		}
		free(lines.v);
	} else if (strcmp(cmd, "churn") == 0) {
		ret = cmd_churn(a[0], a[1], a[2], a[3]);
	} else if (strcmp(cmd, "populate") == 0) {
		ret = cmd_populate(a[0], a[1], a[2]);
	} else if (strcmp(cmd, "rootfh") == 0) {
		ret = cmd_rootfh();
	}
	free(p);
	if (fflush(stdout) != 0) {
		perror("nfsctl: stdout");
		ret = 1;
	}
	nfs_destroy_url(url);
	nfs_destroy_context(g_nfs);
	return ret;
}
