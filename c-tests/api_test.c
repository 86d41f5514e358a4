/* api_test.c -- every function of udcache.h, and every bad input: NULL pointers, unknown
 * inodes, names with '/' or NUL, empty names, names over 255 bytes, cookies never issued, bad
 * credentials and access masks. Each
 * refused call must return its errno and change nothing, which a follow-up check verifies. */
#define _GNU_SOURCE
#include <errno.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "udcache.h"

/* ---- helpers ------------------------------------------------------------------------------ */

static udc_cache *new_cache(uint32_t policy) {
    udc_config cfg;
    udc_config_init(&cfg);
    cfg.expected_entries = 1024;
    cfg.unlink_policy = policy;
    udc_cache *c = NULL;
    CHECK_EQ(udc_cache_new(&cfg, &c), 0);
    CHECK(c != NULL);
    return c;
}

static udc_entry ent(uint64_t ino, uint32_t type, uint64_t fs_data) {
    udc_entry e = {.ino = ino, .type = type, .fs_data = fs_data};
    return e;
}

/* What a refused call must leave alone: the counts of the tables. */
typedef struct {
    uint64_t dentries, negatives, inodes;
} counts;

static counts count_of(const udc_cache *c) {
    udc_stats s = {.size = sizeof s};
    CHECK_EQ(udc_stats_get(c, &s), 0);
    counts k = {s.nr_dentry, s.nr_negative, s.nr_inodes};
    return k;
}

static int same(counts a, counts b) {
    return a.dentries == b.dentries && a.negatives == b.negatives && a.inodes == b.inodes;
}

/* udc_lookup's answer for (parent, name), or its error; *ino set on UDC_POSITIVE. */
static int look(udc_cache *c, uint64_t parent, const char *name, uint64_t *ino) {
    udc_entry e = {0};
    int r = udc_lookup(c, parent, name, strlen(name), &e);
    if (ino)
        *ino = r == UDC_POSITIVE ? e.ino : 0;
    return r;
}

static void forget_checking_lookups(udc_cache *c, uint64_t ino, uint64_t n);

/* ---- the bad names, for every function that takes a name ---------------------------------- */

typedef struct {
    const char *what, *name;
    size_t len;
    int err;
} bad_name;

static char long_name[300];

static const bad_name *bad_names(size_t *n) {
    memset(long_name, 'x', sizeof long_name);
    static bad_name b[] = {
        {"NULL name", NULL, 3, -EINVAL},
        {"empty name", "a", 0, -EINVAL},
        {"empty name, NULL", NULL, 0, -EINVAL},
        {"slash", "a/b", 3, -EINVAL},
        {"slash only", "/", 1, -EINVAL},
        {"NUL inside", "a\0b", 3, -EINVAL},
        {"dot", ".", 1, -EINVAL},
        {"dotdot", "..", 2, -EINVAL},
        {"256 bytes", long_name, 256, -ENAMETOOLONG},
        {"huge len", long_name, (size_t)1 << 40, -ENAMETOOLONG},
        /* A name's rule holds past PTRDIFF_MAX: too long a name, not a bad length. */
        {"len over PTRDIFF_MAX", long_name, (size_t)PTRDIFF_MAX + 1, -ENAMETOOLONG},
        {"len SIZE_MAX", long_name, SIZE_MAX, -ENAMETOOLONG},
    };
    *n = sizeof b / sizeof b[0];
    return b;
}

static void test_bad_names(void) {
    udc_cache *c = new_cache(UDC_UNLINK_NEGATIVE);
    udc_entry f = ent(10, UDC_TYPE_REG, 0), out = {0};
    CHECK_EQ(udc_add(c, UDC_ROOT_INO, S("keep"), &f), 0);
    counts before = count_of(c);
    size_t n;
    const bad_name *b = bad_names(&n);
    for (size_t i = 0; i < n; i++) {
        int err = b[i].err;
        udc_entry e = ent(11, UDC_TYPE_REG, 0);
        CHECK_EQ(udc_lookup(c, UDC_ROOT_INO, b[i].name, b[i].len, &out), err);
        CHECK_EQ(udc_peek(c, UDC_ROOT_INO, b[i].name, b[i].len, &out), err);
        CHECK_EQ(udc_resolve(c, UDC_ROOT_INO, b[i].name, b[i].len, &out), err);
        CHECK_EQ(udc_add(c, UDC_ROOT_INO, b[i].name, b[i].len, &e), err);
        CHECK_EQ(udc_add_negative(c, UDC_ROOT_INO, b[i].name, b[i].len), err);
        CHECK_EQ(udc_unlink(c, UDC_ROOT_INO, b[i].name, b[i].len), err);
        CHECK_EQ(udc_invalidate(c, UDC_ROOT_INO, b[i].name, b[i].len), err);
        CHECK_EQ(udc_rename(c, UDC_ROOT_INO, S("keep"), UDC_ROOT_INO, b[i].name, b[i].len, 0), err);
        CHECK_EQ(udc_rename(c, UDC_ROOT_INO, b[i].name, b[i].len, UDC_ROOT_INO, S("new"), 0), err);
        if (!same(before, count_of(c)))
            fprintf(stderr, "bad name '%s' changed the cache\n", b[i].what);
        CHECK(same(before, count_of(c)));
        CHECK_EQ(look(c, UDC_ROOT_INO, "keep", NULL), UDC_POSITIVE);
        CHECK_EQ(look(c, UDC_ROOT_INO, "new", NULL), UDC_MISS);
    }
    /* 255 bytes is the longest name. */
    CHECK_EQ(udc_add_negative(c, UDC_ROOT_INO, long_name, 255), 0);
    CHECK_EQ(udc_lookup(c, UDC_ROOT_INO, long_name, 255, &out), UDC_NEGATIVE);
    /* "..." is a name like any other. */
    CHECK_EQ(udc_add_negative(c, UDC_ROOT_INO, S("...")), 0);
    udc_cache_destroy(c);
}

/* ---- handles and configuration ------------------------------------------------------------ */

static void test_handles(void) {
    CHECK(udc_version() != NULL && strlen(udc_version()) > 0);
    CHECK_EQ(strcmp(udc_version(), "0.1.0"), 0);

    udc_config cfg;
    memset(&cfg, 0xab, sizeof cfg);
    udc_config_init(&cfg);
    CHECK_EQ(cfg.size, sizeof cfg);
    CHECK_EQ(cfg.expected_entries, 0);
    CHECK_EQ(cfg.negative_cap, 0);
    CHECK_EQ(cfg.unlink_policy, UDC_UNLINK_NEGATIVE);
    udc_config_init(NULL); /* ignored */

    udc_cache *c = (udc_cache *)0x1;
    CHECK_EQ(udc_cache_new(NULL, NULL), -EINVAL);
    CHECK_EQ(udc_cache_new(&cfg, NULL), -EINVAL);
    udc_config bad = cfg;
    bad.size = 0;
    CHECK_EQ(udc_cache_new(&bad, &c), -EINVAL);
    bad = cfg;
    bad.size = sizeof bad - 1;
    CHECK_EQ(udc_cache_new(&bad, &c), -EINVAL);
    bad = cfg;
    bad.unlink_policy = 7;
    CHECK_EQ(udc_cache_new(&bad, &c), -EINVAL);
    bad = cfg;
    bad.buckets = SIZE_MAX;
    CHECK_EQ(udc_cache_new(&bad, &c), -EINVAL);
    bad = cfg;
    bad.expected_entries = SIZE_MAX;
    CHECK_EQ(udc_cache_new(&bad, &c), -EINVAL);
    bad = cfg;
    bad.readdir_page_entries = 65537;
    CHECK_EQ(udc_cache_new(&bad, &c), -EINVAL);
    bad.readdir_page_entries = SIZE_MAX;
    CHECK_EQ(udc_cache_new(&bad, &c), -EINVAL);
    bad = cfg;
    bad.readdir_pages = SIZE_MAX;
    CHECK_EQ(udc_cache_new(&bad, &c), -EINVAL);
    CHECK(c == (udc_cache *)0x1); /* untouched by the refusals */

    /* Defaults (NULL config), and every field set. */
    CHECK_EQ(udc_cache_new(NULL, &c), 0);
    udc_stats s = {.size = sizeof s};
    CHECK_EQ(udc_stats_get(c, &s), 0);
    CHECK_EQ(s.nr_inodes, 1); /* the root */
    CHECK_EQ(s.nr_dentry, 0);
    CHECK(s.nr_buckets >= 16);
    udc_cache_destroy(c);
    cfg.buckets = 100; /* rounded up to 128 */
    cfg.negative_cap = UINT32_MAX;
    cfg.unlink_policy = UDC_UNLINK_DROP;
    cfg.readdir_pages = 8;
    cfg.readdir_page_entries = 4;
    CHECK_EQ(udc_cache_new(&cfg, &c), 0);
    CHECK_EQ(udc_stats_get(c, &s), 0);
    CHECK_EQ(s.nr_buckets, 128);
    udc_cache_destroy(c);
    udc_cache_destroy(NULL); /* ignored */

    /* Stale handles: destroy a, make b (which may take a's slot): a is refused, and a second
     * destroy of a leaves b alone. */
    udc_cache *a = new_cache(UDC_UNLINK_NEGATIVE);
    CHECK_EQ(udc_add_negative(a, UDC_ROOT_INO, S("in-a")), 0);
    udc_cache_destroy(a);
    udc_cache *b = new_cache(UDC_UNLINK_NEGATIVE);
    CHECK(a != b); /* handles are never reused */
    CHECK_EQ(udc_add_negative(a, UDC_ROOT_INO, S("via-a")), -EBADF);
    CHECK_EQ(udc_lookup(a, UDC_ROOT_INO, S("in-a"), &(udc_entry){0}), -EBADF);
    CHECK_EQ(udc_lookup(b, UDC_ROOT_INO, S("in-a"), &(udc_entry){0}), UDC_MISS);
    CHECK_EQ(udc_lookup(b, UDC_ROOT_INO, S("via-a"), &(udc_entry){0}), UDC_MISS);
    udc_cache_destroy(a); /* ignored: b is not freed */
    udc_cache_destroy(a);
    CHECK_EQ(udc_add_negative(b, UDC_ROOT_INO, S("in-b")), 0);
    CHECK_EQ(udc_lookup(b, UDC_ROOT_INO, S("in-b"), &(udc_entry){0}), UDC_NEGATIVE);
    counts b_counts = count_of(b);

    /* At most 1024 live caches (b is one): then -EMFILE, *out untouched. */
    static udc_cache *many[1024];
    udc_config small;
    udc_config_init(&small);
    small.expected_entries = 16;
    size_t made = 0;
    int r = 0;
    while (made < 1024 && (r = udc_cache_new(&small, &many[made])) == 0)
        made++;
    CHECK_EQ(r, -EMFILE);
    CHECK_EQ(made, 1023);
    udc_cache *untouched = (udc_cache *)0x1;
    CHECK_EQ(udc_cache_new(&small, &untouched), -EMFILE);
    CHECK(untouched == (udc_cache *)0x1);
    for (size_t i = 0; i < made; i++)
        udc_cache_destroy(many[i]);
    CHECK_EQ(udc_cache_new(&small, &untouched), 0); /* a slot is free again */
    udc_cache_destroy(untouched);

    /* A NULL handle is -EINVAL, anything else that is not a live handle -EBADF, everywhere:
     * an address (of zeroed memory, which must stay so), made-up odd values, a destroyed
     * handle. */
    static uint64_t garbage[512];
    udc_cache *handles[5] = {NULL, (udc_cache *)garbage, (udc_cache *)0x1,
                             (udc_cache *)(uintptr_t)-1, a};
    int errs[5] = {-EINVAL, -EBADF, -EBADF, -EBADF, -EBADF};
    for (int i = 0; i < 5; i++) {
        udc_cache *h = handles[i];
        int err = errs[i];
        udc_entry e = ent(5, UDC_TYPE_REG, 0);
        udc_walk_result w = {.size = sizeof w};
        udc_attr a = {0};
        udc_dirent d[2];
        size_t n = 0;
        char text[64];
        udc_ops ops = {.size = sizeof ops};
        CHECK_EQ(udc_lookup(h, 1, S("a"), &e), err);
        CHECK_EQ(udc_peek(h, 1, S("a"), &e), err);
        CHECK_EQ(udc_resolve(h, 1, S("a"), &e), err);
        CHECK_EQ(udc_walk(h, 1, S("a"), &w), err);
        CHECK_EQ(udc_add(h, 1, S("a"), &e), err);
        CHECK_EQ(udc_add_negative(h, 1, S("a")), err);
        CHECK_EQ(udc_unlink(h, 1, S("a")), err);
        CHECK_EQ(udc_rename(h, 1, S("a"), 1, S("b"), 0), err);
        CHECK_EQ(udc_forget(h, 5, 1), err);
        CHECK_EQ(udc_count_lookup(h, 5), err);
        CHECK_EQ(udc_invalidate(h, 1, S("a")), err);
        CHECK_EQ(udc_shrink(h, 10), err);
        CHECK_EQ(udc_getattr(h, 1, &a), err);
        CHECK_EQ(udc_setattr(h, 1, &a, 1000), err);
        CHECK_EQ(udc_readdir(h, 1, 0, d, 2, &n), err);
        CHECK_EQ(udc_dir_changed(h, 1, 0), err);
        CHECK_EQ(udc_stats_get(h, &(udc_stats){.size = sizeof(udc_stats)}), err);
        CHECK_EQ(udc_stats_format(h, text, sizeof text), err);
        CHECK_EQ(udc_set_ops(h, &ops), err);
        udc_cred cred = {.size = sizeof cred};
        uint64_t stamp = 0;
        CHECK_EQ(udc_set_entry_timeout(h, 1, S("a"), 0), err);
        /* The handle is checked first: another bad argument does not change the error. */
        CHECK_EQ(udc_set_entry_timeout(h, 1, S("a"), UDC_TTL_CONFIGURED), err);
        CHECK_EQ(udc_walk_as(h, 1, S("a"), &cred, &w), err);
        CHECK_EQ(udc_access(h, 1, &cred, UDC_MAY_READ), err);
        CHECK_EQ(udc_cached_access(h, 1, &cred, UDC_MAY_READ), err);
        CHECK_EQ(udc_access_stamp(h, 1, &stamp), err);
        CHECK_EQ(udc_store_access(h, 1, &cred, UDC_MAY_READ, stamp), err);
        CHECK_EQ(udc_acl_changed(h, 1), err);
        udc_cache_destroy(h); /* ignored: NULL, or not a live handle */
    }
    for (size_t i = 0; i < sizeof garbage / sizeof garbage[0]; i++)
        CHECK(garbage[i] == 0 || !"destroy wrote to a garbage handle");
    /* b saw none of it. */
    CHECK(same(b_counts, count_of(b)));
    CHECK_EQ(udc_lookup(b, UDC_ROOT_INO, S("in-b"), &(udc_entry){0}), UDC_NEGATIVE);
    udc_cache_destroy(b);
}

/* ---- names: add, add_negative, lookup, unlink, rename ------------------------------------- */

static void test_names(void) {
    udc_cache *c = new_cache(UDC_UNLINK_NEGATIVE);
    udc_entry dir = ent(2, UDC_TYPE_DIR, 0xd1), file = ent(3, UDC_TYPE_REG, 0xf00d), out;
    uint64_t ino;

    /* NULL entry / output pointers. */
    counts before = count_of(c);
    CHECK_EQ(udc_add(c, UDC_ROOT_INO, S("f"), NULL), -EINVAL);
    CHECK_EQ(udc_lookup(c, UDC_ROOT_INO, S("f"), NULL), -EINVAL);
    CHECK_EQ(udc_peek(c, UDC_ROOT_INO, S("f"), NULL), -EINVAL);
    CHECK_EQ(udc_resolve(c, UDC_ROOT_INO, S("f"), NULL), -EINVAL);
    /* Bad entries: inode 0, unknown type, the root inode. */
    udc_entry bad = ent(0, UDC_TYPE_REG, 0);
    CHECK_EQ(udc_add(c, UDC_ROOT_INO, S("f"), &bad), -EINVAL);
    bad = ent(4, UDC_TYPE_UNKNOWN, 0);
    CHECK_EQ(udc_add(c, UDC_ROOT_INO, S("f"), &bad), -EINVAL);
    bad = ent(4, 99, 0);
    CHECK_EQ(udc_add(c, UDC_ROOT_INO, S("f"), &bad), -EINVAL);
    bad = ent(UDC_ROOT_INO, UDC_TYPE_DIR, 0);
    CHECK_EQ(udc_add(c, UDC_ROOT_INO, S("f"), &bad), -EMLINK);
    /* Unknown parent inodes. */
    CHECK_EQ(udc_add(c, 999, S("f"), &file), -ESTALE);
    CHECK_EQ(udc_add(c, 999, S("f"), &bad), -ESTALE); /* the parent first, whatever else */
    CHECK_EQ(udc_add_negative(c, 999, S("f")), -ESTALE);
    CHECK_EQ(udc_lookup(c, 999, S("f"), &out), -ESTALE);
    CHECK_EQ(udc_resolve(c, 999, S("f"), &out), -ESTALE);
    CHECK_EQ(udc_unlink(c, 999, S("f")), -ESTALE);
    CHECK_EQ(udc_invalidate(c, 999, S("f")), -ESTALE);
    CHECK(same(before, count_of(c)));
    CHECK_EQ(look(c, UDC_ROOT_INO, "f", NULL), UDC_MISS);

    /* Add and look up. */
    CHECK_EQ(udc_add(c, UDC_ROOT_INO, S("d"), &dir), 0);
    CHECK_EQ(udc_add(c, 2, S("f"), &file), 0);
    memset(&out, 0, sizeof out);
    CHECK_EQ(udc_lookup(c, 2, S("f"), &out), UDC_POSITIVE);
    CHECK_EQ(out.ino, 3);
    CHECK_EQ(out.type, UDC_TYPE_REG);
    CHECK_EQ(out.fs_data, 0xf00d);
    CHECK_EQ(look(c, 2, "g", NULL), UDC_MISS);

    /* A file is not a directory. */
    before = count_of(c);
    CHECK_EQ(udc_add(c, 3, S("x"), &file), -ENOTDIR);
    CHECK_EQ(udc_add_negative(c, 3, S("x")), -ENOTDIR);
    CHECK_EQ(udc_lookup(c, 3, S("x"), &out), -ENOTDIR);
    CHECK_EQ(udc_unlink(c, 3, S("x")), -ENOTDIR);
    CHECK(same(before, count_of(c)));

    /* Exists; aliases; kind mismatch. */
    CHECK_EQ(udc_add(c, 2, S("f"), &file), -EEXIST);
    CHECK_EQ(udc_add_negative(c, 2, S("f")), -EEXIST);
    CHECK_EQ(udc_add(c, UDC_ROOT_INO, S("d2"), &dir), -EMLINK); /* a second name of a directory */
    udc_entry mismatch = ent(3, UDC_TYPE_DIR, 0);
    CHECK_EQ(udc_add(c, UDC_ROOT_INO, S("m"), &mismatch), -EINVAL); /* not the cached type */
    CHECK(same(before, count_of(c)));
    CHECK_EQ(look(c, UDC_ROOT_INO, "d2", NULL), UDC_MISS);
    CHECK_EQ(udc_add(c, UDC_ROOT_INO, S("hardlink"), &file), 0); /* a hard link of a file */
    CHECK_EQ(look(c, UDC_ROOT_INO, "hardlink", &ino), UDC_POSITIVE);
    CHECK_EQ(ino, 3);
    CHECK_EQ(udc_forget(c, 3, 3), -EINVAL); /* two lookups counted, not three */
    CHECK_EQ(look(c, 2, "f", NULL), UDC_POSITIVE);

    /* Negative entries, instantiated by add. */
    CHECK_EQ(udc_add_negative(c, 2, S("neg")), 0);
    CHECK_EQ(udc_add_negative(c, 2, S("neg")), 0); /* already remembered: fine */
    CHECK_EQ(look(c, 2, "neg", NULL), UDC_NEGATIVE);
    udc_entry made = ent(4, UDC_TYPE_REG, 0);
    CHECK_EQ(udc_add(c, 2, S("neg"), &made), 0);
    CHECK_EQ(look(c, 2, "neg", &ino), UDC_POSITIVE);
    CHECK_EQ(ino, 4);

    /* Unlink: negative by policy; ENOENT when not positive. */
    CHECK_EQ(udc_unlink(c, 2, S("neg")), 0);
    CHECK_EQ(look(c, 2, "neg", NULL), UDC_NEGATIVE);
    before = count_of(c);
    CHECK_EQ(udc_unlink(c, 2, S("neg")), -ENOENT);
    CHECK_EQ(udc_unlink(c, 2, S("never")), -ENOENT);
    CHECK(same(before, count_of(c)));

    /* Rename: replace, no-replace, exchange, bad flags. */
    udc_entry g = ent(5, UDC_TYPE_REG, 0);
    CHECK_EQ(udc_add(c, 2, S("g"), &g), 0);
    before = count_of(c);
    CHECK_EQ(udc_rename(c, 2, S("f"), 2, S("g"), UDC_RENAME_NOREPLACE), -EEXIST);
    CHECK_EQ(udc_rename(c, 2, S("f"), 2, S("g"), UDC_RENAME_NOREPLACE | UDC_RENAME_EXCHANGE),
             -EINVAL);
    CHECK_EQ(udc_rename(c, 2, S("f"), 2, S("g"), 4), -EINVAL);
    CHECK_EQ(udc_rename(c, 2, S("nothing"), 2, S("g"), 0), -ENOENT);
    CHECK_EQ(udc_rename(c, 2, S("f"), 2, S("nothing"), UDC_RENAME_EXCHANGE), -ENOENT);
    CHECK_EQ(udc_rename(c, 999, S("f"), 2, S("z"), 0), -ESTALE);
    CHECK_EQ(udc_rename(c, 2, S("f"), 999, S("z"), 0), -ESTALE);
    CHECK_EQ(udc_rename(c, 2, S("f"), 3, S("z"), 0), -ENOTDIR);
    /* Onto itself: nothing to do, but the target exists for NOREPLACE (as for renameat2). */
    CHECK_EQ(udc_rename(c, 2, S("f"), 2, S("f"), UDC_RENAME_NOREPLACE), -EEXIST);
    CHECK_EQ(udc_rename(c, 2, S("f"), 2, S("f"), 0), 0);
    CHECK(same(before, count_of(c)));
    CHECK_EQ(look(c, 2, "f", &ino), UDC_POSITIVE);
    CHECK_EQ(ino, 3);
    CHECK_EQ(look(c, 2, "g", &ino), UDC_POSITIVE);
    CHECK_EQ(ino, 5);
    CHECK_EQ(udc_rename(c, 2, S("f"), 2, S("g"), UDC_RENAME_EXCHANGE), 0);
    CHECK_EQ(look(c, 2, "f", &ino), UDC_POSITIVE);
    CHECK_EQ(ino, 5);
    CHECK_EQ(look(c, 2, "g", &ino), UDC_POSITIVE);
    CHECK_EQ(ino, 3);
    CHECK_EQ(udc_rename(c, 2, S("g"), UDC_ROOT_INO, S("moved"), 0), 0);
    CHECK_EQ(look(c, 2, "g", NULL), UDC_NEGATIVE);
    CHECK_EQ(look(c, UDC_ROOT_INO, "moved", &ino), UDC_POSITIVE);
    CHECK_EQ(ino, 3);
    CHECK_EQ(udc_rename(c, 2, S("f"), UDC_ROOT_INO, S("moved"), 0), 0); /* replaces */
    CHECK_EQ(look(c, UDC_ROOT_INO, "moved", &ino), UDC_POSITIVE);
    CHECK_EQ(ino, 5);
    udc_cache_destroy(c);

    /* UDC_UNLINK_DROP: an unlinked name misses. */
    c = new_cache(UDC_UNLINK_DROP);
    CHECK_EQ(udc_add(c, UDC_ROOT_INO, S("f"), &file), 0);
    CHECK_EQ(udc_unlink(c, UDC_ROOT_INO, S("f")), 0);
    CHECK_EQ(look(c, UDC_ROOT_INO, "f", NULL), UDC_MISS);
    udc_cache_destroy(c);
}

/* ---- lookup counts: forget, count_lookup -------------------------------------------------- */

/* Checks that `ino` has exactly `n` lookups counted, and forgets them: forgetting n + 1 is
 * refused (and changes nothing), forgetting n drops the inode. */
static void forget_checking_lookups(udc_cache *c, uint64_t ino, uint64_t n) {
    CHECK_EQ(udc_forget(c, ino, n + 1), -EINVAL);
    CHECK_EQ(udc_forget(c, ino, n), 0);
    CHECK_EQ(udc_count_lookup(c, ino), -ESTALE);
}

static void test_forget(void) {
    udc_cache *c = new_cache(UDC_UNLINK_NEGATIVE);
    udc_entry d = ent(2, UDC_TYPE_DIR, 0), f = ent(3, UDC_TYPE_REG, 0);
    CHECK_EQ(udc_add(c, UDC_ROOT_INO, S("d"), &d), 0);
    CHECK_EQ(udc_add(c, 2, S("f"), &f), 0); /* one lookup */
    CHECK_EQ(udc_count_lookup(c, 3), 0);    /* two */
    counts before = count_of(c);
    CHECK_EQ(udc_forget(c, 3, 3), -EINVAL); /* more than counted */
    CHECK_EQ(udc_forget(c, 999, 1), -ESTALE);
    CHECK_EQ(udc_count_lookup(c, 999), -ESTALE);
    CHECK_EQ(udc_forget(c, UDC_ROOT_INO, 1), -EINVAL); /* the root is never forgotten */
    CHECK_EQ(udc_forget(c, 3, 0), 0);                  /* nothing */
    CHECK(same(before, count_of(c)));
    CHECK_EQ(udc_forget(c, 3, 1), 0);
    CHECK_EQ(look(c, 2, "f", NULL), UDC_POSITIVE);
    CHECK_EQ(udc_forget(c, 3, 1), 0); /* the last: the inode and its names leave */
    CHECK_EQ(look(c, 2, "f", NULL), UDC_MISS);
    udc_attr a;
    CHECK_EQ(udc_getattr(c, 3, &a), -ESTALE);
    CHECK_EQ(udc_forget(c, 3, 1), -ESTALE);
    CHECK_EQ(count_of(c).inodes, 2);
    udc_cache_destroy(c);
}

/* ---- walk --------------------------------------------------------------------------------- */

static void test_walk(void) {
    udc_cache *c = new_cache(UDC_UNLINK_NEGATIVE);
    udc_entry a = ent(2, UDC_TYPE_DIR, 0), b = ent(3, UDC_TYPE_DIR, 0), f = ent(4, UDC_TYPE_REG, 7),
              l = ent(5, UDC_TYPE_LNK, 0);
    CHECK_EQ(udc_add(c, UDC_ROOT_INO, S("a"), &a), 0);
    CHECK_EQ(udc_add(c, 2, S("b"), &b), 0);
    CHECK_EQ(udc_add(c, 3, S("f"), &f), 0);
    CHECK_EQ(udc_add(c, 2, S("link"), &l), 0);
    CHECK_EQ(udc_add_negative(c, 3, S("gone")), 0);
    udc_walk_result w = {.size = sizeof w};

    CHECK_EQ(udc_walk(c, UDC_ROOT_INO, S("a/b/f"), &w), UDC_WALK_FOUND);
    CHECK_EQ(w.kind, UDC_WALK_FOUND);
    CHECK_EQ(w.entry.ino, 4);
    CHECK_EQ(w.entry.fs_data, 7);
    CHECK_EQ(udc_walk(c, UDC_ROOT_INO, S("/a/./b/../b//f"), &w), UDC_WALK_FOUND);
    CHECK_EQ(w.entry.ino, 4);
    /* A trailing '/' asks for a directory, as POSIX resolution does. */
    CHECK_EQ(udc_walk(c, UDC_ROOT_INO, S("a/b/"), &w), UDC_WALK_FOUND);
    CHECK_EQ(w.entry.ino, 3);
    CHECK_EQ(udc_walk(c, UDC_ROOT_INO, S("a/b/f/"), &w), UDC_WALK_NOTDIR);
    CHECK_EQ(w.entry.ino, 4);
    CHECK_EQ(w.offset, 6);
    CHECK_EQ(udc_walk(c, UDC_ROOT_INO, S("a/link/"), &w), UDC_WALK_SYMLINK);
    CHECK_EQ(w.entry.ino, 5);
    CHECK_EQ(w.offset, 6); /* the rest, "/", keeps the slash */
    CHECK_EQ(udc_walk(c, UDC_ROOT_INO, NULL, 0, &w), UDC_WALK_FOUND); /* the empty path */
    CHECK_EQ(w.entry.ino, UDC_ROOT_INO);
    CHECK_EQ(udc_walk(c, UDC_ROOT_INO, S("a/b/gone"), &w), UDC_WALK_NEGATIVE);
    CHECK_EQ(w.offset, 4);
    CHECK_EQ(udc_walk(c, UDC_ROOT_INO, S("a/x/y"), &w), UDC_WALK_MISS);
    CHECK_EQ(w.parent, 2);
    CHECK_EQ(w.offset, 2);
    CHECK_EQ(udc_walk(c, UDC_ROOT_INO, S("a/link/z"), &w), UDC_WALK_SYMLINK);
    CHECK_EQ(w.entry.ino, 5);
    CHECK_EQ(w.offset, 7);
    CHECK_EQ(udc_walk(c, UDC_ROOT_INO, S("a/link"), &w), UDC_WALK_FOUND); /* lstat-like */
    CHECK_EQ(w.entry.type, UDC_TYPE_LNK);
    CHECK_EQ(udc_walk(c, UDC_ROOT_INO, S("a/b/f/z"), &w), UDC_WALK_NOTDIR);
    CHECK_EQ(w.entry.ino, 4);
    CHECK_EQ(w.offset, 6);
    CHECK_EQ(udc_walk(c, 2, S("b/f"), &w), UDC_WALK_FOUND); /* from another directory */
    CHECK_EQ(w.entry.ino, 4);

    /* Refusals: the result is untouched. */
    udc_walk_result untouched = {.size = sizeof w, .kind = 77};
    w = untouched;
    CHECK_EQ(udc_walk(c, 999, S("a"), &w), -ESTALE);
    CHECK_EQ(udc_walk(c, UDC_ROOT_INO, NULL, 3, &w), -EINVAL);
    CHECK_EQ(udc_walk(c, UDC_ROOT_INO, S("a/b\0c"), &w), -EINVAL);
    char path[300] = "a/";
    memset(path + 2, 'y', 256);
    CHECK_EQ(udc_walk(c, UDC_ROOT_INO, path, 258, &w), -ENAMETOOLONG);
    CHECK_EQ(udc_walk(c, UDC_ROOT_INO, S("a"), &w), UDC_WALK_FOUND); /* a valid walk, then... */
    w = untouched;
    CHECK_EQ(udc_walk(c, UDC_ROOT_INO, "a", SIZE_MAX, &w), -EINVAL); /* ...over PTRDIFF_MAX */
    CHECK_EQ(udc_walk(c, UDC_ROOT_INO, "a", (size_t)PTRDIFF_MAX + 1, &w), -EINVAL);
    CHECK_EQ(w.kind, 77);
    CHECK_EQ(udc_walk(c, UDC_ROOT_INO, S("a"), NULL), -EINVAL);
    udc_walk_result small = {.size = sizeof small - 1, .kind = 77};
    CHECK_EQ(udc_walk(c, UDC_ROOT_INO, S("a"), &small), -EINVAL);
    CHECK_EQ(small.kind, 77);

    /* `..` up to a directory no longer cached (forgotten while its child stayed) is -ESTALE,
       as naming it would be: a MISS would send the caller to resolve "..", which is refused. */
    CHECK_EQ(udc_forget(c, 2, 1), 0);
    w = untouched;
    CHECK_EQ(udc_walk(c, 3, S(".."), &w), -ESTALE);
    CHECK_EQ(udc_walk(c, 3, S("../x"), &w), -ESTALE);
    CHECK_EQ(w.kind, 77);
    CHECK_EQ(udc_walk(c, 3, S("."), &w), UDC_WALK_FOUND); /* 3 itself is still cached */
    CHECK_EQ(w.entry.ino, 3);
    udc_cache_destroy(c);
}

/* ---- attributes --------------------------------------------------------------------------- */

/* Field by field: a struct's padding bytes are not part of its value. */
static int same_attr(const udc_attr *x, const udc_attr *y) {
    return x->ino == y->ino && x->size == y->size && x->blocks == y->blocks &&
           x->mode == y->mode && x->nlink == y->nlink && x->uid == y->uid && x->gid == y->gid &&
           x->rdev == y->rdev && x->blksize == y->blksize && x->atime_sec == y->atime_sec &&
           x->mtime_sec == y->mtime_sec && x->ctime_sec == y->ctime_sec &&
           x->atime_nsec == y->atime_nsec && x->mtime_nsec == y->mtime_nsec &&
           x->ctime_nsec == y->ctime_nsec;
}

static void test_attr(void) {
    udc_cache *c = new_cache(UDC_UNLINK_NEGATIVE);
    udc_attr a = {.size = 4096, .blocks = 8, .mode = 040755, .nlink = 2, .uid = 1000, .gid = 100,
                  .rdev = 0, .blksize = 4096, .atime_sec = -1, .mtime_sec = 1700000000,
                  .ctime_sec = 5, .atime_nsec = 1, .mtime_nsec = 999999999, .ctime_nsec = 3};
    udc_attr out;
    memset(&out, 0x5a, sizeof out);
    const udc_attr untouched = out;
    CHECK_EQ(udc_getattr(c, UDC_ROOT_INO, &out), -ENODATA); /* never set */
    CHECK_EQ(udc_getattr(c, 999, &out), -ESTALE);
    CHECK_EQ(udc_setattr(c, 999, &a, 1000000000), -ESTALE);
    CHECK_EQ(udc_getattr(c, UDC_ROOT_INO, NULL), -EINVAL);
    CHECK_EQ(udc_setattr(c, UDC_ROOT_INO, NULL, 1000000000), -EINVAL);
    CHECK(memcmp(&out, &untouched, sizeof out) == 0); /* not written at all */
    CHECK_EQ(udc_getattr(c, UDC_ROOT_INO, &out), -ENODATA); /* the refusals set nothing */

    CHECK_EQ(udc_setattr(c, UDC_ROOT_INO, &a, 60ull * 1000000000), 0);
    CHECK_EQ(udc_getattr(c, UDC_ROOT_INO, &out), 0);
    a.ino = UDC_ROOT_INO; /* filled by getattr */
    CHECK(same_attr(&out, &a));
    CHECK_EQ(udc_setattr(c, UDC_ROOT_INO, &a, UINT64_MAX), 0); /* "forever" */
    CHECK_EQ(udc_getattr(c, UDC_ROOT_INO, &out), 0);
    CHECK_EQ(udc_setattr(c, UDC_ROOT_INO, &a, 0), 0); /* expired at once */
    CHECK_EQ(udc_getattr(c, UDC_ROOT_INO, &out), -ENODATA);
    udc_cache_destroy(c);
}

/* ---- callbacks: set_ops, resolve ---------------------------------------------------------- */

typedef struct {
    int calls;         /* lookup callback calls */
    int reply;         /* what it returns for names starting with 'e' */
    udc_cache *cache;  /* for calls back into the library */
    int reentry_ok;    /* udc_ calls made from inside the callback worked */
} fs_state;

static int fs_lookup(void *ctx, uint64_t parent, const char *name, size_t len, udc_entry *out) {
    fs_state *fs = ctx;
    fs->calls++;
    /* A callback may call the library (not the waiting resolve of this name). */
    udc_stats s = {.size = sizeof s};
    udc_entry e;
    if (udc_stats_get(fs->cache, &s) == 0 &&
        udc_lookup(fs->cache, parent, name, len, &e) == UDC_MISS)
        fs->reentry_ok++;
    if (len >= 3 && memcmp(name, "yes", 3) == 0) {
        *out = ent(100 + (uint64_t)fs->calls, UDC_TYPE_REG, 42);
        return 1;
    }
    if (len >= 3 && memcmp(name, "bad", 3) == 0) {
        *out = ent(200, 99, 0); /* an unknown type: a broken contract */
        return 1;
    }
    if (len >= 2 && memcmp(name, "mv", 2) == 0) {
        *out = ent(50, UDC_TYPE_DIR, 0); /* a directory renamed behind the cache */
        return 1;
    }
    if (len >= 4 && memcmp(name, "root", 4) == 0) {
        *out = ent(UDC_ROOT_INO, UDC_TYPE_DIR, 0); /* the root, which has no name */
        return 1;
    }
    if (name[0] == 'e')
        return fs->reply;
    return 0;
}

static void test_resolve(void) {
    udc_cache *c = new_cache(UDC_UNLINK_NEGATIVE);
    fs_state fs = {.cache = c};
    udc_entry out;

    /* Without callbacks: cached answers only. */
    udc_entry f = ent(3, UDC_TYPE_REG, 9);
    CHECK_EQ(udc_add(c, UDC_ROOT_INO, S("f"), &f), 0);
    CHECK_EQ(udc_resolve(c, UDC_ROOT_INO, S("f"), &out), UDC_POSITIVE);
    CHECK_EQ(out.fs_data, 9);
    forget_checking_lookups(c, 3, 2); /* add + resolve */
    CHECK_EQ(look(c, UDC_ROOT_INO, "f", NULL), UDC_MISS);
    CHECK_EQ(udc_resolve(c, UDC_ROOT_INO, S("unknown"), &out), -ENOSYS);
    CHECK_EQ(look(c, UDC_ROOT_INO, "unknown", NULL), UDC_MISS);

    /* set_ops: NULL, too small, then set, then busy. */
    udc_ops ops = {.size = sizeof ops, .lookup = fs_lookup, .readdir = NULL, .ctx = &fs};
    CHECK_EQ(udc_set_ops(c, NULL), -EINVAL);
    udc_ops small = ops;
    small.size = sizeof small - 1;
    CHECK_EQ(udc_set_ops(c, &small), -EINVAL);
    CHECK_EQ(udc_resolve(c, UDC_ROOT_INO, S("yes1"), &out), -ENOSYS); /* still none */
    CHECK_EQ(udc_set_ops(c, &ops), 0);
    CHECK_EQ(udc_set_ops(c, &ops), -EBUSY);

    CHECK_EQ(udc_resolve(c, UDC_ROOT_INO, S("yes1"), &out), UDC_POSITIVE);
    CHECK_EQ(fs.calls, 1);
    CHECK_EQ(out.ino, 101);
    CHECK_EQ(out.fs_data, 42);
    CHECK_EQ(udc_resolve(c, UDC_ROOT_INO, S("yes1"), &out), UDC_POSITIVE); /* cached */
    CHECK_EQ(fs.calls, 1);
    forget_checking_lookups(c, 101, 2);
    CHECK_EQ(look(c, UDC_ROOT_INO, "yes1", NULL), UDC_MISS);
    CHECK_EQ(udc_resolve(c, UDC_ROOT_INO, S("no"), &out), UDC_NEGATIVE);
    CHECK_EQ(look(c, UDC_ROOT_INO, "no", NULL), UDC_NEGATIVE); /* remembered */
    CHECK_EQ(udc_resolve(c, UDC_ROOT_INO, S("no"), &out), UDC_NEGATIVE);
    CHECK_EQ(fs.calls, 2);
    CHECK_EQ(fs.reentry_ok, 2);

    /* Callback errors are returned and not cached; broken contracts are -EIO. */
    counts before = count_of(c);
    fs.reply = -EACCES;
    CHECK_EQ(udc_resolve(c, UDC_ROOT_INO, S("e1"), &out), -EACCES);
    fs.reply = 5;
    CHECK_EQ(udc_resolve(c, UDC_ROOT_INO, S("e2"), &out), -EIO);
    fs.reply = INT_MIN;
    CHECK_EQ(udc_resolve(c, UDC_ROOT_INO, S("e3"), &out), -EIO);
    CHECK_EQ(udc_resolve(c, UDC_ROOT_INO, S("bad"), &out), -EIO);
    /* -ENOTRECOVERABLE is the library's own (a panic: destroy the cache); from a callback it
     * is a broken contract, so the caller can tell the two apart. A callback's -EIO is its
     * own error, passed on as it is. */
    fs.reply = -ENOTRECOVERABLE;
    CHECK_EQ(udc_resolve(c, UDC_ROOT_INO, S("e4"), &out), -EIO);
    fs.reply = -EIO;
    CHECK_EQ(udc_resolve(c, UDC_ROOT_INO, S("e5"), &out), -EIO);
    CHECK(same(before, count_of(c)));
    CHECK_EQ(look(c, UDC_ROOT_INO, "e1", NULL), UDC_MISS);
    CHECK_EQ(look(c, UDC_ROOT_INO, "bad", NULL), UDC_MISS);

    /* The root answered for a name: -EMLINK (the root has no name), nothing filed. */
    before = count_of(c);
    CHECK_EQ(udc_resolve(c, UDC_ROOT_INO, S("rootalias"), &out), -EMLINK);
    CHECK(same(before, count_of(c)));
    CHECK_EQ(look(c, UDC_ROOT_INO, "rootalias", NULL), UDC_MISS);

    /* A directory the callback names that is cached under another name (renamed on the
     * server): its name moves, with what is cached below it; the old name is dropped (the
     * answer says nothing of what that name holds now). */
    udc_entry old = ent(50, UDC_TYPE_DIR, 0), child = ent(51, UDC_TYPE_REG, 0);
    CHECK_EQ(udc_add(c, UDC_ROOT_INO, S("olddir"), &old), 0);
    CHECK_EQ(udc_add(c, 50, S("child"), &child), 0);
    CHECK_EQ(udc_resolve(c, UDC_ROOT_INO, S("mvdir"), &out), UDC_POSITIVE);
    CHECK_EQ(out.ino, 50);
    uint64_t ino = 0;
    CHECK_EQ(look(c, UDC_ROOT_INO, "mvdir", &ino), UDC_POSITIVE);
    CHECK_EQ(ino, 50);
    CHECK_EQ(look(c, UDC_ROOT_INO, "olddir", NULL), UDC_MISS);
    CHECK_EQ(look(c, 50, "child", &ino), UDC_POSITIVE);
    CHECK_EQ(ino, 51);
    forget_checking_lookups(c, 50, 2); /* the add and the resolve */

    udc_stats s = {.size = sizeof s};
    CHECK_EQ(udc_stats_get(c, &s), 0);
    /* Every miss went to the filesystem: the callback's calls, and the two misses that failed
     * with -ENOSYS before there was a callback. */
    CHECK_EQ(s.backend_lookups, (uint64_t)fs.calls + 2);
    udc_cache_destroy(c);
}

/* ---- readdir ------------------------------------------------------------------------------ */

#define NDIR 10

typedef struct {
    int calls;
    int mode;          /* 0: normal; 1: forget udc_fill_done; 2: fail with -EACCES; 3: the
                          directory is gone (-ESTALE); 4: fail with -ENOTRECOVERABLE */
    size_t max_seen;   /* the max of the last call */
    int fill_checks;   /* refusals udc_fill_add/done gave as expected, inside the callback */
    int enospc;        /* udc_fill_add refused an entry past max */
} dir_state;

/* Directory 1 (the root) holds f0..f9, cookies 1..10, inodes 100..109. Directory 2 holds
 * nothing and fails with -EIO. */
static int fs_readdir(void *ctx, uint64_t dir, uint64_t cookie, size_t max, udc_fill *fill) {
    dir_state *st = ctx;
    st->calls++;
    st->max_seen = max;
    if (dir != UDC_ROOT_INO)
        return -EIO;
    if (st->mode == 2)
        return -EACCES;
    if (st->mode == 4)
        return -ENOTRECOVERABLE;
    if (st->mode == 3)
        return -ESTALE;
    if (cookie > NDIR)
        return -EINVAL; /* never issued: cannot resume there */
    /* The fill refuses bad entries and changes nothing. */
    int ok = 1;
    ok &= udc_fill_add(fill, S("a/b"), 1, UDC_TYPE_REG, 77) == -EINVAL;
    ok &= udc_fill_add(fill, NULL, 3, 1, UDC_TYPE_REG, 77) == -EINVAL;
    ok &= udc_fill_add(fill, "x", 0, 1, UDC_TYPE_REG, 77) == -EINVAL;
    ok &= udc_fill_add(fill, long_name, 256, 1, UDC_TYPE_REG, 77) == -ENAMETOOLONG;
    ok &= udc_fill_add(fill, S("x"), 0, UDC_TYPE_REG, 77) == -EINVAL; /* inode 0 */
    ok &= udc_fill_add(fill, S("x"), 1, UDC_TYPE_REG, 0) == -EINVAL;  /* cookie 0 */
    ok &= udc_fill_add(fill, S("x"), 1, 42, 77) == -EINVAL;           /* unknown type */
    ok &= udc_fill_add(NULL, S("x"), 1, UDC_TYPE_REG, 77) == -EINVAL;
    ok &= udc_fill_done(NULL, 1, 0) == -EINVAL;
    static uint64_t junk[64];
    ok &= udc_fill_add((udc_fill *)junk, S("x"), 1, UDC_TYPE_REG, 77) == -EBADF;
    st->fill_checks += ok;
    size_t added = 0;
    for (uint64_t i = cookie; i < NDIR; i++) {
        char name[8];
        int n = snprintf(name, sizeof name, "f%d", (int)i);
        int r = udc_fill_add(fill, name, (size_t)n, 100 + i, i % 2 ? UDC_TYPE_DIR : UDC_TYPE_REG,
                             i + 1);
        if (r == -ENOSPC) {
            st->enospc++;
            break;
        }
        if (r == 0)
            added++;
    }
    if (added != (max < NDIR - cookie ? max : NDIR - cookie))
        st->fill_checks -= 1000;
    if (st->mode == 1)
        return 0;
    int eof = cookie + added >= NDIR;
    if (udc_fill_done(fill, eof, 1) != 0 || udc_fill_done(fill, eof, 1) != -EINVAL ||
        udc_fill_add(fill, S("late"), 1, UDC_TYPE_REG, 99) != -EINVAL)
        st->fill_checks -= 1000;
    return 0;
}

/* Lists directory `dir` from `cookie` in batches of at most `max`, counting each f<k> seen;
 * returns the last udc_readdir result (1 at the end) and the batches in *batches. */
static int list(udc_cache *c, uint64_t dir, uint64_t cookie, size_t max, int seen[NDIR],
                int *batches) {
    udc_dirent d[16];
    size_t n;
    int r;
    *batches = 0;
    do {
        r = udc_readdir(c, dir, cookie, d, max, &n);
        CHECK(r == 0 || r == 1);
        if (r < 0)
            return r;
        CHECK(n <= max);
        for (size_t i = 0; i < n; i++) {
            int k = -1;
            CHECK_EQ(sscanf(d[i].name, "f%d", &k), 1);
            CHECK(k >= 0 && k < NDIR);
            if (k < 0 || k >= NDIR)
                continue;
            seen[k]++;
            CHECK_EQ(d[i].ino, 100 + (uint64_t)k);
            CHECK_EQ(d[i].cookie, (uint64_t)k + 1);
            CHECK_EQ(d[i].type, k % 2 ? UDC_TYPE_DIR : UDC_TYPE_REG);
            CHECK_EQ(d[i].namelen, strlen(d[i].name));
            cookie = d[i].cookie;
        }
        ++*batches;
    } while (r == 0 && *batches < 100);
    return r;
}

/* Resolves `path` from `root` as UDC_WALK_MISS says: udc_walk, and for a miss udc_resolve of
 * the component, whose answer decides it (NEGATIVE ends the path, POSITIVE goes on from that
 * inode with the rest of the path). Returns UDC_WALK_FOUND (and sets *ino), another walk end,
 * or a -errno; -1 if it has not ended after more walks than the path has components (a walk
 * that misses the same component again and again). */
static int walk_resolving(udc_cache *c, uint64_t root, const char *path, uint64_t *ino) {
    size_t len = strlen(path), rounds = len + 2;
    for (size_t round = 0; round < rounds; round++) {
        udc_walk_result w = {.size = sizeof w};
        int r = udc_walk(c, root, path, len, &w);
        if (r == UDC_WALK_FOUND)
            *ino = w.entry.ino;
        if (r != UDC_WALK_MISS)
            return r;
        const char *name = path + w.offset;
        size_t n = strcspn(name, "/");
        udc_entry e;
        r = udc_resolve(c, w.parent, name, n, &e);
        if (r != UDC_POSITIVE)
            return r == UDC_NEGATIVE ? (int)UDC_WALK_NEGATIVE : r;
        root = e.ino;
        path = name + n;
        len = strlen(path);
    }
    return -1;
}

static void test_readdir(void) {
    udc_config cfg;
    udc_config_init(&cfg);
    cfg.readdir_page_entries = 4;
    udc_cache *c = NULL;
    CHECK_EQ(udc_cache_new(&cfg, &c), 0);
    dir_state st = {0};
    udc_dirent d[16];
    size_t n = 99;

    /* Without a readdir callback. */
    CHECK_EQ(udc_readdir(c, UDC_ROOT_INO, 0, d, 16, &n), -ENOSYS);
    udc_ops ops = {.size = sizeof ops, .readdir = fs_readdir, .ctx = &st};
    CHECK_EQ(udc_set_ops(c, &ops), 0);

    /* Bad arguments: nothing read, *count untouched. */
    CHECK_EQ(udc_readdir(c, UDC_ROOT_INO, 0, NULL, 16, &n), -EINVAL);
    CHECK_EQ(udc_readdir(c, UDC_ROOT_INO, 0, d, 16, NULL), -EINVAL);
    CHECK_EQ(udc_readdir(c, UDC_ROOT_INO, 0, d, 0, &n), -EINVAL);
    /* A max no buffer can hold (over PTRDIFF_MAX bytes): refused before anything is built. */
    CHECK_EQ(udc_readdir(c, UDC_ROOT_INO, 0, d, SIZE_MAX, &n), -EINVAL);
    CHECK_EQ(udc_readdir(c, UDC_ROOT_INO, 0, d, PTRDIFF_MAX / sizeof d[0] + 1, &n), -EINVAL);
    CHECK_EQ(udc_readdir(c, 999, 0, d, 16, &n), -ESTALE);
    udc_entry f = ent(3, UDC_TYPE_REG, 0);
    CHECK_EQ(udc_add(c, UDC_ROOT_INO, S("file"), &f), 0);
    CHECK_EQ(udc_readdir(c, 3, 0, d, 16, &n), -ENOTDIR);
    CHECK_EQ(n, 99);
    CHECK_EQ(st.calls, 0);
    CHECK_EQ(udc_unlink(c, UDC_ROOT_INO, S("file")), 0);

    /* A listing in batches of at most 3. The callback is asked for the cache's page size (4),
     * whatever the reader asked for. */
    int seen[NDIR] = {0}, batches;
    CHECK_EQ(list(c, UDC_ROOT_INO, 0, 3, seen, &batches), 1);
    CHECK(batches >= 4);
    CHECK_EQ(st.max_seen, 4);
    for (int k = 0; k < NDIR; k++)
        CHECK_EQ(seen[k], 1);
    CHECK(st.fill_checks > 0);
    CHECK(st.enospc > 0);

    /* Resume at any cookie it gave; again from the cache (no new callback call). */
    int calls = st.calls;
    CHECK_EQ(udc_readdir(c, UDC_ROOT_INO, 7, d, 16, &n), 1);
    CHECK_EQ(n, 3);
    CHECK_EQ(strcmp(d[0].name, "f7"), 0);
    /* At the last cookie: the end, with nothing in it (RESULTS). */
    CHECK_EQ(udc_readdir(c, UDC_ROOT_INO, NDIR, d, 16, &n), 1);
    CHECK_EQ(n, 0);
    CHECK_EQ(st.calls, calls);
    udc_stats s = {.size = sizeof s};
    CHECK_EQ(udc_stats_get(c, &s), 0);
    CHECK(s.readdir_hits > 0);
    CHECK(s.readdir_misses > 0);

    /* The complete listing answers misses: no lookup callback is needed, no negative kept. */
    udc_entry out;
    CHECK_EQ(udc_resolve(c, UDC_ROOT_INO, S("not-listed"), &out), UDC_NEGATIVE);
    CHECK_EQ(udc_stats_get(c, &s), 0);
    CHECK_EQ(s.complete_dir_negatives, 1);
    /* A walk still misses the name (no negative entry): udc_resolve's answer ends it there. */
    uint64_t ino = 0;
    CHECK_EQ(walk_resolving(c, UDC_ROOT_INO, "not-listed/x", &ino), UDC_WALK_NEGATIVE);

    /* A cookie never issued: -EINVAL, *count untouched. */
    n = 99;
    CHECK_EQ(udc_readdir(c, UDC_ROOT_INO, 12345, d, 16, &n), -EINVAL);
    CHECK_EQ(n, 99);

    /* dir_changed: known and unknown verifiers; then the callback is asked again. */
    CHECK_EQ(udc_dir_changed(c, 999, 0), -ESTALE);
    CHECK_EQ(udc_dir_changed(c, 3, 0), -ENOTDIR); /* unlinked, still cached (not forgotten) */
    CHECK_EQ(udc_dir_changed(c, UDC_ROOT_INO, 0), 0);
    calls = st.calls;
    memset(seen, 0, sizeof seen);
    CHECK_EQ(list(c, UDC_ROOT_INO, 0, 16, seen, &batches), 1);
    for (int k = 0; k < NDIR; k++)
        CHECK_EQ(seen[k], 1);
    CHECK(st.calls > calls);
    CHECK_EQ(st.max_seen, 4); /* read with max 16: still pages of 4 */
    CHECK_EQ(udc_dir_changed(c, UDC_ROOT_INO, 2), 0);

    /* Broken or failing callbacks. */
    CHECK_EQ(udc_dir_changed(c, UDC_ROOT_INO, 0), 0);
    st.mode = 1; /* returns 0 without udc_fill_done */
    CHECK_EQ(udc_readdir(c, UDC_ROOT_INO, 0, d, 16, &n), -EIO);
    st.mode = 2;
    CHECK_EQ(udc_readdir(c, UDC_ROOT_INO, 0, d, 16, &n), -EACCES);
    st.mode = 4; /* the library's own errno, for a panic: from a callback, a broken contract */
    CHECK_EQ(udc_readdir(c, UDC_ROOT_INO, 0, d, 16, &n), -EIO);
    /* -ESTALE from the start of the directory: the directory is gone, not a bad cookie (the
     * cache asks at cookie 0 itself); from a cookie the cache does not hold, a bad cookie. */
    st.mode = 3;
    n = 99;
    CHECK_EQ(udc_readdir(c, UDC_ROOT_INO, 0, d, 16, &n), -ESTALE);
    CHECK_EQ(udc_readdir(c, UDC_ROOT_INO, 12345, d, 16, &n), -EINVAL);
    CHECK_EQ(n, 99);
    st.mode = 0;
    memset(seen, 0, sizeof seen);
    CHECK_EQ(list(c, UDC_ROOT_INO, 0, 16, seen, &batches), 1);
    for (int k = 0; k < NDIR; k++)
        CHECK_EQ(seen[k], 1);

    /* A refused read of a directory never listed keeps no listing: nothing answers for a name
     * there, so udc_invalidate still finds nothing. */
    udc_entry sub = ent(50, UDC_TYPE_DIR, 0);
    CHECK_EQ(udc_add(c, UDC_ROOT_INO, S("sub"), &sub), 0);
    for (uint64_t cookie = 0; cookie <= 12345; cookie += 12345) {
        n = 99;
        CHECK_EQ(udc_readdir(c, 50, cookie, d, 16, &n), -EIO);
        CHECK_EQ(n, 99);
        CHECK_EQ(udc_invalidate(c, 50, S("x")), -ENOENT);
    }
    udc_cache_destroy(c);
}

/* ---- peek: a lookup that marks nothing used ----------------------------------------------- */

/* udc_peek answers as udc_lookup does (a positive fills *out), but is no use of the entry: with
 * one bucket (so one LRU shard), udc_shrink takes a peeked negative first, the least recently
 * used, and gives a looked-up one a second chance. */
static void test_peek(void) {
    for (int used = 0; used <= 1; used++) {
        udc_config cfg;
        udc_config_init(&cfg);
        cfg.buckets = 1;
        udc_cache *c = NULL;
        CHECK_EQ(udc_cache_new(&cfg, &c), 0);
        udc_entry f = ent(7, UDC_TYPE_REG, 9), out = {0};
        CHECK_EQ(udc_add(c, UDC_ROOT_INO, S("file"), &f), 0);
        CHECK_EQ(udc_peek(c, UDC_ROOT_INO, S("file"), &out), UDC_POSITIVE);
        CHECK(out.ino == 7 && out.fs_data == 9);
        CHECK_EQ(udc_peek(c, UDC_ROOT_INO, S("none"), &out), UDC_MISS);
        CHECK_EQ(udc_peek(c, 7, S("x"), &out), -ENOTDIR);
        CHECK_EQ(udc_add_negative(c, UDC_ROOT_INO, S("old")), 0);
        CHECK_EQ(udc_add_negative(c, UDC_ROOT_INO, S("new")), 0);
        int (*search)(udc_cache *, uint64_t, const char *, size_t, udc_entry *) =
            used ? udc_lookup : udc_peek;
        CHECK_EQ(search(c, UDC_ROOT_INO, S("old"), &out), UDC_NEGATIVE);
        CHECK_EQ(udc_shrink(c, 1), 1); /* negatives first */
        CHECK_EQ(udc_peek(c, UDC_ROOT_INO, S("old"), &out), used ? UDC_NEGATIVE : UDC_MISS);
        CHECK_EQ(udc_peek(c, UDC_ROOT_INO, S("new"), &out), used ? UDC_MISS : UDC_NEGATIVE);
        udc_cache_destroy(c);
    }
}

/* ---- invalidate, shrink, stats ------------------------------------------------------------ */

static void test_invalidate_shrink_stats(void) {
    udc_cache *c = new_cache(UDC_UNLINK_NEGATIVE);
    udc_entry d = ent(2, UDC_TYPE_DIR, 0), sub = ent(3, UDC_TYPE_DIR, 0);
    udc_entry f = ent(4, UDC_TYPE_REG, 0);
    CHECK_EQ(udc_add(c, UDC_ROOT_INO, S("d"), &d), 0);
    CHECK_EQ(udc_add(c, 2, S("sub"), &sub), 0);
    CHECK_EQ(udc_add(c, 3, S("f"), &f), 0);
    CHECK_EQ(udc_add_negative(c, 3, S("n")), 0);

    counts before = count_of(c);
    CHECK_EQ(udc_invalidate(c, UDC_ROOT_INO, S("nothing")), -ENOENT);
    CHECK_EQ(udc_invalidate(c, 4, S("x")), -ENOTDIR);
    CHECK(same(before, count_of(c)));
    CHECK_EQ(udc_invalidate(c, UDC_ROOT_INO, S("d")), 0); /* the subtree goes */
    CHECK_EQ(look(c, UDC_ROOT_INO, "d", NULL), UDC_MISS);
    CHECK_EQ(look(c, 2, "sub", NULL), UDC_MISS);
    CHECK_EQ(look(c, 3, "f", NULL), UDC_MISS);
    CHECK_EQ(look(c, 3, "n", NULL), UDC_MISS);
    CHECK_EQ(count_of(c).inodes, before.inodes); /* inodes stay until forget */

    for (int i = 0; i < 20; i++) {
        char name[16];
        int n = snprintf(name, sizeof name, "neg%d", i);
        CHECK_EQ(udc_add_negative(c, UDC_ROOT_INO, name, (size_t)n), 0);
    }
    uint64_t dentries = count_of(c).dentries;
    CHECK(dentries > 0);
    CHECK_EQ(udc_shrink(c, 0), 0);
    int shrunk = udc_shrink(c, 5);
    CHECK_EQ(shrunk, 5);
    CHECK_EQ(count_of(c).dentries, dentries - 5);
    CHECK_EQ(udc_shrink(c, SIZE_MAX), (int)(dentries - 5)); /* everything left */
    CHECK_EQ(count_of(c).dentries, 0);

    /* stats: NULL, too small, then the text form. */
    udc_stats s = {.size = sizeof s - 1, .nr_dentry = 77};
    CHECK_EQ(udc_stats_get(c, NULL), -EINVAL);
    CHECK_EQ(udc_stats_get(c, &s), -EINVAL);
    CHECK_EQ(s.nr_dentry, 77);
    CHECK_EQ(udc_add_negative(c, UDC_ROOT_INO, S("one")), 0);
    s.size = sizeof s;
    CHECK_EQ(udc_stats_get(c, &s), 0);
    CHECK_EQ(s.size, sizeof s);
    CHECK_EQ(s.nr_dentry, 1);
    CHECK_EQ(s.nr_negative, 1);

    int len = udc_stats_format(c, NULL, 0);
    CHECK(len > 0);
    CHECK_EQ(udc_stats_format(c, NULL, 10), -EINVAL);
    char *text = malloc((size_t)len + 1);
    CHECK_EQ(udc_stats_format(c, text, (size_t)len + 1), len);
    CHECK_EQ(strlen(text), (size_t)len);
    long f6[6];
    CHECK_EQ(sscanf(text, "%ld %ld %ld %ld %ld %ld", &f6[0], &f6[1], &f6[2], &f6[3], &f6[4],
                    &f6[5]), 6);
    CHECK_EQ(f6[0], 1);
    CHECK_EQ(f6[4], 1);
    CHECK_EQ(f6[5], (long)s.nr_buckets);
    CHECK(strstr(text, "\nnr_inodes 4\n") != NULL);
    char small[8] = "abc";
    CHECK_EQ(udc_stats_format(c, small, SIZE_MAX), -EINVAL); /* over PTRDIFF_MAX: untouched */
    CHECK_EQ(strcmp(small, "abc"), 0);
    CHECK_EQ(udc_stats_format(c, small, sizeof small), len); /* truncated, NUL-terminated */
    CHECK_EQ(strlen(small), sizeof small - 1);
    CHECK_EQ(memcmp(small, text, sizeof small - 1), 0);
    free(text);
    udc_cache_destroy(c);
}

/* ---- the RESULTS table of the header: every non-error result, in one place --------------------- */

static int count_visit(void *ctx, const char *name, size_t len, const udc_entry *e) {
    (void)name, (void)len, (void)e;
    (*(int *)ctx)++;
    return 0;
}

static void test_results_table(void) {
    CHECK_EQ(UDC_MISS, 0);
    CHECK_EQ(UDC_POSITIVE, 1);
    CHECK_EQ(UDC_NEGATIVE, 2);
    CHECK_EQ(UDC_WALK_MISS, 0);
    CHECK_EQ(UDC_WALK_FOUND, 1);
    CHECK_EQ(UDC_WALK_NEGATIVE, 2);
    CHECK_EQ(UDC_WALK_SYMLINK, 3);
    CHECK_EQ(UDC_WALK_NOTDIR, 4);
    CHECK_EQ(UDC_WALK_DENIED, 5);
    CHECK_EQ(UDC_ACCESS_ALLOWED, 1);
    CHECK_EQ(UDC_ACCESS_DENIED, 2);

    udc_cache *c = new_cache(UDC_UNLINK_NEGATIVE);
    udc_entry d = ent(2, UDC_TYPE_DIR, 0), f = ent(3, UDC_TYPE_REG, 0), out;
    CHECK_EQ(udc_add(c, UDC_ROOT_INO, S("d"), &d), 0); /* every other int function: 0 */
    CHECK_EQ(udc_add(c, 2, S("f"), &f), 0);
    CHECK_EQ(udc_add_negative(c, 2, S("n")), 0);
    CHECK_EQ(udc_lookup(c, 2, S("f"), &out), UDC_POSITIVE);
    CHECK_EQ(udc_lookup(c, 2, S("n"), &out), UDC_NEGATIVE);
    CHECK_EQ(udc_lookup(c, 2, S("x"), &out), UDC_MISS);
    CHECK_EQ(udc_peek(c, 2, S("x"), &out), UDC_MISS);
    udc_walk_result w = {.size = sizeof w};
    CHECK_EQ(udc_walk(c, UDC_ROOT_INO, S("d/f"), &w), UDC_WALK_FOUND);
    CHECK_EQ(w.kind, UDC_WALK_FOUND); /* the same kind, in out->kind too */
    CHECK_EQ(udc_walk(c, UDC_ROOT_INO, S("d/x"), &w), UDC_WALK_MISS);
    CHECK_EQ(w.kind, UDC_WALK_MISS);
    int visited = 0;
    CHECK_EQ(udc_children(c, 2, count_visit, &visited), 1);
    CHECK_EQ(visited, 1);
    CHECK(udc_stats_format(c, NULL, 0) > 0);
    const udc_cred bob = {.size = sizeof bob, .uid = 1001, .gid = 1001};
    CHECK_EQ(udc_access(c, 3, &bob, UDC_MAY_READ), 0); /* no callback: every right */
    uint64_t stamp;
    CHECK_EQ(udc_access_stamp(c, 3, &stamp), 0);
    CHECK_EQ(udc_store_access(c, 3, &bob, UDC_MAY_READ, stamp), 1);
    CHECK_EQ(udc_cached_access(c, 3, &bob, UDC_MAY_READ), UDC_ACCESS_ALLOWED);
    CHECK_EQ(udc_cached_access(c, 3, &bob, UDC_MAY_WRITE), UDC_ACCESS_DENIED);
    CHECK_EQ(udc_acl_changed(c, 3), 0);
    CHECK_EQ(udc_cached_access(c, 3, &bob, UDC_MAY_READ), UDC_MISS);
    CHECK_EQ(udc_store_access(c, 3, &bob, UDC_MAY_READ, stamp), 0); /* revoked since */
    CHECK_EQ(udc_shrink(c, 1), 1);
    udc_cache_destroy(c);
}

/* ---- shrink after a flood; negative admission ---------------------------------------------- */

static udc_cache *cache_with_buckets(size_t buckets) {
    udc_config cfg;
    udc_config_init(&cfg);
    cfg.expected_entries = 1024;
    cfg.buckets = buckets;
    udc_cache *c = NULL;
    CHECK_EQ(udc_cache_new(&cfg, &c), 0);
    return c;
}

static void add_negatives(udc_cache *c, uint64_t dir, const char *prefix, int n) {
    for (int i = 0; i < n; i++) {
        char name[32];
        int len = snprintf(name, sizeof name, "%s%d", prefix, i);
        CHECK_EQ(udc_add_negative(c, dir, name, (size_t)len), 0);
    }
}

/* Directory 2 with 20 files and `looked_up` negatives a lookup hit, directory 3 flooded with
 * `flood` misses: udc_shrink of every negative evicts exactly the negatives, and says so
 * (spending a looked-up negative's second chance lets the run rule evict around it: those
 * evictions are the shrink's, counted, and no positive goes for them). */
static void shrink_after_a_flood(size_t buckets, int looked_up, int flood) {
    udc_cache *c = cache_with_buckets(buckets);
    udc_entry d2 = ent(2, UDC_TYPE_DIR, 0), d3 = ent(3, UDC_TYPE_DIR, 0);
    CHECK_EQ(udc_add(c, UDC_ROOT_INO, S("d2"), &d2), 0);
    CHECK_EQ(udc_add(c, UDC_ROOT_INO, S("d3"), &d3), 0);
    for (int i = 0; i < 20; i++) {
        char name[16];
        int len = snprintf(name, sizeof name, "file%d", i);
        udc_entry f = ent(10 + (uint64_t)i, UDC_TYPE_REG, 0);
        CHECK_EQ(udc_add(c, 2, name, (size_t)len, &f), 0);
    }
    for (int i = 0; i < looked_up; i++) {
        char name[16];
        snprintf(name, sizeof name, "miss%d", i);
        CHECK_EQ(udc_add_negative(c, 2, name, strlen(name)), 0);
        CHECK_EQ(look(c, 2, name, NULL), UDC_NEGATIVE);
    }
    add_negatives(c, 3, "flood", flood);
    counts before = count_of(c);
    CHECK(before.negatives > 0);
    CHECK_EQ(udc_shrink(c, (size_t)before.negatives), (int)before.negatives);
    counts after = count_of(c);
    CHECK_EQ(after.dentries, before.dentries - before.negatives);
    CHECK_EQ(after.negatives, 0);
    for (int i = 0; i < 20; i++) {
        char name[16];
        snprintf(name, sizeof name, "file%d", i);
        CHECK_EQ(look(c, 2, name, NULL), UDC_POSITIVE);
    }
    udc_cache_destroy(c);
}

static int admit_lookup(void *ctx, uint64_t parent, const char *name, size_t len,
                        udc_entry *out) {
    (void)parent, (void)name, (void)len, (void)out;
    (*(int *)ctx)++;
    return 0; /* nothing exists */
}

/* The per-bucket numbers of NEGATIVE ENTRIES, in a cache of one bucket: a flood settles at 3;
 * reused negatives are kept up to the cap of 6; after a flood a new negative, whether from
 * udc_add_negative, udc_unlink or a udc_resolve miss, is dropped the first time it is filed
 * (the call still succeeds) and kept the second. */
static void test_negative_admission(void) {
    udc_cache *c = cache_with_buckets(1);
    add_negatives(c, UDC_ROOT_INO, "flood", 100);
    CHECK_EQ(count_of(c).negatives, 3);

    CHECK_EQ(udc_add_negative(c, UDC_ROOT_INO, S("new")), 0);
    CHECK_EQ(look(c, UDC_ROOT_INO, "new", NULL), UDC_MISS); /* dropped */
    CHECK_EQ(udc_add_negative(c, UDC_ROOT_INO, S("new")), 0);
    CHECK_EQ(look(c, UDC_ROOT_INO, "new", NULL), UDC_NEGATIVE); /* kept */

    udc_entry f = ent(5, UDC_TYPE_REG, 0);
    add_negatives(c, UDC_ROOT_INO, "more", 100);
    CHECK_EQ(udc_add(c, UDC_ROOT_INO, S("gone"), &f), 0);
    CHECK_EQ(udc_unlink(c, UDC_ROOT_INO, S("gone")), 0);
    CHECK_EQ(look(c, UDC_ROOT_INO, "gone", NULL), UDC_MISS); /* dropped */
    CHECK_EQ(udc_add_negative(c, UDC_ROOT_INO, S("gone")), 0);
    CHECK_EQ(look(c, UDC_ROOT_INO, "gone", NULL), UDC_NEGATIVE); /* kept */

    int calls = 0;
    udc_ops ops = {.size = sizeof ops, .lookup = admit_lookup, .ctx = &calls};
    CHECK_EQ(udc_set_ops(c, &ops), 0);
    udc_entry out;
    add_negatives(c, UDC_ROOT_INO, "again", 100);
    CHECK_EQ(udc_resolve(c, UDC_ROOT_INO, S("absent"), &out), UDC_NEGATIVE);
    CHECK_EQ(look(c, UDC_ROOT_INO, "absent", NULL), UDC_MISS); /* dropped */
    CHECK_EQ(udc_resolve(c, UDC_ROOT_INO, S("absent"), &out), UDC_NEGATIVE);
    CHECK_EQ(look(c, UDC_ROOT_INO, "absent", NULL), UDC_NEGATIVE); /* kept */
    CHECK_EQ(udc_resolve(c, UDC_ROOT_INO, S("absent"), &out), UDC_NEGATIVE);
    CHECK_EQ(calls, 2); /* the third answered from the cache */
    udc_cache_destroy(c);

    /* Negatives a lookup hits are kept up to the cap (6), not 3. */
    c = cache_with_buckets(1);
    for (int i = 0; i < 6; i++) {
        char name[16];
        snprintf(name, sizeof name, "used%d", i);
        CHECK_EQ(udc_add_negative(c, UDC_ROOT_INO, name, strlen(name)), 0);
        CHECK_EQ(look(c, UDC_ROOT_INO, name, NULL), UDC_NEGATIVE);
    }
    CHECK_EQ(count_of(c).negatives, 6);
    udc_cache_destroy(c);
}

static void test_shrink_after_a_flood(void) {
    shrink_after_a_flood(16, 1, 1000);
    shrink_after_a_flood(64, 5, 5000);
    shrink_after_a_flood(16, 0, 1000);
}

/* ---- children ---------------------------------------------------------------------------- */

typedef struct {
    int calls, stop_at, reentry_ok;
    uint64_t ino_sum;
    udc_cache *cache;
} child_state;

static int visit_child(void *ctx, const char *name, size_t len, const udc_entry *e) {
    child_state *st = ctx;
    st->calls++;
    st->ino_sum += e->ino;
    udc_entry out; /* a visitor may call the library */
    if (udc_lookup(st->cache, UDC_ROOT_INO, name, len, &out) == UDC_POSITIVE && out.ino == e->ino)
        st->reentry_ok++;
    return st->calls == st->stop_at;
}

static void test_children(void) {
    udc_cache *c = new_cache(UDC_UNLINK_NEGATIVE);
    for (uint64_t i = 0; i < 5; i++) {
        char name[8];
        int n = snprintf(name, sizeof name, "c%d", (int)i);
        udc_entry e = ent(10 + i, UDC_TYPE_REG, 0);
        CHECK_EQ(udc_add(c, UDC_ROOT_INO, name, (size_t)n, &e), 0);
    }
    for (int i = 0; i < 100; i++) { /* negatives are not children */
        char name[16];
        int n = snprintf(name, sizeof name, "miss%d", i);
        CHECK_EQ(udc_add_negative(c, UDC_ROOT_INO, name, (size_t)n), 0);
    }
    child_state st = {.cache = c};
    CHECK_EQ(udc_children(c, UDC_ROOT_INO, NULL, NULL), 5); /* count only */
    CHECK_EQ(udc_children(c, UDC_ROOT_INO, visit_child, &st), 5);
    CHECK_EQ(st.calls, 5);
    CHECK_EQ(st.ino_sum, 10 + 11 + 12 + 13 + 14);
    CHECK_EQ(st.reentry_ok, 5);
    st.calls = 0;
    st.stop_at = 2;
    CHECK_EQ(udc_children(c, UDC_ROOT_INO, visit_child, &st), 2); /* stopped by the visitor */
    CHECK_EQ(st.calls, 2);
    CHECK_EQ(udc_children(c, 999, NULL, NULL), -ESTALE);
    CHECK_EQ(udc_children(c, 10, NULL, NULL), -ENOTDIR);
    CHECK_EQ(udc_children(NULL, UDC_ROOT_INO, NULL, NULL), -EINVAL);
    udc_cache_destroy(c);
}

/* ---- regressions --------------------------------------------------------------------------- */

/* Negative entries made by udc_unlink (not only by udc_add_negative) under a directory go with
 * udc_invalidate and the last udc_forget of that directory, so a reused directory inode number
 * does not answer "does not exist" for a name that may exist. (Found by this test; fixed in the
 * udcache crate.) */
static void test_unlink_negatives_go_with_their_directory(void) {
    udc_cache *c = new_cache(UDC_UNLINK_NEGATIVE);
    udc_entry d = ent(2, UDC_TYPE_DIR, 0), f = ent(3, UDC_TYPE_REG, 0);
    CHECK_EQ(udc_add(c, UDC_ROOT_INO, S("d"), &d), 0);
    CHECK_EQ(udc_add(c, 2, S("f"), &f), 0);
    CHECK_EQ(udc_unlink(c, 2, S("f")), 0);
    CHECK_EQ(look(c, 2, "f", NULL), UDC_NEGATIVE);
    CHECK_EQ(udc_invalidate(c, UDC_ROOT_INO, S("d")), 0);
    CHECK_EQ(look(c, 2, "f", NULL), UDC_MISS);
    CHECK_EQ(udc_forget(c, 2, 1), 0); /* the directory's inode number may now be reused */
    CHECK_EQ(udc_add(c, UDC_ROOT_INO, S("other"), &d), 0);
    CHECK_EQ(look(c, 2, "f", NULL), UDC_MISS);
    udc_cache_destroy(c);
}

/* ---- revalidation and the access cache ---------------------------------------------------- */

/* The revalidate callback's behaviour, set by the test before each step. */
enum { RV_VALID, RV_INVALID, RV_BLOCK_THEN_VALID, RV_GARBAGE };

typedef struct {
    int mode;             /* RV_* */
    uint64_t ttl;         /* *ttl_ns on a VALID answer (UDC_TTL_CONFIGURED: left alone) */
    int reval_calls, reval_blocking, lookup_calls, access_calls;
    int ttl_preset_ok;    /* revalidate calls that found *ttl_ns at UDC_TTL_CONFIGURED */
    udc_cached last;      /* what the last revalidate call was told */
    int alice_rights;     /* what the access callback grants uid 1000 on inodes other than 1 */
    int access_reply;     /* if non-zero: returned by the access callback as is */
    int groups_seen;      /* the groups of the last access call, summed */
} rv_state;

static int rv_revalidate(void *ctx, uint64_t parent, const char *name, size_t len,
                         const udc_cached *cached, int may_block, uint64_t *ttl_ns) {
    rv_state *fs = ctx;
    (void)parent, (void)name, (void)len;
    fs->reval_calls++;
    fs->reval_blocking += may_block != 0;
    fs->ttl_preset_ok += *ttl_ns == UDC_TTL_CONFIGURED && cached->size >= sizeof *cached;
    fs->last = *cached;
    switch (fs->mode) {
    case RV_INVALID:
        return UDC_REVAL_INVALID;
    case RV_GARBAGE:
        return 77; /* anything else is INVALID */
    case RV_BLOCK_THEN_VALID:
        if (!may_block)
            return UDC_REVAL_NEEDS_BLOCK;
        /* fall through */
    default:
        if (fs->ttl != UDC_TTL_CONFIGURED)
            *ttl_ns = fs->ttl;
        return UDC_REVAL_VALID;
    }
}

/* Directory "d" (2) with "f" (3) in it; anything else does not exist. */
static int rv_lookup(void *ctx, uint64_t parent, const char *name, size_t len, udc_entry *out) {
    rv_state *fs = ctx;
    fs->lookup_calls++;
    if (parent == UDC_ROOT_INO && len == 1 && name[0] == 'd') {
        *out = ent(2, UDC_TYPE_DIR, 0);
        return 1;
    }
    if (parent == 2 && len == 1 && name[0] == 'f') {
        *out = ent(3, UDC_TYPE_REG, 0);
        return 1;
    }
    return 0;
}

static int rv_access(void *ctx, uint64_t ino, const udc_cred *cred) {
    rv_state *fs = ctx;
    fs->access_calls++;
    fs->groups_seen = 0;
    for (size_t i = 0; i < cred->ngroups; i++)
        fs->groups_seen += (int)cred->groups[i];
    if (fs->access_reply)
        return fs->access_reply;
    if (cred->uid == 0 || ino == UDC_ROOT_INO)
        return UDC_MAY_READ | UDC_MAY_WRITE | UDC_MAY_EXEC;
    return cred->uid == 1000 ? fs->alice_rights : 0;
}

static udc_cache *rv_cache(rv_state *fs, uint64_t entry_ns, uint64_t negative_ns) {
    udc_config cfg;
    udc_config_init(&cfg);
    cfg.expected_entries = 256;
    cfg.entry_timeout_ns = entry_ns;
    cfg.negative_timeout_ns = negative_ns;
    udc_cache *c = NULL;
    CHECK_EQ(udc_cache_new(&cfg, &c), 0);
    udc_ops ops = {.size = sizeof ops, .lookup = rv_lookup, .revalidate = rv_revalidate,
                   .access = rv_access, .ctx = fs};
    CHECK_EQ(udc_set_ops(c, &ops), 0);
    udc_entry d = ent(2, UDC_TYPE_DIR, 0), f = ent(3, UDC_TYPE_REG, 0);
    CHECK_EQ(udc_add(c, UDC_ROOT_INO, S("d"), &d), 0);
    CHECK_EQ(udc_add(c, 2, S("f"), &f), 0);
    return c;
}

/* udc_walk_as's kind (or error) for `path`; *w filled. */
static int walk_as(udc_cache *c, const char *path, const udc_cred *cred, udc_walk_result *w) {
    *w = (udc_walk_result){.size = sizeof *w};
    return udc_walk_as(c, UDC_ROOT_INO, path, strlen(path), cred, w);
}

static int plain_walk(udc_cache *c, const char *path) {
    udc_walk_result w = {.size = sizeof w};
    return udc_walk(c, UDC_ROOT_INO, path, strlen(path), &w);
}

static void test_revalidate(void) {
    rv_state fs = {.mode = RV_VALID, .ttl = 0};
    udc_cache *c = rv_cache(&fs, UDC_TTL_FOREVER, UDC_TTL_FOREVER);
    udc_walk_result w;
    udc_entry out;
    udc_stats s = {.size = sizeof s};

    /* Trusted forever: no revalidation. */
    CHECK_EQ(walk_as(c, "d/f", NULL, &w), UDC_WALK_FOUND);
    CHECK_EQ(w.entry.ino, 3);
    CHECK_EQ(fs.reval_calls, 0);

    /* "As configured" is a revalidate answer, not a timeout to set. */
    CHECK_EQ(udc_set_entry_timeout(c, UDC_ROOT_INO, S("d"), UDC_TTL_CONFIGURED), -EINVAL);

    /* ttl 0: every use revalidates, lockless, and the callback says VALID with ttl 0 again. */
    CHECK_EQ(udc_set_entry_timeout(c, UDC_ROOT_INO, S("d"), 0), 0);
    CHECK_EQ(plain_walk(c, "d/f"), UDC_WALK_MISS); /* udc_walk trusts no expired name */
    CHECK_EQ(look(c, UDC_ROOT_INO, "d", NULL), UDC_MISS);
    for (int i = 1; i <= 3; i++) {
        CHECK_EQ(walk_as(c, "d/f", NULL, &w), UDC_WALK_FOUND);
        CHECK_EQ(w.entry.ino, 3);
        CHECK_EQ(fs.reval_calls, i);
    }
    CHECK_EQ(fs.reval_blocking, 0);
    CHECK_EQ(fs.ttl_preset_ok, 3);
    CHECK_EQ(fs.last.negative, 0);
    CHECK_EQ(fs.last.expired, 1);
    CHECK_EQ(fs.last.dir_changed, 0);
    CHECK_EQ(fs.last.entry.ino, 2);
    CHECK_EQ(fs.last.entry.type, UDC_TYPE_DIR);
    /* Left at UDC_TTL_CONFIGURED: the configured timeout (forever) from then on. */
    fs.ttl = UDC_TTL_CONFIGURED;
    CHECK_EQ(walk_as(c, "d/f", NULL, &w), UDC_WALK_FOUND);
    CHECK_EQ(walk_as(c, "d/f", NULL, &w), UDC_WALK_FOUND);
    CHECK_EQ(fs.reval_calls, 4);
    CHECK_EQ(plain_walk(c, "d/f"), UDC_WALK_FOUND);

    /* NEEDS_BLOCK: asked again with may_block 1 on this thread; VALID for ever then. */
    fs.mode = RV_BLOCK_THEN_VALID;
    fs.ttl = UDC_TTL_FOREVER;
    CHECK_EQ(udc_set_entry_timeout(c, 2, S("f"), 0), 0);
    CHECK_EQ(walk_as(c, "d/f", NULL, &w), UDC_WALK_FOUND);
    CHECK_EQ(fs.reval_calls, 6);
    CHECK_EQ(fs.reval_blocking, 1);
    CHECK_EQ(walk_as(c, "d/f", NULL, &w), UDC_WALK_FOUND);
    CHECK_EQ(fs.reval_calls, 6);
    CHECK_EQ(udc_stats_get(c, &s), 0);
    CHECK_EQ(s.fallback_needs_block, 1);
    CHECK_EQ(s.revalidations, 6);
    /* A blocking answer of ttl 0 ("revalidate at every use") serves the walk that asked, and
     * only it: each walk asks once more (twice: without blocking, then blocking). */
    fs.ttl = 0;
    CHECK_EQ(udc_set_entry_timeout(c, 2, S("f"), 0), 0);
    CHECK_EQ(walk_as(c, "d/f", NULL, &w), UDC_WALK_FOUND);
    CHECK_EQ(w.entry.ino, 3);
    CHECK_EQ(fs.reval_calls, 8);
    CHECK_EQ(fs.reval_blocking, 2);
    CHECK_EQ(walk_as(c, "d/f", NULL, &w), UDC_WALK_FOUND);
    CHECK_EQ(fs.reval_calls, 10);
    CHECK_EQ(fs.reval_blocking, 3);
    CHECK_EQ(udc_resolve(c, 2, S("f"), &out), UDC_POSITIVE); /* udc_resolve revalidates and answers */
    CHECK_EQ(out.ino, 3);
    CHECK_EQ(udc_forget(c, 3, 1), 0);

    /* INVALID (and any other answer): the name is dropped; the walk reports the miss. */
    fs.mode = RV_INVALID;
    int lookups = fs.lookup_calls;
    CHECK_EQ(walk_as(c, "d/f", NULL, &w), UDC_WALK_MISS);
    CHECK_EQ(w.parent, 2);
    CHECK_EQ(w.offset, 2);
    CHECK_EQ(look(c, 2, "f", NULL), UDC_MISS);
    CHECK_EQ(udc_resolve(c, 2, S("f"), &out), UDC_POSITIVE); /* looked up again */
    CHECK_EQ(fs.lookup_calls, lookups + 1);
    fs.mode = RV_GARBAGE;
    CHECK_EQ(udc_set_entry_timeout(c, 2, S("f"), 0), 0);
    CHECK_EQ(walk_as(c, "d/f", NULL, &w), UDC_WALK_MISS);
    CHECK_EQ(look(c, 2, "f", NULL), UDC_MISS);
    CHECK_EQ(udc_resolve(c, 2, S("f"), &out), UDC_POSITIVE);
    forget_checking_lookups(c, 3, 3); /* add, and three resolves, less one forget */
    CHECK_EQ(udc_resolve(c, 2, S("f"), &out), UDC_POSITIVE);

    /* A directory change makes its negatives untrusted: never returned without asking. */
    fs.mode = RV_VALID;
    fs.ttl = UDC_TTL_CONFIGURED;
    CHECK_EQ(udc_add_negative(c, 2, S("neg")), 0);
    int calls = fs.reval_calls;
    CHECK_EQ(walk_as(c, "d/neg", NULL, &w), UDC_WALK_NEGATIVE);
    CHECK_EQ(fs.reval_calls, calls);
    CHECK_EQ(udc_dir_changed(c, 2, 0), 0);
    CHECK_EQ(look(c, 2, "neg", NULL), UDC_MISS);
    CHECK_EQ(plain_walk(c, "d/neg"), UDC_WALK_MISS);
    CHECK_EQ(walk_as(c, "d/neg", NULL, &w), UDC_WALK_NEGATIVE); /* asked: still absent */
    CHECK_EQ(fs.reval_calls, calls + 1);
    CHECK_EQ(fs.last.negative, 1);
    CHECK_EQ(fs.last.dir_changed, 1);
    CHECK_EQ(fs.last.expired, 0);
    CHECK_EQ(fs.last.entry.ino, 0);
    CHECK_EQ(look(c, 2, "neg", NULL), UDC_NEGATIVE); /* refreshed */
    CHECK_EQ(udc_dir_changed(c, 2, 0), 0);
    fs.mode = RV_INVALID; /* through udc_resolve: revalidated blocking, dropped, looked up */
    lookups = fs.lookup_calls;
    int blocking = fs.reval_blocking;
    CHECK_EQ(udc_resolve(c, 2, S("neg"), &out), UDC_NEGATIVE);
    CHECK_EQ(fs.reval_blocking, blocking + 1);
    CHECK_EQ(fs.lookup_calls, lookups + 1);
    CHECK_EQ(udc_stats_get(c, &s), 0);
    CHECK(s.fallback_expired >= 2); /* the INVALID answers' walks */

    /* udc_set_entry_timeout's refusals change nothing. */
    size_t n;
    const bad_name *b = bad_names(&n);
    for (size_t i = 0; i < n; i++)
        CHECK_EQ(udc_set_entry_timeout(c, 2, b[i].name, b[i].len, 0), b[i].err);
    CHECK_EQ(udc_set_entry_timeout(c, 999, S("f"), 0), -ESTALE);
    CHECK_EQ(udc_set_entry_timeout(c, 3, S("f"), 0), -ENOTDIR);
    CHECK_EQ(udc_set_entry_timeout(c, 2, S("nothing"), 0), -ENOENT);
    CHECK_EQ(look(c, 2, "f", NULL), UDC_POSITIVE); /* still trusted */
    CHECK_EQ(look(c, 2, "nothing", NULL), UDC_MISS);
    udc_cache_destroy(c);

    /* Configured timeouts of 0 with no revalidate callback (the default: block, then compare a
     * fresh lookup): udc_resolve and udc_walk_as both ask once per use. */
    udc_config cfg;
    udc_config_init(&cfg);
    CHECK_EQ(cfg.entry_timeout_ns, UINT64_MAX);
    CHECK_EQ(cfg.negative_timeout_ns, UINT64_MAX);
    CHECK_EQ(cfg.access_timeout_ns, UINT64_MAX);
    cfg.entry_timeout_ns = 0;
    CHECK_EQ(udc_cache_new(&cfg, &c), 0);
    rv_state plain = {0};
    udc_ops ops = {.size = sizeof ops, .lookup = rv_lookup, .ctx = &plain};
    CHECK_EQ(udc_set_ops(c, &ops), 0);
    CHECK_EQ(udc_resolve(c, UDC_ROOT_INO, S("d"), &out), UDC_POSITIVE);
    CHECK_EQ(udc_resolve(c, UDC_ROOT_INO, S("d"), &out), UDC_POSITIVE); /* revalidated */
    CHECK_EQ(plain.lookup_calls, 2);
    CHECK_EQ(walk_as(c, "d", NULL, &w), UDC_WALK_FOUND);
    CHECK_EQ(w.entry.ino, 2);
    CHECK_EQ(plain.lookup_calls, 3);
    CHECK_EQ(walk_as(c, "d", NULL, &w), UDC_WALK_FOUND);
    CHECK_EQ(plain.lookup_calls, 4);
    CHECK_EQ(udc_stats_get(c, &s), 0);
    CHECK(s.revalidations >= 2 && s.fallback_needs_block >= 2);
    udc_cache_destroy(c);
}

static void test_access(void) {
    rv_state fs = {.mode = RV_VALID, .ttl = UDC_TTL_CONFIGURED, .alice_rights = 5};
    udc_cache *c = rv_cache(&fs, UDC_TTL_FOREVER, UDC_TTL_FOREVER);
    const uint32_t groups[] = {4, 27};
    const udc_cred alice = {.size = sizeof alice, .uid = 1000, .gid = 1000, .groups = groups,
                            .ngroups = 2};
    const udc_cred bob = {.size = sizeof bob, .uid = 1001, .gid = 1001};
    udc_attr a = {.mode = 040755, .nlink = 2, .uid = 1000, .gid = 1000};
    CHECK_EQ(udc_setattr(c, 2, &a, UINT64_MAX), 0);

    /* A miss asks the callback (with the caller's groups); the answer is kept. */
    CHECK_EQ(udc_cached_access(c, 2, &alice, UDC_MAY_READ), UDC_MISS);
    CHECK_EQ(udc_access(c, 2, &alice, UDC_MAY_READ), 0);
    CHECK_EQ(fs.access_calls, 1);
    CHECK_EQ(fs.groups_seen, 31);
    CHECK_EQ(udc_access(c, 2, &alice, UDC_MAY_WRITE), -EACCES);
    CHECK_EQ(udc_access(c, 2, &alice, UDC_MAY_READ | UDC_MAY_EXEC), 0);
    CHECK_EQ(udc_access(c, 2, &alice, 0), 0); /* F_OK */
    CHECK_EQ(fs.access_calls, 1);
    CHECK_EQ(udc_cached_access(c, 2, &alice, UDC_MAY_READ), UDC_ACCESS_ALLOWED);
    CHECK_EQ(udc_cached_access(c, 2, &alice, UDC_MAY_WRITE | UDC_MAY_READ), UDC_ACCESS_DENIED);
    CHECK_EQ(udc_cached_access(c, 2, &bob, UDC_MAY_READ), UDC_MISS);
    udc_cred alice_fewer = alice; /* other groups: another credential */
    alice_fewer.ngroups = 1;
    CHECK_EQ(udc_cached_access(c, 2, &alice_fewer, UDC_MAY_READ), UDC_MISS);

    /* A mode change revokes: the old answer is never returned after it. */
    fs.alice_rights = 0;
    a.size = 1; /* a size change alone revokes nothing */
    CHECK_EQ(udc_setattr(c, 2, &a, UINT64_MAX), 0);
    CHECK_EQ(udc_cached_access(c, 2, &alice, UDC_MAY_READ), UDC_ACCESS_ALLOWED);
    a.mode = 040700;
    CHECK_EQ(udc_setattr(c, 2, &a, UINT64_MAX), 0);
    CHECK_EQ(udc_cached_access(c, 2, &alice, UDC_MAY_READ), UDC_MISS);
    CHECK_EQ(udc_access(c, 2, &alice, UDC_MAY_READ), -EACCES);
    CHECK_EQ(fs.access_calls, 2);
    /* So does an ACL change. */
    fs.alice_rights = 7;
    CHECK_EQ(udc_acl_changed(c, 2), 0);
    CHECK_EQ(udc_cached_access(c, 2, &alice, UDC_MAY_READ), UDC_MISS);
    CHECK_EQ(udc_access(c, 2, &alice, UDC_MAY_WRITE), 0);
    CHECK_EQ(fs.access_calls, 3);

    /* udc_walk_as with a credential: DENIED where search is refused. */
    fs.alice_rights = UDC_MAY_READ | UDC_MAY_WRITE;
    CHECK_EQ(udc_acl_changed(c, 2), 0);
    udc_walk_result w;
    CHECK_EQ(walk_as(c, "d/f", &alice, &w), UDC_WALK_DENIED);
    CHECK_EQ(w.parent, 2);
    CHECK_EQ(w.offset, 2);
    CHECK_EQ(walk_as(c, "d", &alice, &w), UDC_WALK_FOUND); /* searching the root is allowed */
    CHECK_EQ(walk_as(c, "d/f", NULL, &w), UDC_WALK_FOUND); /* no credential: no checks */
    fs.alice_rights = UDC_MAY_EXEC;
    CHECK_EQ(udc_acl_changed(c, 2), 0);
    int calls = fs.access_calls;
    CHECK_EQ(walk_as(c, "d/f", &alice, &w), UDC_WALK_FOUND);
    CHECK_EQ(w.entry.ino, 3);
    CHECK_EQ(fs.access_calls, calls + 1);
    CHECK_EQ(walk_as(c, "d/f", &alice, &w), UDC_WALK_FOUND); /* lockless now */
    CHECK_EQ(fs.access_calls, calls + 1);
    udc_stats s = {.size = sizeof s};
    CHECK_EQ(udc_stats_get(c, &s), 0);
    CHECK(s.fallback_access >= 2);
    CHECK(s.access_hits >= 4);
    CHECK_EQ(s.access_calls, (uint64_t)fs.access_calls);
    char text[2048];
    int len = udc_stats_format(c, text, sizeof text);
    CHECK(len > 0 && (size_t)len < sizeof text);
    CHECK(strstr(text, "\nrevalidations ") != NULL);
    CHECK(strstr(text, "\nfallback_access ") != NULL);
    CHECK(strstr(text, "\naccess_calls ") != NULL);

    /* The stamp protocol: a result computed before a revocation is not stored. */
    uint64_t stamp = 0, stamp2 = 0;
    CHECK_EQ(udc_access_stamp(c, 3, &stamp), 0);
    CHECK_EQ(udc_store_access(c, 3, &bob, UDC_MAY_READ, stamp), 1);
    CHECK_EQ(udc_cached_access(c, 3, &bob, UDC_MAY_READ), UDC_ACCESS_ALLOWED);
    CHECK_EQ(udc_cached_access(c, 3, &bob, UDC_MAY_WRITE), UDC_ACCESS_DENIED);
    CHECK_EQ(udc_access_stamp(c, 3, &stamp2), 0);
    CHECK_EQ(udc_acl_changed(c, 3), 0);
    CHECK_EQ(udc_store_access(c, 3, &bob, 7, stamp2), 0); /* out of date: not filed */
    CHECK_EQ(udc_cached_access(c, 3, &bob, UDC_MAY_READ), UDC_MISS);
    CHECK_EQ(udc_store_access(c, 3, &bob, 7, stamp2 ^ (1ull << 40)), 0); /* made up: refused */
    CHECK_EQ(udc_store_access(c, 3, &bob, 7, 0), 0);
    CHECK_EQ(udc_cached_access(c, 3, &bob, UDC_MAY_READ), UDC_MISS);

    /* Callback errors: passed on, not cached; a reply above 7 is a broken contract. */
    fs.access_reply = -EPERM;
    CHECK_EQ(udc_access(c, 3, &alice, UDC_MAY_READ), -EPERM);
    fs.access_reply = 9;
    CHECK_EQ(udc_access(c, 3, &alice, UDC_MAY_READ), -EIO);
    fs.access_reply = -ENOTRECOVERABLE; /* the library's own errno: a broken contract */
    CHECK_EQ(udc_access(c, 3, &alice, UDC_MAY_READ), -EIO);
    CHECK_EQ(udc_cached_access(c, 3, &alice, UDC_MAY_READ), UDC_MISS);
    fs.access_reply = 0;

    /* Mask 0 (F_OK) asks only that the inode is cached: no callback, even with nothing cached
     * for the credential, and the same answer from udc_cached_access. */
    calls = fs.access_calls;
    const udc_cred carol = {.size = sizeof carol, .uid = 1002, .gid = 1002};
    CHECK_EQ(udc_cached_access(c, 3, &carol, UDC_MAY_READ), UDC_MISS);
    CHECK_EQ(udc_access(c, 3, &carol, 0), 0);
    CHECK_EQ(udc_cached_access(c, 3, &carol, 0), UDC_ACCESS_ALLOWED);
    CHECK_EQ(udc_access(c, 999, &carol, 0), -ESTALE);
    CHECK_EQ(udc_cached_access(c, 999, &carol, 0), -ESTALE);
    CHECK_EQ(udc_access(c, 3, NULL, 0), -EINVAL);
    CHECK_EQ(fs.access_calls, calls);
    CHECK_EQ(udc_cached_access(c, 3, &carol, UDC_MAY_READ), UDC_MISS);

    /* Bad input: an error, no callback call, nothing stored. */
    udc_cred bad = alice;
    bad.size = sizeof bad - 1;
    const udc_cred *bad_creds[4] = {NULL, &bad, NULL, NULL};
    udc_cred no_groups = alice, too_many = alice;
    no_groups.groups = NULL;
    too_many.ngroups = 65537;
    bad_creds[2] = &no_groups;
    bad_creds[3] = &too_many;
    for (int i = 0; i < 4; i++) {
        const udc_cred *bc = bad_creds[i];
        CHECK_EQ(udc_access(c, 3, bc, UDC_MAY_READ), -EINVAL);
        CHECK_EQ(udc_cached_access(c, 3, bc, UDC_MAY_READ), -EINVAL);
        CHECK_EQ(udc_store_access(c, 3, bc, UDC_MAY_READ, stamp2), -EINVAL);
        CHECK_EQ(walk_as(c, "d/f", bc == NULL ? &bad : bc, &w), -EINVAL);
    }
    for (uint32_t mask = 8; mask != 0; mask <<= 1) {
        CHECK_EQ(udc_access(c, 3, &alice, mask | UDC_MAY_READ), -EINVAL);
        CHECK_EQ(udc_cached_access(c, 3, &alice, mask), -EINVAL);
        CHECK_EQ(udc_store_access(c, 3, &alice, mask | 7, stamp2), -EINVAL);
    }
    CHECK_EQ(udc_access(c, 999, &alice, UDC_MAY_READ), -ESTALE);
    CHECK_EQ(udc_cached_access(c, 999, &alice, UDC_MAY_READ), -ESTALE);
    CHECK_EQ(udc_store_access(c, 999, &alice, 7, stamp2), -ESTALE);
    uint64_t kept = 12345;
    CHECK_EQ(udc_access_stamp(c, 999, &kept), -ESTALE);
    CHECK_EQ(kept, 12345);
    CHECK_EQ(udc_access_stamp(c, 3, NULL), -EINVAL);
    CHECK_EQ(udc_acl_changed(c, 999), -ESTALE);
    CHECK_EQ(fs.access_calls, calls);
    CHECK_EQ(udc_cached_access(c, 3, &alice, UDC_MAY_READ), UDC_MISS);
    /* udc_walk_as's other refusals. */
    w = (udc_walk_result){.size = sizeof w - 1};
    CHECK_EQ(udc_walk_as(c, UDC_ROOT_INO, S("d"), &alice, &w), -EINVAL);
    CHECK_EQ(udc_walk_as(c, UDC_ROOT_INO, S("d"), &alice, NULL), -EINVAL);
    w = (udc_walk_result){.size = sizeof w};
    CHECK_EQ(udc_walk_as(c, UDC_ROOT_INO, NULL, 3, &alice, &w), -EINVAL);
    CHECK_EQ(udc_walk_as(c, 999, S("d"), &alice, &w), -ESTALE);
    CHECK_EQ(udc_walk_as(c, UDC_ROOT_INO, "d\0f", 3, NULL, &w), -EINVAL);
    CHECK_EQ(udc_walk_as(c, UDC_ROOT_INO, long_name, 256, NULL, &w), -ENAMETOOLONG);
    CHECK_EQ(udc_walk_as(c, UDC_ROOT_INO, "d", SIZE_MAX, &alice, &w), -EINVAL);
    CHECK_EQ(fs.access_calls, calls);
    udc_cache_destroy(c);

    /* No access callback: every right for everyone, as the Rust trait's default. */
    c = new_cache(UDC_UNLINK_NEGATIVE);
    CHECK_EQ(udc_access(c, UDC_ROOT_INO, &bob, 7), 0);
    CHECK_EQ(udc_cached_access(c, UDC_ROOT_INO, &bob, 7), UDC_ACCESS_ALLOWED);
    udc_cache_destroy(c);
}

/* ---- destroy from inside a callback -------------------------------------------------------- */

typedef struct {
    udc_cache *cache;
    int calls;
} doom_state;

/* Destroys the cache it serves, then answers: file 7 exists. */
static int doom_lookup(void *ctx, uint64_t parent, const char *name, size_t len, udc_entry *out) {
    (void)parent, (void)name, (void)len;
    doom_state *st = ctx;
    st->calls++;
    udc_cache_destroy(st->cache);
    udc_cache_destroy(st->cache); /* a second destroy frees nothing */
    udc_stats s = {.size = sizeof s};
    CHECK_EQ(udc_stats_get(st->cache, &s), -EBADF); /* refused at once */
    *out = ent(7, UDC_TYPE_REG, 0);
    return 1;
}

/* Destroys the cache it serves, then lists one entry. */
static int doom_readdir(void *ctx, uint64_t dir, uint64_t cookie, size_t max, udc_fill *fill) {
    (void)dir, (void)max;
    doom_state *st = ctx;
    st->calls++;
    udc_cache_destroy(st->cache);
    if (cookie == 0)
        CHECK_EQ(udc_fill_add(fill, S("only"), 8, UDC_TYPE_REG, 1), 0);
    return udc_fill_done(fill, 1, 1);
}

/* Destroys the cache it serves, then grants every right. */
static int doom_access(void *ctx, uint64_t ino, const udc_cred *cred) {
    (void)ino, (void)cred;
    doom_state *st = ctx;
    st->calls++;
    udc_cache_destroy(st->cache);
    return UDC_MAY_READ | UDC_MAY_WRITE | UDC_MAY_EXEC;
}

/* Destroys the cache it serves when it may block, then says the name still holds. */
static int doom_revalidate(void *ctx, uint64_t parent, const char *name, size_t len,
                           const udc_cached *cached, int may_block, uint64_t *ttl_ns) {
    (void)parent, (void)name, (void)len, (void)cached, (void)ttl_ns;
    doom_state *st = ctx;
    if (!may_block)
        return UDC_REVAL_NEEDS_BLOCK;
    st->calls++;
    udc_cache_destroy(st->cache);
    return UDC_REVAL_VALID;
}

/* Destroys the cache at its first child, and goes on visiting the snapshot. */
static int doom_visit(void *ctx, const char *name, size_t len, const udc_entry *e) {
    (void)name, (void)len, (void)e;
    doom_state *st = ctx;
    if (st->calls++ == 0)
        udc_cache_destroy(st->cache);
    return 0;
}

/* A callback may destroy the cache whose call runs it: the handle is refused from then on,
 * and the call that ran the callback finishes on a cache freed only when it returns (ASan and
 * valgrind check that nothing is used after the free, and that nothing leaks). */
static void test_destroy_from_a_callback(void) {
    doom_state st = {0};
    udc_ops ops = {.size = sizeof ops, .lookup = doom_lookup, .readdir = doom_readdir,
                   .ctx = &st};
    udc_entry out;
    st.cache = new_cache(UDC_UNLINK_NEGATIVE);
    CHECK_EQ(udc_set_ops(st.cache, &ops), 0);
    CHECK_EQ(udc_resolve(st.cache, UDC_ROOT_INO, S("x"), &out), UDC_POSITIVE);
    CHECK_EQ(out.ino, 7);
    CHECK_EQ(udc_resolve(st.cache, UDC_ROOT_INO, S("x"), &out), -EBADF);

    st.cache = new_cache(UDC_UNLINK_NEGATIVE);
    CHECK_EQ(udc_set_ops(st.cache, &ops), 0);
    udc_dirent d[4];
    size_t n = 0;
    CHECK_EQ(udc_readdir(st.cache, UDC_ROOT_INO, 0, d, 4, &n), 1);
    CHECK_EQ(n, 1);
    CHECK_EQ(strcmp(d[0].name, "only"), 0);
    CHECK_EQ(udc_readdir(st.cache, UDC_ROOT_INO, 0, d, 4, &n), -EBADF);
    CHECK_EQ(st.calls, 2);

    /* The access callback, from udc_access and from udc_walk_as. */
    const udc_cred bob = {.size = sizeof bob, .uid = 1001, .gid = 1001};
    ops = (udc_ops){.size = sizeof ops, .access = doom_access, .ctx = &st};
    st.cache = new_cache(UDC_UNLINK_NEGATIVE);
    CHECK_EQ(udc_set_ops(st.cache, &ops), 0);
    CHECK_EQ(udc_access(st.cache, UDC_ROOT_INO, &bob, UDC_MAY_READ), 0);
    CHECK_EQ(udc_access(st.cache, UDC_ROOT_INO, &bob, UDC_MAY_READ), -EBADF);
    CHECK_EQ(st.calls, 3);
    udc_entry sub = ent(2, UDC_TYPE_DIR, 0), f = ent(3, UDC_TYPE_REG, 0);
    udc_walk_result w = {.size = sizeof w};
    st.cache = new_cache(UDC_UNLINK_NEGATIVE);
    CHECK_EQ(udc_set_ops(st.cache, &ops), 0);
    CHECK_EQ(udc_add(st.cache, UDC_ROOT_INO, S("sub"), &sub), 0);
    CHECK_EQ(udc_add(st.cache, 2, S("f"), &f), 0);
    CHECK_EQ(udc_walk_as(st.cache, UDC_ROOT_INO, S("sub/f"), &bob, &w), UDC_WALK_FOUND);
    CHECK_EQ(w.entry.ino, 3);
    CHECK_EQ(udc_walk_as(st.cache, UDC_ROOT_INO, S("sub/f"), &bob, &w), -EBADF);
    CHECK(st.calls >= 4); /* one call per directory searched; the first destroyed */
    st.calls = 4;

    /* The revalidate callback, from udc_resolve (a name whose timeout passed). */
    udc_config cfg;
    udc_config_init(&cfg);
    cfg.entry_timeout_ns = 0;
    ops = (udc_ops){.size = sizeof ops, .revalidate = doom_revalidate, .ctx = &st};
    CHECK_EQ(udc_cache_new(&cfg, &st.cache), 0);
    CHECK_EQ(udc_set_ops(st.cache, &ops), 0);
    CHECK_EQ(udc_add(st.cache, UDC_ROOT_INO, S("f"), &f), 0);
    CHECK_EQ(udc_resolve(st.cache, UDC_ROOT_INO, S("f"), &out), UDC_POSITIVE);
    CHECK_EQ(out.ino, 3);
    CHECK_EQ(st.calls, 5);

    /* udc_children's visitor: the snapshot is visited to its end. */
    st.cache = new_cache(UDC_UNLINK_NEGATIVE);
    CHECK_EQ(udc_add(st.cache, UDC_ROOT_INO, S("sub"), &sub), 0);
    CHECK_EQ(udc_add(st.cache, UDC_ROOT_INO, S("f"), &f), 0);
    st.calls = 0;
    CHECK_EQ(udc_children(st.cache, UDC_ROOT_INO, doom_visit, &st), 2);
    CHECK_EQ(st.calls, 2);
    CHECK_EQ(udc_children(st.cache, UDC_ROOT_INO, doom_visit, &st), -EBADF);

    /* Outside any callback, destroy frees at once, as before. */
    udc_cache *c = new_cache(UDC_UNLINK_NEGATIVE);
    udc_cache_destroy(c);
    CHECK_EQ(udc_resolve(c, UDC_ROOT_INO, S("x"), &out), -EBADF);
}

int main(void) {
    test_handles();
    test_bad_names();
    test_names();
    test_forget();
    test_walk();
    test_attr();
    test_resolve();
    test_readdir();
    test_peek();
    test_invalidate_shrink_stats();
    test_children();
    test_unlink_negatives_go_with_their_directory();
    test_revalidate();
    test_access();
    test_destroy_from_a_callback();
    test_shrink_after_a_flood();
    test_negative_admission();
    test_results_table();
    return check_summary("api");
}
