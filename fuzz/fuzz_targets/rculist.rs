//! Sequences of `List` and `HListBl` writer operations checked against a `VecDeque` / `Vec`
//! model after every step: contents, order, which operations are refused, and the chain's
//! head word (summary, short length) with what `find_summarised` answers behind it.
#![no_main]

use std::collections::VecDeque;
use std::sync::Arc;

use arbitrary::Arbitrary;
use libfuzzer_sys::fuzz_target;
use udcache_rculist::head::{SHORT, SUMMARY_BITS};
use udcache_rculist::{End, HLink, HListBl, Link, List, adapter, epoch};

/// More nodes than [`SHORT`]: a chain can outgrow its length field, and a removal from such a
/// chain must count it again.
const POOL: usize = 20;

struct Node {
    id: u8,
    link: Link,
    hlink: HLink,
}
adapter!(LA = Node { link: Link });
adapter!(HA = Node { hlink: HLink });

#[derive(Arbitrary, Debug)]
enum Op {
    PushFront(u8),
    PushBack(u8),
    InsertAfter(u8, u8),
    InsertBefore(u8, u8),
    Remove(u8),
    Replace(u8, u8),
    MoveFront(u8),
    MoveBack(u8),
    MoveToOther(u8, bool),
    PushOther(u8),
    SpliceOther,
    PopFront,
    PopBack,
    CursorRemove(u8),
    HPush(u8),
    HInsertAfter(u8, u8),
    HInsertBefore(u8, u8),
    HRemove(u8),
    HReplace(u8, u8),
    HPop,
    HCursorRemove(u8),
    /// Replace the summary with this value (a recompute, or anything at all).
    HSetSummary(u16),
}

/// A node's summary bits: several nodes share each, as hashes do.
fn bit(id: u8) -> u16 {
    1 << (id % 7)
}

struct Model {
    list: VecDeque<u8>,
    other: VecDeque<u8>,
    chain: Vec<u8>,
    summary: u16,
}

impl Model {
    fn on_a_list(&self, id: u8) -> bool {
        self.list.contains(&id) || self.other.contains(&id)
    }
    fn pos(v: &VecDeque<u8>, id: u8) -> Option<usize> {
        v.iter().position(|&x| x == id)
    }
}

fuzz_target!(|ops: Vec<Op>| {
    let pool: Vec<Arc<Node>> = (0..POOL as u8)
        .map(|id| Arc::new(Node { id, link: Link::new(), hlink: HLink::new() }))
        .collect();
    let n = |i: u8| &pool[i as usize % POOL];
    let id = |i: u8| i % POOL as u8;
    let list = List::<LA>::new();
    let other = List::<LA>::new();
    let chain = HListBl::<HA>::new();
    let mut m =
        Model { list: VecDeque::new(), other: VecDeque::new(), chain: Vec::new(), summary: 0 };
    let guard = epoch::pin();
    for op in ops.iter().take(256) {
        let mut w = list.lock();
        match *op {
            Op::PushFront(a) | Op::PushBack(a) => {
                let ok = !m.on_a_list(id(a));
                let front = matches!(op, Op::PushFront(_));
                let r = if front { w.push_front(n(a).clone()) } else { w.push_back(n(a).clone()) };
                assert_eq!(r.is_ok(), ok);
                if ok {
                    if front { m.list.push_front(id(a)) } else { m.list.push_back(id(a)) }
                }
            }
            Op::InsertAfter(a, b) | Op::InsertBefore(a, b) => {
                let after = matches!(op, Op::InsertAfter(..));
                let at = Model::pos(&m.list, id(a));
                let ok = at.is_some() && !m.on_a_list(id(b));
                let r = if after {
                    w.insert_after(n(a), n(b).clone())
                } else {
                    w.insert_before(n(a), n(b).clone())
                };
                assert_eq!(r.is_ok(), ok);
                if ok {
                    m.list.insert(at.unwrap() + usize::from(after), id(b));
                }
            }
            Op::Remove(a) => {
                let at = Model::pos(&m.list, id(a));
                assert_eq!(w.remove(n(a)).map(|x| x.id), at.map(|_| id(a)));
                if let Some(p) = at {
                    m.list.remove(p);
                }
            }
            Op::Replace(a, b) => {
                let at = Model::pos(&m.list, id(a));
                let ok = at.is_some() && !m.on_a_list(id(b));
                let r = w.replace(n(a), n(b).clone());
                assert_eq!(r.as_ref().ok().map(|x| x.id), ok.then(|| id(a)));
                if ok {
                    m.list[at.unwrap()] = id(b);
                }
            }
            Op::MoveFront(a) | Op::MoveBack(a) => {
                let at = Model::pos(&m.list, id(a));
                let front = matches!(op, Op::MoveFront(_));
                let r = if front { w.move_to_front(n(a)) } else { w.move_to_back(n(a)) };
                assert_eq!(r, at.is_some());
                if let Some(p) = at {
                    m.list.remove(p);
                    if front { m.list.push_front(id(a)) } else { m.list.push_back(id(a)) }
                }
            }
            Op::MoveToOther(a, front) => {
                let at = Model::pos(&m.list, id(a));
                let mut wo = other.lock();
                let end = if front { End::Front } else { End::Back };
                assert_eq!(w.move_to(n(a), &mut wo, end), at.is_some());
                if let Some(p) = at {
                    m.list.remove(p);
                    if front { m.other.push_front(id(a)) } else { m.other.push_back(id(a)) }
                }
            }
            Op::PushOther(a) => {
                let ok = !m.on_a_list(id(a));
                assert_eq!(other.lock().push_back(n(a).clone()).is_ok(), ok);
                if ok {
                    m.other.push_back(id(a));
                }
            }
            Op::SpliceOther => {
                w.splice_back(&mut other.lock());
                m.list.extend(m.other.drain(..));
            }
            Op::PopFront => assert_eq!(w.pop_front().map(|x| x.id), m.list.pop_front()),
            Op::PopBack => assert_eq!(w.pop_back().map(|x| x.id), m.list.pop_back()),
            Op::CursorRemove(k) => {
                let mut c = w.cursor_mut(&guard);
                for _ in 0..k % 8 {
                    c.move_next();
                }
                // Past the end is a position too: `move_next` from there wraps to the front.
                let k = usize::from(k % 8) % (m.list.len() + 1);
                let expect = m.list.get(k).copied();
                assert_eq!(c.remove_current().map(|x| x.id), expect);
                if expect.is_some() {
                    m.list.remove(k);
                    assert_eq!(c.get().map(|x| x.id), m.list.get(k).copied());
                }
            }
            Op::HPush(a) => {
                let ok = !m.chain.contains(&id(a));
                let mut hw = chain.lock();
                hw.add_summary(bit(id(a)));
                m.summary |= bit(id(a));
                assert_eq!(hw.push_front(n(a).clone()).is_ok(), ok);
                if ok {
                    m.chain.insert(0, id(a));
                }
            }
            Op::HInsertAfter(a, b) | Op::HInsertBefore(a, b) => {
                let after = matches!(op, Op::HInsertAfter(..));
                let at = m.chain.iter().position(|&x| x == id(a));
                let ok = at.is_some() && !m.chain.contains(&id(b));
                let mut hw = chain.lock();
                hw.add_summary(bit(id(b)));
                m.summary |= bit(id(b));
                let r = if after {
                    hw.insert_after(n(a), n(b).clone())
                } else {
                    hw.insert_before(n(a), n(b).clone())
                };
                assert_eq!(r.is_ok(), ok);
                if ok {
                    m.chain.insert(at.unwrap() + usize::from(after), id(b));
                }
            }
            Op::HRemove(a) => {
                let at = m.chain.iter().position(|&x| x == id(a));
                assert_eq!(chain.lock().remove(n(a)).map(|x| x.id), at.map(|_| id(a)));
                if let Some(p) = at {
                    m.chain.remove(p);
                }
            }
            Op::HReplace(a, b) => {
                let at = m.chain.iter().position(|&x| x == id(a));
                let ok = at.is_some() && !m.chain.contains(&id(b));
                let r = chain.lock().replace(n(a), n(b).clone());
                assert_eq!(r.as_ref().ok().map(|x| x.id), ok.then(|| id(a)));
                if ok {
                    m.chain[at.unwrap()] = id(b);
                }
            }
            Op::HPop => {
                let expect = (!m.chain.is_empty()).then(|| m.chain.remove(0));
                assert_eq!(chain.lock().pop_front().map(|x| x.id), expect);
            }
            Op::HSetSummary(bits) => {
                chain.lock().set_summary(bits);
                m.summary = bits & ((1 << SUMMARY_BITS) - 1);
            }
            Op::HCursorRemove(k) => {
                let mut hw = chain.lock();
                let mut c = hw.cursor_mut(&guard);
                for _ in 0..k % 4 {
                    c.move_next();
                }
                let k = usize::from(k % 4);
                let expect = m.chain.get(k).copied();
                assert_eq!(c.remove_current().map(|x| x.id), expect);
                if expect.is_some() {
                    m.chain.remove(k);
                }
            }
        }
        drop(w);
        let got: Vec<u8> = list.iter(&guard).map(|x| x.id).collect();
        assert_eq!(got, Vec::from(m.list.clone()), "after {op:?}");
        let got: Vec<u8> = other.iter(&guard).map(|x| x.id).collect();
        assert_eq!(got, Vec::from(m.other.clone()), "after {op:?}");
        let got: Vec<u8> = chain.iter(&guard).map(|x| x.id).collect();
        assert_eq!(got, m.chain, "after {op:?}");
        let hw = chain.lock();
        assert_eq!(hw.summary(), m.summary, "after {op:?}");
        assert_eq!(hw.short_len(), Some(m.chain.len()).filter(|&n| n < SHORT), "after {op:?}");
        drop(hw);
        for i in 0..POOL as u8 {
            let expect = m.chain.contains(&i) && m.summary & bit(i) != 0;
            let found = chain.find_summarised(&guard, bit(i), |x| x.id == i).map(|x| x.id);
            assert_eq!(found, expect.then_some(i), "node {i} after {op:?}");
        }
        assert!(!chain.is_locked());
    }
});
