/* readdir_modified.c -- a directory of 100,000 entries kept by a C backend (the readdir
 * callback) changes under a listing: a modifier thread removes entries and creates new ones
 * and tells the cache (udc_dir_changed, with the directory's new verifier, or 0 for unknown)
 * while the main thread lists the directory with udc_readdir in small batches. Every entry
 * present for the whole listing must appear exactly once; no entry may appear twice; nothing
 * that never existed may appear; and every listing must reach the end.
 *
 *   readdir_modified [-n ENTRIES] [-b BATCH] [-p PASSES] [-c CHANGES]
 *
 * The first pass runs with no changes (every entry exactly once); the others with a modifier
 * making up to CHANGES changes each. Positions are stable: entry i has cookie i + 1, so the
 * backend can resume at any cookie it issued, as a real directory with stable offsets can. */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "check.h"
#include "udcache.h"

#define DIR_INO 2
#define INO(i) (1000 + (uint64_t)(i))

/* The backend's directory: slots in listing order; created ones are appended. */
typedef struct {
    pthread_mutex_t lock;
    unsigned char *present; /* present[i]: entry i exists */
    unsigned char *touched; /* removed or created during the current listing */
    unsigned char *existed; /* ever existed */
    size_t len, cap;        /* slots in use; allocated */
    uint64_t verifier;      /* bumped on every change */
    long fills;             /* callback calls */
} directory;

static directory dir;
static udc_cache *cache;
static atomic_bool modifying;
static long max_changes = 20000;

static int entry_name(char *buf, size_t i) { return snprintf(buf, 16, "e%07zu", i); }

static int fs_readdir(void *ctx, uint64_t ino, uint64_t cookie, size_t max, udc_fill *fill) {
    (void)ctx;
    if (ino != DIR_INO)
        return -ENOTDIR;
    pthread_mutex_lock(&dir.lock);
    dir.fills++;
    int ret = 0;
    if (cookie > dir.len) {
        ret = -EINVAL; /* never issued */
        goto out;
    }
    size_t i = (size_t)cookie, added = 0;
    for (; i < dir.len && added < max; i++) {
        if (!dir.present[i])
            continue;
        char name[16];
        int n = entry_name(name, i);
        int r = udc_fill_add(fill, name, (size_t)n, INO(i), i % 7 ? UDC_TYPE_REG : UDC_TYPE_DIR,
                             (uint64_t)i + 1);
        if (r != 0) {
            ret = r;
            goto out;
        }
        added++;
    }
    /* At the end if no present entry follows the last one added. */
    while (i < dir.len && !dir.present[i])
        i++;
    ret = udc_fill_done(fill, i >= dir.len, dir.verifier);
out:
    pthread_mutex_unlock(&dir.lock);
    return ret;
}

/* Removes a random present entry and creates a new one at the end, then tells the cache. */
static void *modify(void *arg) {
    rng r = {.state = (uint64_t)(uintptr_t)arg};
    long changes = 0;
    while (atomic_load(&modifying) && changes < max_changes) {
        pthread_mutex_lock(&dir.lock);
        size_t victim = (size_t)(rng_next(&r) % dir.len);
        if (dir.present[victim]) {
            dir.present[victim] = 0;
            dir.touched[victim] = 1;
        }
        if (dir.len < dir.cap) {
            dir.present[dir.len] = dir.touched[dir.len] = dir.existed[dir.len] = 1;
            dir.len++;
        }
        uint64_t v = ++dir.verifier;
        pthread_mutex_unlock(&dir.lock);
        /* Half the time the new verifier is known, half the time not. */
        int ret = udc_dir_changed(cache, DIR_INO, rng_next(&r) % 2 ? v : 0);
        if (ret != 0)
            CHECK_EQ(ret, 0);
        changes++;
        if (changes % 16 == 0) {
            struct timespec ts = {0, 20000};
            nanosleep(&ts, NULL);
        }
    }
    return NULL;
}

/* One full listing in batches of `batch`, while the modifier runs if `modified`. */
static void listing(size_t batch, int modified, int pass) {
    pthread_mutex_lock(&dir.lock);
    memset(dir.touched, 0, dir.cap);
    size_t start_len = dir.len;
    unsigned char *at_start = malloc(dir.cap);
    memcpy(at_start, dir.present, dir.cap);
    pthread_mutex_unlock(&dir.lock);

    unsigned *seen = calloc(dir.cap, sizeof *seen);
    udc_dirent *buf = malloc(batch * sizeof *buf);
    pthread_t tid;
    if (modified) {
        atomic_store(&modifying, 1);
        CHECK_EQ(pthread_create(&tid, NULL, modify, (void *)(uintptr_t)(pass + 1)), 0);
    }
    uint64_t cookie = 0;
    long calls = 0, returned = 0, bogus = 0;
    int r;
    do {
        size_t n = 0;
        r = udc_readdir(cache, DIR_INO, cookie, buf, batch, &n);
        calls++;
        if (r < 0) {
            CHECK_EQ(r, 0);
            break;
        }
        for (size_t k = 0; k < n; k++) {
            size_t i = (size_t)(buf[k].cookie - 1);
            char name[16];
            entry_name(name, i);
            if (i >= dir.cap || !dir.existed[i] || strcmp(name, buf[k].name) != 0 ||
                buf[k].ino != INO(i)) {
                bogus++;
                continue;
            }
            seen[i]++;
            returned++;
            cookie = buf[k].cookie;
        }
    } while (r == 0 && calls < 10000000);
    if (modified) {
        atomic_store(&modifying, 0);
        pthread_join(tid, NULL);
    }
    CHECK_EQ(r, 1); /* the listing reached the end */
    CHECK_EQ(bogus, 0);

    long stable = 0, stable_missing = 0, stable_twice = 0, others_twice = 0;
    for (size_t i = 0; i < dir.cap; i++) {
        int was_stable = i < start_len && at_start[i] && !dir.touched[i];
        if (was_stable) {
            stable++;
            stable_missing += seen[i] == 0;
            stable_twice += seen[i] > 1;
        } else {
            others_twice += seen[i] > 1;
        }
    }
    CHECK_EQ(stable_missing, 0);
    CHECK_EQ(stable_twice, 0);
    CHECK_EQ(others_twice, 0);
    CHECK(stable > 0);
    udc_stats s = {.size = sizeof s};
    udc_stats_get(cache, &s);
    printf("pass %d (%s): %ld udc_readdir calls, %ld entries returned, %ld present throughout "
           "(missing %ld, twice %ld), %ld callback fills so far, readdir hits %llu misses %llu\n",
           pass, modified ? "modified" : "unmodified", calls, returned, stable, stable_missing,
           stable_twice, dir.fills, (unsigned long long)s.readdir_hits,
           (unsigned long long)s.readdir_misses);
    free(at_start);
    free(seen);
    free(buf);
}

int main(int argc, char **argv) {
    size_t entries = 100000, batch = 500;
    int passes = 3, opt;
    while ((opt = getopt(argc, argv, "n:b:p:c:")) != -1) {
        switch (opt) {
        case 'n': entries = (size_t)atol(optarg); break;
        case 'b': batch = (size_t)atol(optarg); break;
        case 'p': passes = atoi(optarg); break;
        case 'c': max_changes = atol(optarg); break;
        default:
            fprintf(stderr, "usage: %s [-n entries] [-b batch] [-p passes] [-c changes]\n",
                    argv[0]);
            return 2;
        }
    }
    if (entries < 1 || batch < 1 || passes < 1 || max_changes < 0) {
        fprintf(stderr, "readdir_modified: option out of range\n");
        return 2;
    }
    pthread_mutex_init(&dir.lock, NULL);
    dir.len = entries;
    dir.cap = entries + (size_t)passes * (size_t)max_changes;
    dir.present = calloc(dir.cap, 1);
    dir.touched = calloc(dir.cap, 1);
    dir.existed = calloc(dir.cap, 1);
    memset(dir.present, 1, entries);
    memset(dir.existed, 1, entries);
    dir.verifier = 1;

    udc_config cfg;
    udc_config_init(&cfg);
    cfg.readdir_page_entries = 256;
    CHECK_EQ(udc_cache_new(&cfg, &cache), 0);
    udc_ops ops = {.size = sizeof ops, .readdir = fs_readdir};
    CHECK_EQ(udc_set_ops(cache, &ops), 0);
    udc_entry d = {.ino = DIR_INO, .type = UDC_TYPE_DIR};
    CHECK_EQ(udc_add(cache, UDC_ROOT_INO, S("big"), &d), 0);

    for (int p = 0; p < passes; p++)
        listing(batch, p > 0, p);

    udc_cache_destroy(cache);
    free(dir.present);
    free(dir.touched);
    free(dir.existed);
    pthread_mutex_destroy(&dir.lock);
    return check_summary("readdir_modified");
}
