/*
 * udcfs [options] SOURCE MOUNTPOINT: options, mount, the session loop and the statistics.
 *
 * The statistics (-o stats) are printed to stderr by a thread of their own that waits for
 * SIGUSR1 with sigwait (SIGUSR1 is blocked in every other thread, so no signal handler runs
 * udcache code), and once more after unmount. Without -o stats, SIGUSR1 is ignored.
 */
#include "udcfs.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

struct options {
	char *source;
	double entry_timeout, attr_timeout, negative_timeout;
	unsigned long cache_entries, cache_buckets, readdir_pages, readdir_page_entries;
	unsigned long max_nodes;
	unsigned negative_cap;
	unsigned list_after_misses;
	int stats;
	int allow_other, default_permissions;
};

enum { KEY_ALLOW_OTHER, KEY_DEFAULT_PERMISSIONS };

#define OPT(templ, field) { templ, offsetof(struct options, field), 1 }

static const struct fuse_opt udcfs_opts[] = {
	OPT("entry_timeout=%lf", entry_timeout),
	OPT("attr_timeout=%lf", attr_timeout),
	OPT("negative_timeout=%lf", negative_timeout),
	OPT("cache_entries=%lu", cache_entries),
	OPT("cache_buckets=%lu", cache_buckets),
	OPT("negative_cap=%u", negative_cap),
	OPT("list_after_misses=%u", list_after_misses),
	OPT("readdir_pages=%lu", readdir_pages),
	OPT("readdir_page_entries=%lu", readdir_page_entries),
	OPT("max_nodes=%lu", max_nodes),
	OPT("stats", stats),
	FUSE_OPT_KEY("allow_other", KEY_ALLOW_OTHER),
	FUSE_OPT_KEY("default_permissions", KEY_DEFAULT_PERMISSIONS),
	FUSE_OPT_END,
};

static void usage(const char *prog)
{
	printf("usage: %s [options] SOURCE MOUNTPOINT\n\n"
	       "Mirrors the directory SOURCE at MOUNTPOINT; names, negative lookups, attributes\n"
	       "and directory listings are cached by libudcache.\n\n"
	       "udcfs options:\n"
	       "    -o entry_timeout=S     kernel dentry validity in seconds (default 0: every\n"
	       "                           lookup reaches udcfs, and udcache answers it)\n"
	       "    -o attr_timeout=S      attribute validity, kernel's and udcache's (default 1.0)\n"
	       "    -o negative_timeout=S  kernel negative-dentry validity (default 0)\n"
	       "    -o cache_entries=N     expected entries: sizes udcache's tables (default 65536)\n"
	       "    -o cache_buckets=N     udcache name-table buckets (default: from cache_entries)\n"
	       "    -o negative_cap=N      unused negative entries kept per bucket (default 6)\n"
	       "    -o list_after_misses=N read a directory's listing after every N backing\n"
	       "                           lookups in it that found nothing, so that its complete\n"
	       "                           listing answers the next ones (default 64; 0: never)\n"
	       "    -o readdir_pages=N     page budget of the readdir cache (default: udcache's)\n"
	       "    -o readdir_page_entries=N  entries read from SOURCE per fill\n"
	       "    -o max_nodes=N         above N inodes, ask the kernel to forget unused files\n"
	       "                           (default: 3/4 of the open-file limit; each holds an fd)\n"
	       "    -o stats               print udcache's dentry-state on SIGUSR1 and at unmount\n"
	       "\n"
	       "Run as root with -o allow_other,default_permissions, objects are created with the\n"
	       "credentials of the process that asks.\n\n",
	       prog);
}

static int opt_proc(void *data, const char *arg, int key, struct fuse_args *outargs)
{
	struct options *o = data;

	(void)outargs;
	switch (key) {
	case KEY_ALLOW_OTHER:
		o->allow_other = 1;
		return 1;
	case KEY_DEFAULT_PERMISSIONS:
		o->default_permissions = 1;
		return 1;
	case FUSE_OPT_KEY_NONOPT:
		if (!o->source) {
			o->source = strdup(arg);
			return o->source ? 0 : -1;
		}
		return 1; /* MOUNTPOINT (or an extra argument): fuse_parse_cmdline judges */
	default:
		return 1;
	}
}

static int check_timeout(const char *name, double t)
{
	if (t >= 0 && t <= 1e9)
		return 0;
	fprintf(stderr, "udcfs: -o %s: want a number of seconds between 0 and 1e9, got %g\n",
		name, t);
	return -1;
}

/* Every node holds an fd: let the process hold as many as the system allows. */
static void raise_nofile(void)
{
	struct rlimit rl;

	if (getrlimit(RLIMIT_NOFILE, &rl) != 0)
		return;
	if (geteuid() == 0) {
		struct rlimit big = { 1u << 20, 1u << 20 };
		if (big.rlim_max > rl.rlim_max && setrlimit(RLIMIT_NOFILE, &big) == 0)
			return;
	}
	rl.rlim_cur = rl.rlim_max;
	setrlimit(RLIMIT_NOFILE, &rl);
}

/* How many nodes may hold an fd: 3/4 of the open-file limit (the rest: open files, udcache). */
static uint64_t node_budget(void)
{
	struct rlimit rl;
	if (getrlimit(RLIMIT_NOFILE, &rl) != 0 || rl.rlim_cur == RLIM_INFINITY)
		return 1u << 20;
	return rl.rlim_cur / 4 * 3;
}

static struct udcfs fs;
static udc_config cache_config;
static _Atomic int stats_quit;

static void print_stats(const char *when)
{
	udc_stats s = { .size = sizeof(s) };
	char text[2048];

	if (udc_stats_get(fs.cache, &s) < 0 || udc_stats_format(fs.cache, text, sizeof(text)) < 0)
		return;
	size_t len = strlen(text);
	fprintf(stderr, "udcfs: dentry-state (%s):\n%s%s", when, text,
		len && text[len - 1] == '\n' ? "" : "\n");
	fprintf(stderr,
		"udcfs-stats: when=%s lookups=%llu cached_positive=%llu cached_negative=%llu "
		"backend_lookups=%llu coalesced_misses=%llu nr_dentry=%llu nr_unused=%llu "
		"nr_negative=%llu nr_buckets=%llu nr_inodes=%llu negative_cap=%u "
		"negative_evictions=%llu walk_fallbacks=%llu readdir_hits=%llu "
		"readdir_misses=%llu complete_dir_negatives=%llu forgets=%llu nodes=%llu "
		"reaped=%llu\n",
		when, (unsigned long long)atomic_load(&fs.lookups),
		(unsigned long long)atomic_load(&fs.cached_positive),
		(unsigned long long)atomic_load(&fs.cached_negative),
		(unsigned long long)s.backend_lookups, (unsigned long long)s.coalesced_misses,
		(unsigned long long)s.nr_dentry, (unsigned long long)s.nr_unused,
		(unsigned long long)s.nr_negative, (unsigned long long)s.nr_buckets,
		(unsigned long long)s.nr_inodes,
		cache_config.negative_cap ? cache_config.negative_cap : 6, /* 0: udcache's default */
		(unsigned long long)s.negative_evictions, (unsigned long long)s.walk_fallbacks,
		(unsigned long long)s.readdir_hits, (unsigned long long)s.readdir_misses,
		(unsigned long long)s.complete_dir_negatives,
		(unsigned long long)atomic_load(&fs.forgets),
		(unsigned long long)atomic_load(&fs.nodes.live),
		(unsigned long long)atomic_load(&fs.nodes.reaped));
	fflush(stderr);
}

static void *stats_thread(void *arg)
{
	sigset_t set;
	int sig;

	(void)arg;
	sigemptyset(&set);
	sigaddset(&set, SIGUSR1);
	while (sigwait(&set, &sig) == 0 && !atomic_load(&stats_quit))
		print_stats("SIGUSR1");
	return NULL;
}

static int open_source(const char *source)
{
	int fd = open(source, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		fprintf(stderr, "udcfs: SOURCE '%s': %s\n", source,
			errno == ENOTDIR ? "not a directory" : strerror(errno));
	return fd;
}

static int check_mountpoint(const char *mountpoint)
{
	struct stat st;
	if (stat(mountpoint, &st) < 0) {
		fprintf(stderr, "udcfs: MOUNTPOINT '%s': %s\n", mountpoint, strerror(errno));
		return -1;
	}
	if (!S_ISDIR(st.st_mode)) {
		fprintf(stderr, "udcfs: MOUNTPOINT '%s': not a directory\n", mountpoint);
		return -1;
	}
	return 0;
}

/*
 * The name locks, udcache, the node table and the credentials: 0 or -1 (reported). fs_destroy
 * undoes it, also after a failure.
 */
static int fs_init(const struct options *o, int rootfd)
{
	pthread_rwlockattr_t rw;
	int r;

	pthread_rwlockattr_init(&rw);
	/* writer-preferring: a stream of lookups must not starve a create of the same stripe */
	pthread_rwlockattr_setkind_np(&rw, PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP);
	for (unsigned i = 0; i < NAME_LOCKS; i++)
		pthread_rwlock_init(&fs.name_locks[i], &rw);
	pthread_rwlockattr_destroy(&rw);
	udc_config_init(&cache_config);
	cache_config.expected_entries = o->cache_entries;
	cache_config.buckets = o->cache_buckets;
	if (o->negative_cap)
		cache_config.negative_cap = o->negative_cap;
	cache_config.readdir_pages = o->readdir_pages;
	cache_config.readdir_page_entries = o->readdir_page_entries;
	r = udc_cache_new(&cache_config, &fs.cache);
	if (r == 0) {
		udc_ops ops = { .size = sizeof(ops), .lookup = udcfs_miss,
				.readdir = udcfs_readdir_fill, .ctx = &fs };
		r = udc_set_ops(fs.cache, &ops);
	}
	if (r == 0)
		r = nodes_init(&fs.nodes, o->cache_entries ? o->cache_entries : 65536);
	if (r < 0) {
		fprintf(stderr, "udcfs: cannot set up the cache: %s\n", strerror(-r));
		return -1;
	}
	struct stat st;
	if (fstatat(rootfd, "", &st, AT_EMPTY_PATH) < 0) {
		fprintf(stderr, "udcfs: SOURCE: %s\n", strerror(errno));
		return -1;
	}
	fs.root.fd = rootfd;
	atomic_store(&fs.root.dev, st.st_dev);
	atomic_store(&fs.root.bino, st.st_ino);
	fs.entry_timeout = o->entry_timeout;
	fs.attr_timeout = o->attr_timeout;
	fs.negative_timeout = o->negative_timeout;
	fs.attr_valid_ns = (uint64_t)(o->attr_timeout * 1e9);
	fs.list_after_misses = o->list_after_misses;
	if (geteuid() == 0) {
		fs.switch_creds = 1;
		fs.own_ngroups = getgroups(0, NULL);
		fs.own_groups = calloc((size_t)fs.own_ngroups + 1, sizeof(gid_t));
		if (!fs.own_groups || getgroups(fs.own_ngroups, fs.own_groups) < 0) {
			fprintf(stderr, "udcfs: getgroups: %s\n", strerror(errno));
			return -1;
		}
		if (o->allow_other && !o->default_permissions)
			fprintf(stderr, "udcfs: warning: allow_other without default_permissions: "
					"every user gets root's access to SOURCE\n");
	}
	return 0;
}

static void fs_destroy(void)
{
	udc_cache_destroy(fs.cache);
	nodes_destroy(&fs.nodes);
	for (unsigned i = 0; i < NAME_LOCKS; i++)
		pthread_rwlock_destroy(&fs.name_locks[i]);
	free(fs.own_groups);
	if (fs.root.fd >= 0)
		close(fs.root.fd);
}

static int add_mount_options(struct fuse_args *args, const char *source)
{
	char *opts = NULL;
	int r = fuse_opt_add_opt(&opts, "subtype=udcfs");
	if (r == 0 && strlen(source) < 1024) {
		char fsname[1100];
		snprintf(fsname, sizeof(fsname), "fsname=%s", source);
		r = fuse_opt_add_opt_escaped(&opts, fsname);
	}
	if (r == 0)
		r = fuse_opt_add_arg(args, "-o");
	if (r == 0)
		r = fuse_opt_add_arg(args, opts);
	free(opts);
	return r;
}

static int run_loop(struct fuse_session *se, const struct fuse_cmdline_opts *cmd)
{
	if (cmd->singlethread)
		return fuse_session_loop(se);
	struct fuse_loop_config *config = fuse_loop_cfg_create();
	if (!config)
		return -ENOMEM;
	fuse_loop_cfg_set_clone_fd(config, (unsigned)cmd->clone_fd);
	if (cmd->max_idle_threads != UINT_MAX) /* UINT_MAX: not given */
		fuse_loop_cfg_set_idle_threads(config, cmd->max_idle_threads);
	if (cmd->max_threads != UINT_MAX)
		fuse_loop_cfg_set_max_threads(config, cmd->max_threads);
	int r = fuse_session_loop_mt(se, config);
	fuse_loop_cfg_destroy(config);
	return r;
}

int main(int argc, char *argv[])
{
	struct fuse_args args = FUSE_ARGS_INIT(argc, argv);
	struct options o = { .attr_timeout = 1.0, .list_after_misses = 64 };
	struct fuse_cmdline_opts cmd = { 0 };
	struct fuse_session *se = NULL;
	pthread_t stats_tid;
	int stats_started = 0, rootfd = -1, ret = 1;

	if (fuse_opt_parse(&args, &o, udcfs_opts, opt_proc) == -1 ||
	    fuse_parse_cmdline(&args, &cmd) != 0) {
		fprintf(stderr, "see '%s --help'\n", argv[0]);
		ret = 2;
		goto out_args;
	}
	if (cmd.show_help) {
		usage(argv[0]);
		fuse_cmdline_help();
		fuse_lowlevel_help();
		ret = 0;
		goto out_args;
	}
	if (cmd.show_version) {
		printf("udcfs: libudcache %s, libfuse %s\n", udc_version(), fuse_pkgversion());
		fuse_lowlevel_version();
		ret = 0;
		goto out_args;
	}
	if (!o.source || !cmd.mountpoint) {
		fprintf(stderr, "udcfs: missing %s\nusage: %s [options] SOURCE MOUNTPOINT\n",
			o.source ? "MOUNTPOINT" : "SOURCE and MOUNTPOINT", argv[0]);
		ret = 2;
		goto out_args;
	}
	if (check_timeout("entry_timeout", o.entry_timeout) ||
	    check_timeout("attr_timeout", o.attr_timeout) ||
	    check_timeout("negative_timeout", o.negative_timeout)) {
		ret = 2;
		goto out_args;
	}
	if (o.list_after_misses > LIST_AFTER_MISSES_MAX) {
		fprintf(stderr, "udcfs: -o list_after_misses: at most %u, got %u\n",
			LIST_AFTER_MISSES_MAX, o.list_after_misses);
		ret = 2;
		goto out_args;
	}
	rootfd = open_source(o.source);
	if (rootfd < 0 || check_mountpoint(cmd.mountpoint) < 0)
		goto out_args;
	fs.root.fd = rootfd;
	rootfd = -1; /* fs_destroy closes it */
	raise_nofile();
	if (fs_init(&o, fs.root.fd) < 0 || add_mount_options(&args, o.source) != 0)
		goto out_fs;
	umask(0); /* the kernel applied the caller's umask already */

	se = fuse_session_new(&args, &udcfs_ops, sizeof(udcfs_ops), &fs);
	if (!se)
		goto out_fs;
	if (fuse_set_signal_handlers(se) != 0)
		goto out_session;
	if (o.stats) {
		sigset_t set;
		sigemptyset(&set);
		sigaddset(&set, SIGUSR1);
		pthread_sigmask(SIG_BLOCK, &set, NULL); /* inherited by the session's threads */
	} else {
		signal(SIGUSR1, SIG_IGN);
	}
	if (fuse_session_mount(se, cmd.mountpoint) != 0)
		goto out_signals;
	fuse_daemonize(cmd.foreground);
	if (o.stats)
		stats_started = pthread_create(&stats_tid, NULL, stats_thread, NULL) == 0;
	fs.se = se;
	if (reaper_start(&fs, o.max_nodes ? o.max_nodes : node_budget()) < 0)
		fprintf(stderr, "udcfs: warning: no reaper thread: nodes are not bounded\n");

	ret = run_loop(se, &cmd) != 0;

	reaper_stop(&fs);
	fuse_session_unmount(se);
	if (stats_started) {
		atomic_store(&stats_quit, 1);
		pthread_kill(stats_tid, SIGUSR1);
		pthread_join(stats_tid, NULL);
	}
	if (o.stats)
		print_stats("unmount");
out_signals:
	fuse_remove_signal_handlers(se);
out_session:
	fuse_session_destroy(se);
out_fs:
	fs_destroy();
out_args:
	if (rootfd >= 0)
		close(rootfd);
	free(cmd.mountpoint);
	free(o.source);
	fuse_opt_free_args(&args);
	return ret;
}
