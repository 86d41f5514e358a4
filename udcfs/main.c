/*
 * udcfs [options] SOURCE MOUNTPOINT: options, mount, the session loop and the statistics.
 * SOURCE is a local directory, or nfs://HOST[:PORT]/EXPORT[?libnfs URL arguments] for the NFS
 * backend.
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

enum { KEY_ALLOW_OTHER, KEY_DEFAULT_PERMISSIONS, KEY_NOAC, KEY_NOCACHE };

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
	OPT("acregmin=%u", acregmin),
	OPT("acregmax=%u", acregmax),
	OPT("acdirmin=%u", acdirmin),
	OPT("acdirmax=%u", acdirmax),
	OPT("actimeo=%u", actimeo),
	OPT("actimeo=", actimeo_set),
	OPT("lookupcache=%s", lookupcache),
	OPT("connections=%u", connections),
	OPT("timeo=%u", timeo),
	OPT("retrans=%u", retrans),
	OPT("attr_timeout=", attr_timeout_set),
	OPT("entry_timeout=", entry_timeout_set),
	FUSE_OPT_KEY("noac", KEY_NOAC),
	FUSE_OPT_KEY("nocache", KEY_NOCACHE),
	FUSE_OPT_KEY("allow_other", KEY_ALLOW_OTHER),
	FUSE_OPT_KEY("default_permissions", KEY_DEFAULT_PERMISSIONS),
	FUSE_OPT_END,
};

static void usage(const char *prog)
{
	printf("usage: %s [options] SOURCE MOUNTPOINT\n"
	       "       %s [options] nfs://HOST[:PORT]/EXPORT MOUNTPOINT\n\n"
	       "Serves the directory SOURCE, or an NFSv3 export, at MOUNTPOINT; names, negative\n"
	       "lookups, attributes and directory listings are cached by libudcache.\n\n"
	       "udcfs options:\n"
	       "    -o entry_timeout=S     kernel dentry validity in seconds (default 0: every\n"
	       "                           lookup reaches udcfs, and udcache answers it)\n"
	       "    -o attr_timeout=S      kernel attribute validity (default 1.0; NFS: 0), and\n"
	       "                           udcache's for a local SOURCE\n"
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
	       "                           (default: 3/4 of the open-file limit, where each holds\n"
	       "                           an fd; 262144 over NFS)\n"
	       "    -o stats               print udcache's dentry-state on SIGUSR1 and at unmount\n"
	       "\n"
	       "\n"
	       "NFS options (as nfs(5) describes them; times in seconds):\n"
	       "    -o acregmin=S,acregmax=S  attribute cache time of files (default 3, 60)\n"
	       "    -o acdirmin=S,acdirmax=S  ... of directories (default 30, 60)\n"
	       "    -o actimeo=S           all four at once\n"
	       "    -o noac                no attribute caching (actimeo=0)\n"
	       "    -o nocache             udcache answers nothing: every lookup a LOOKUP, every\n"
	       "                           getattr a GETATTR, every listing read afresh\n"
	       "                           (lookupcache=none,noac; for comparisons)\n"
	       "    -o lookupcache=MODE    all (default), positive (no negative entries kept),\n"
	       "                           none (every lookup asks the server)\n"
	       "    -o connections=N       NFS connections, each one call in flight (default 8)\n"
	       "    -o timeo=DS,retrans=N  a call fails with EIO after timeo tenths of a second,\n"
	       "                           retried retrans times (default 100, 2)\n"
	       "\n"
	       "Run as root with -o allow_other,default_permissions, objects are created with the\n"
	       "credentials of the process that asks (NFS: every call carries them, AUTH_SYS).\n\n",
	       prog, prog);
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
	case KEY_NOAC:
		o->noac = 1;
		return 0;
	case KEY_NOCACHE:
		o->nocache = 1;
		return 0;
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

/*
 * How many nodes udcfs keeps before the reaper asks the kernel to forget unused files: where
 * each node holds an fd, 3/4 of the open-file limit (the rest: open files, udcache); else (NFS:
 * a node is a file handle, a few hundred bytes) NODES_WITHOUT_FD.
 */
enum { NODES_WITHOUT_FD = 1 << 18 };

static uint64_t node_budget(const struct backend *be)
{
	struct rlimit rl;
	if (!be->node_holds_fd)
		return NODES_WITHOUT_FD;
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
	if (fs.be->stats)
		fs.be->stats(&fs, when, stderr);
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
 * The name locks, the backend, udcache and the node table: 0 or -1 (reported). fs_destroy
 * undoes it, also after a failure.
 */
static int fs_init(const struct options *o)
{
	pthread_rwlockattr_t rw;
	int r;

	pthread_rwlockattr_init(&rw);
	/* writer-preferring: a stream of lookups must not starve a create of the same stripe */
	pthread_rwlockattr_setkind_np(&rw, PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP);
	for (unsigned i = 0; i < NAME_LOCKS; i++)
		pthread_rwlock_init(&fs.name_locks[i], &rw);
	pthread_rwlockattr_destroy(&rw);
	fs.entry_timeout = o->entry_timeout;
	fs.attr_timeout = o->attr_timeout;
	fs.negative_timeout = o->negative_timeout;
	fs.list_after_misses = o->list_after_misses;
	udc_config_init(&cache_config);
	cache_config.expected_entries = o->cache_entries;
	cache_config.buckets = o->cache_buckets;
	if (o->negative_cap)
		cache_config.negative_cap = o->negative_cap;
	cache_config.readdir_pages = o->readdir_pages;
	cache_config.readdir_page_entries = o->readdir_page_entries;
	if (fs.be->init(&fs, o, &cache_config) < 0)
		return -1;
	r = udc_cache_new(&cache_config, &fs.cache);
	if (r == 0) {
		udc_ops ops = { .size = sizeof(ops), .lookup = udcfs_miss,
				.readdir = udcfs_readdir_fill, .revalidate = fs.be->revalidate,
				.ctx = &fs };
		r = udc_set_ops(fs.cache, &ops);
	}
	if (r == 0)
		r = nodes_init(&fs.nodes, o->cache_entries ? o->cache_entries : 65536);
	if (r < 0) {
		fprintf(stderr, "udcfs: cannot set up the cache: %s\n", strerror(-r));
		return -1;
	}
	return 0;
}

static void fs_destroy(void)
{
	udc_cache_destroy(fs.cache);
	if (fs.nodes.buckets)
		nodes_destroy(&fs);
	fs.be->destroy(&fs);
	for (unsigned i = 0; i < NAME_LOCKS; i++)
		pthread_rwlock_destroy(&fs.name_locks[i]);
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
	struct options o = { .attr_timeout = 1.0, .list_after_misses = 64,
			     .acregmin = 3, .acregmax = 60, .acdirmin = 30, .acdirmax = 60,
			     .connections = 8, .timeo = 100, .retrans = 2 };
	struct fuse_cmdline_opts cmd = { 0 };
	struct fuse_session *se = NULL;
	pthread_t stats_tid;
	int stats_started = 0, ret = 1;

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
	fs.be = strncmp(o.source, "nfs://", 6) == 0 ? &nfs_backend : &local_backend;
	if (o.nocache && fs.be != &nfs_backend) {
		fprintf(stderr, "udcfs: -o nocache: an option of an NFS SOURCE\n");
		ret = 2;
		goto out_args;
	}
	if (fs.be == &nfs_backend && !o.attr_timeout_set)
		o.attr_timeout = 0; /* udcache keeps NFS attributes by nfs(5)'s rules */
	fs.attr_timeout = o.attr_timeout;
	if (check_mountpoint(cmd.mountpoint) < 0)
		goto out_args;
	raise_nofile();
	if (fs_init(&o) < 0 || add_mount_options(&args, o.source) != 0)
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
	if (reaper_start(&fs, o.max_nodes ? o.max_nodes : node_budget(fs.be)) < 0)
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
	free(cmd.mountpoint);
	free(o.source);
	free(o.lookupcache);
	fuse_opt_free_args(&args);
	return ret;
}
