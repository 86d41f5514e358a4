//! Loom models: a lockless lookup racing inserts that trigger trimming on the same bucket, an
//! unused insert racing a hold of its entry, and a snapshot racing a write.
//! `RUSTFLAGS="--cfg loom --cfg crossbeam_loom" cargo test --release -p udcache-neghash --test loom_neghash`
#![cfg(loom)]

use udcache_neghash::{Config, NegHash, Polarity, epoch};

/// Every model here: preemption bound 2. Inserts, a trim, crossbeam's pins and the snapshot
/// reader's retries exceed loom's default of 1,000 branches per execution.
fn model() -> loom::model::Builder {
    let mut b = loom::model::Builder::new();
    b.preemption_bound = Some(2);
    b.max_branches = 4_000;
    b
}

#[test]
fn lookup_vs_insert_and_trim_on_one_bucket() {
    model().check(|| {
        // One bucket, a cap of one negative: the second negative's release evicts the first.
        let table = std::sync::Arc::new(NegHash::<u32>::new(
            Config::with_buckets(1).with_negative_cap(Some(1)).with_rule1(false),
        ));
        drop(table.insert(0, b"stable", Polarity::Positive, 7).inserted().unwrap());
        drop(table.insert(0, b"old-miss", Polarity::Negative, 0).inserted().unwrap());

        let reader = {
            let table = table.clone();
            loom::thread::spawn(move || {
                let guard = epoch::pin();
                // Present for the whole walk: must be found, positive, intact.
                let e = table.lookup(&guard, 0, b"stable").expect("stable entry missed");
                assert!(!e.is_negative());
                assert_eq!(*e.value(), 7);
                // Being evicted concurrently: found or not, but intact if found.
                if let Some(m) = table.lookup(&guard, 0, b"old-miss") {
                    assert_eq!(m.name(), b"old-miss");
                }
            })
        };
        drop(table.insert(0, b"new-miss", Polarity::Negative, 0).inserted().unwrap());
        reader.join().unwrap();

        let s = table.stats();
        assert_eq!((s.entries, s.negative, s.evicted_rule2), (2, 1, 1));
    });
}

/// An unused insert racing a hold of its new entry taken without the lock (`get`) and dropped:
/// whichever gives up the last hold settles the entry, once: on the LRU, counted unused once.
#[test]
fn insert_unused_vs_a_hold_of_its_entry() {
    model().check(|| {
        let table = std::sync::Arc::new(NegHash::<u32>::new(Config::with_buckets(1)));
        let holder = {
            let table = table.clone();
            loom::thread::spawn(move || {
                if let Some(held) = table.get(0, b"miss") {
                    assert!(held.is_negative());
                }
            })
        };
        assert!(table.insert_unused(0, b"miss", Polarity::Negative, 0).is_ok());
        holder.join().unwrap();
        let s = table.stats();
        assert_eq!((s.entries, s.negative, s.unused), (1, 1, 1));
        let shape = table.bucket_shape(0);
        assert!(shape.len() == 1 && shape[0].on_lru && !shape[0].held);
        table.verify().unwrap();
    });
}

/// A value read with `read_value` while a writer changes both of its words in `write_value`:
/// the reader sees both old or both new, never one of each. (Fails if the writer's fence or the
/// reader's re-check is removed.)
#[test]
fn read_value_is_never_torn() {
    use loom::sync::atomic::{AtomicU64, Ordering::Relaxed};
    model().check(|| {
        let table = std::sync::Arc::new(NegHash::new(Config::with_buckets(1)));
        drop(
            table
                .insert(0, b"pair", Polarity::Positive, (AtomicU64::new(0), AtomicU64::new(0)))
                .inserted()
                .unwrap(),
        );
        let reader = {
            let table = table.clone();
            loom::thread::spawn(move || {
                let guard = epoch::pin();
                let e = table.lookup(&guard, 0, b"pair").expect("present");
                let (a, b) = e.read_value(|(a, b)| (a.load(Relaxed), b.load(Relaxed)));
                assert_eq!(a, b, "a torn read");
            })
        };
        let e = table.get(0, b"pair").expect("present");
        for v in 1..=2 {
            e.write_value(|(a, b)| {
                a.store(v, Relaxed);
                b.store(v, Relaxed);
            });
        }
        drop(e);
        reader.join().unwrap();
    });
}

/// An unused negative entry taken out of the table by its holder while `shrink` pops it off its
/// LRU list: whichever gets there first takes it off the list, the other finds it gone, and
/// the LRU and the counts agree afterwards. (The remover picks the list from the entry's LRU
/// bits, which `pop` clears holding only the list's lock.)
#[test]
fn remove_vs_shrink_of_one_lru_entry() {
    model().check(|| {
        let table = std::sync::Arc::new(NegHash::<u32>::new(Config::with_buckets(1)));
        drop(table.insert(0, b"miss", Polarity::Negative, 0).inserted().unwrap());
        drop(table.insert(0, b"hit", Polarity::Positive, 1).inserted().unwrap());
        let shrinker = {
            let table = table.clone();
            loom::thread::spawn(move || table.shrink_negative(1).evicted)
        };
        let removed = table.get(0, b"miss").is_some_and(|held| held.remove());
        let shrunk = shrinker.join().unwrap();
        assert!(removed || shrunk == 1, "the entry went one way or the other");
        let s = table.stats();
        assert_eq!((s.entries, s.negative, s.unused), (1, 0, 1), "only `hit` is left");
        table.verify().unwrap();
    });
}
