//! Criterion benches for udcache-rculist (filled below).
fn main() {}
