//! Node types shared by the integration tests.
#![allow(dead_code)]

use std::sync::Arc;

use udcache_rculist::{HLink, Link, adapter, epoch};

/// A node that can sit on two lists and one hash chain at once.
#[derive(Debug)]
pub struct Node {
    pub v: u32,
    pub a: Link,
    pub b: Link,
    pub h: HLink,
}

adapter!(pub AAdapter = Node { a: Link });
adapter!(pub BAdapter = Node { b: Link });
adapter!(pub HAdapter = Node { h: HLink });

pub fn node(v: u32) -> Arc<Node> {
    Arc::new(Node { v, a: Link::new(), b: Link::new(), h: HLink::new() })
}

/// Pins and flushes until `node` holds only the test's reference (the lists' deferred
/// releases have run), or gives up after many rounds.
pub fn wait_released(node: &Arc<Node>) -> bool {
    for _ in 0..10_000 {
        if Arc::strong_count(node) == 1 {
            return true;
        }
        epoch::pin().flush();
        std::thread::yield_now();
    }
    false
}
