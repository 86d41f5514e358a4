//! Sequences of `List` and `HListBl` writer operations checked against a `VecDeque` / `Vec`
//! model after every step: contents, order, which operations are refused, and the chain's
//! head word (summary, short length) with what `find_tagged` answers behind it.
#![no_main]

use std::collections::VecDeque;
use std::sync::Arc;

use arbitrary::Arbitrary;
use libfuzzer_sys::fuzz_target;
use udcache_rculist::head::{SHORT, TAG_BITS};
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
    /// A cursor moved forward and back (`moves`: bit i set = step back), then an edit.
    CursorEdit {
        moves: u8,
        steps: u8,
        edit: Edit,
    },
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

/// What a [`Op::CursorEdit`] does where its cursor stopped.
#[derive(Arbitrary, Debug, Clone, Copy)]
enum Edit {
    Look,
    Remove,
    InsertBefore(u8),
    InsertAfter(u8),
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
            Op::CursorEdit { moves, steps, edit } => {
                // The model's position: an index, `len` for past the end. The cursor starts
                // at the first node (past the end of an empty list).
                let mut at = 0;
                let mut c = w.cursor_mut(&guard);
                for i in 0..steps % 8 {
                    let len = m.list.len();
                    at = if moves & (1 << i) != 0 {
                        // Back: from past the end to the last node, from the first past the end.
                        c.move_prev();
                        match at {
                            _ if at == len => len.saturating_sub(1),
                            0 => len,
                            _ => at - 1,
                        }
                    } else {
                        // Forward: from past the end to the first node.
                        c.move_next();
                        if at == len { 0 } else { at + 1 }
                    };
                    assert_eq!(c.get().map(|x| x.id), m.list.get(at).copied(), "cursor at {at}");
                }
                match edit {
                    Edit::Look => {}
                    Edit::Remove => {
                        let expect = m.list.get(at).copied();
                        assert_eq!(c.remove_current().map(|x| x.id), expect);
                        if expect.is_some() {
                            m.list.remove(at);
                        }
                    }
                    Edit::InsertBefore(b) | Edit::InsertAfter(b) => {
                        let ok = !m.on_a_list(id(b));
                        let before = matches!(edit, Edit::InsertBefore(_));
                        let r = if before {
                            c.insert_before(n(b).clone())
                        } else {
                            c.insert_after(n(b).clone())
                        };
                        assert_eq!(r.is_ok(), ok);
                        if ok {
                            let past_end = at == m.list.len();
                            match (before, past_end) {
                                // Past the end: before is the back, after is the front; the
                                // cursor stays past the end.
                                (true, true) => m.list.push_back(id(b)),
                                (false, true) => m.list.push_front(id(b)),
                                (true, false) => m.list.insert(at, id(b)),
                                (false, false) => m.list.insert(at + 1, id(b)),
                            }
                            if past_end || before {
                                at += 1;
                            }
                        }
                    }
                }
                assert_eq!(c.get().map(|x| x.id), m.list.get(at).copied(), "after {edit:?}");
            }
            Op::HPush(a) => {
                let ok = !m.chain.contains(&id(a));
                let mut hw = chain.lock();
                hw.add_tags(bit(id(a)));
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
                hw.add_tags(bit(id(b)));
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
                chain.lock().set_tags(bits);
                m.summary = bits & ((1 << TAG_BITS) - 1);
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
        // What the writer answers about the list.
        assert_eq!(w.is_empty(), m.list.is_empty());
        assert_eq!(w.front(&guard).map(|x| x.id), m.list.front().copied(), "after {op:?}");
        assert_eq!(w.back(&guard).map(|x| x.id), m.list.back().copied(), "after {op:?}");
        for i in 0..POOL as u8 {
            assert_eq!(w.contains(n(i)), m.list.contains(&i), "contains {i} after {op:?}");
        }
        drop(w);
        let got: Vec<u8> = list.iter(&guard).map(|x| x.id).collect();
        assert_eq!(got, Vec::from(m.list.clone()), "after {op:?}");
        let got: Vec<u8> = other.iter(&guard).map(|x| x.id).collect();
        assert_eq!(got, Vec::from(m.other.clone()), "after {op:?}");
        let got: Vec<u8> = chain.iter(&guard).map(|x| x.id).collect();
        assert_eq!(got, m.chain, "after {op:?}");
        let hw = chain.lock();
        assert_eq!(hw.tags(), m.summary, "after {op:?}");
        assert_eq!(hw.short_len(), Some(m.chain.len()).filter(|&n| n < SHORT), "after {op:?}");
        drop(hw);
        for i in 0..POOL as u8 {
            let expect = m.chain.contains(&i) && m.summary & bit(i) != 0;
            let found = chain.find_tagged(&guard, bit(i), |x| x.id == i).map(|x| x.id);
            assert_eq!(found, expect.then_some(i), "node {i} after {op:?}");
        }
        assert!(!chain.is_locked());
    }
});
