//! Fuzz `udcache-gp`: alloc / free / poll / trim sequences with a reader the input pins and
//! unpins. The property: an object freed while the reader was pinned is never handed out again
//! (nor re-initialised) while that same pin lasts. Each object counts its reuses (made as 0,
//! each re-initialisation adds 1): a recycled object comes back once more than it went, a
//! fresh one or a spare as 0, and every handout is counted as one or the other.
#![no_main]

use std::collections::HashMap;

use arbitrary::Arbitrary;
use libfuzzer_sys::fuzz_target;
use udcache_gp::{GpPool, PoolBox, PoolConfig, get_state, poll, start_poll};

#[derive(Arbitrary, Debug)]
enum Op {
    Alloc,
    Free(u8),
    Pin,
    Unpin,
    Poll,
    StartPoll,
    Synchronize,
    Trim,
}

#[derive(Arbitrary, Debug)]
struct Input {
    request_every: u8,
    max_objects: Option<u8>,
    /// Shards (0: the default; else 1 to 8, rounded up to a power of two).
    shards: u8,
    /// Objects per fresh allocation (`None`: the default; else 1 to 256).
    fresh_run: Option<u8>,
    /// The xfs grace-period policy: reuse the newest freed object, waiting for its grace period.
    wait: bool,
    ops: Vec<Op>,
}

fuzz_target!(|input: Input| {
    let config = PoolConfig::default()
        .with_request_every(u32::from(input.request_every))
        // A cap below the number of live objects would block alloc forever; keep it above.
        .with_max_objects(input.max_objects.map(|m| usize::from(m) + 64))
        .with_shards(usize::from(input.shards % 9));
    let config = match input.fresh_run {
        Some(n) => config.with_fresh_run(usize::from(n) + 1),
        None => config,
    };
    let config = if input.wait { config.wait_for_grace_period() } else { config };
    let pool = GpPool::with_config(config, || 0u64, |generation| *generation += 1);
    let mut live: Vec<PoolBox<'_, u64>> = Vec::new();
    let mut reader: Option<(udcache_gp::Guard, u64)> = None;
    let mut pins = 0u64;
    // Address of a freed object -> the reader pin that was active when it was freed.
    let mut freed_under: HashMap<usize, u64> = HashMap::new();
    // Address of a freed object -> its count when it was freed.
    let mut freed_at: HashMap<usize, u64> = HashMap::new();
    for op in input.ops.into_iter().take(512) {
        match op {
            Op::Alloc if live.len() < 64 => {
                if reader.is_some() && (input.max_objects.is_some() || input.wait) {
                    // A capped pool, or one that waits for reuse, may wait for a grace period,
                    // which panics while pinned.
                    continue;
                }
                let before = pool.stats();
                let obj = pool.alloc();
                let after = pool.stats();
                let addr = &*obj as *const u64 as usize;
                let recycled = after.recycled - before.recycled;
                assert_eq!(recycled + after.fresh - before.fresh, 1, "one handout, counted once");
                let was = freed_at.remove(&addr);
                if recycled == 1 {
                    let was = was.expect("a recycled object was freed before");
                    assert_eq!(*obj, was + 1, "re-initialised once, at its reuse");
                } else {
                    assert_eq!(*obj, 0, "a fresh object or a spare is as made");
                }
                if let (Some(pin), Some((_, current))) = (freed_under.remove(&addr), &reader) {
                    assert_ne!(pin, *current, "reused while the reader that saw it is pinned");
                }
                live.push(obj);
            }
            Op::Alloc => {}
            Op::Free(i) if !live.is_empty() => {
                let obj = live.swap_remove(usize::from(i) % live.len());
                let addr = &*obj as *const u64 as usize;
                freed_at.insert(addr, *obj);
                if let Some((_, pin)) = &reader {
                    freed_under.insert(addr, *pin);
                } else {
                    freed_under.remove(&addr);
                }
                obj.free();
            }
            Op::Free(_) => {}
            Op::Pin if reader.is_none() => {
                pins += 1;
                reader = Some((udcache_gp::pin(), pins));
            }
            Op::Pin => {}
            Op::Unpin => reader = None,
            Op::Poll => {
                let c = get_state();
                let _ = poll(&c);
            }
            Op::StartPoll => {
                let c = start_poll();
                if reader.is_some() {
                    assert!(!poll(&c), "completed while a reader pinned before it is still pinned");
                }
            }
            Op::Synchronize if reader.is_none() => udcache_gp::synchronize(),
            Op::Synchronize => {}
            Op::Trim => {
                pool.trim();
            }
        }
        let s = pool.stats();
        assert_eq!(s.objects, s.parked + s.spares + live.len(), "objects = parked + spares + live");
        assert!(s.objects <= s.peak_objects);
    }
});
