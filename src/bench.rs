//! What `cargo bench` reaches inside the crate, and nothing else: the list
//! parser fed the way the pipe feeds it, and the names of the simulator's
//! environment. Not an API; hidden from the docs and free to change with
//! the benches.

use std::collections::{BTreeMap, BTreeSet};

use crate::fleet::listing::{self, Shape};

pub use crate::ops::sim::{LOG_ENV as SIM_LOG_ENV, STATE_ENV as SIM_STATE_ENV};

/// Parses a `-p P list --json` answer handed over in pieces of `piece`
/// bytes (as [`crate::sys::process::run_streaming`] hands stdout over), and
/// turns every row into the owned session and live state, as the old
/// parser returned them: the number of rows, or why the answer is
/// unreadable.
pub fn parse_profile_list(answer: &[u8], piece: usize) -> Result<usize, String> {
    let mut rows = Vec::new();
    listing::read(Shape::Profile, answer, piece, &mut |r| {
        rows.push((r.session(), r.live()))
    })
    .map_err(|g| g.0)?;
    Ok(rows.len())
}

/// Parses a `-p P list --json` answer in pieces of `piece` bytes the way a
/// safety poll reads it: every row read, the live state of the sessions in
/// `keep` (the cache's whole sessions) made owned, the other rows dropped.
/// The number of rows kept, or why the answer is unreadable.
pub fn read_profile_list(
    answer: &[u8],
    piece: usize,
    keep: &BTreeSet<String>,
) -> Result<usize, String> {
    let mut live = BTreeMap::new();
    listing::read(Shape::Profile, answer, piece, &mut |r| {
        if keep.contains(r.id.as_ref()) {
            live.insert(r.id.to_string(), r.live());
        }
    })
    .map_err(|g| g.0)?;
    Ok(live.len())
}
