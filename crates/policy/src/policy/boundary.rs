//! The fallback boundary (SPEC 4): protected head, eligible middle, retained tail,
//! extended until no call is separated from its results.

use crate::transcript::Transcript;

/// Positions in the list of input items: `[0, protected_end)` protected,
/// `[protected_end, retained_start)` eligible, `[retained_start, n)` retained.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Boundary {
    pub protected_end: usize,
    pub retained_start: usize,
}

impl Boundary {
    pub fn eligible(&self) -> std::ops::Range<usize> {
        self.protected_end..self.retained_start
    }
}

/// Computes the boundary over `inputs` (item indices of the input items, in order).
pub fn boundary(t: &Transcript<'_>, inputs: &[usize], protect_first: usize, retain_last: usize) -> Boundary {
    let n = inputs.len();
    let call_pos = call_positions(t, inputs);
    // suffix_min[k]: the earliest call position answered by a result at or after k.
    let mut suffix_min = vec![usize::MAX; n + 1];
    for k in (0..n).rev() {
        suffix_min[k] = suffix_min[k + 1].min(call_pos[k].unwrap_or(usize::MAX));
    }
    // prefix_max[c]: one past the latest result of any call at a position before c.
    let mut last_result = vec![0usize; n];
    for (k, c) in call_pos.iter().enumerate() {
        if let Some(c) = *c {
            last_result[c] = last_result[c].max(k + 1);
        }
    }
    let mut prefix_max = vec![0usize; n + 1];
    for c in 0..n {
        prefix_max[c + 1] = prefix_max[c].max(last_result[c]);
    }
    let mut p = protect_first.min(n);
    let mut r = n.saturating_sub(retain_last).max(p);
    loop {
        let (p0, r0) = (p, r);
        p = p.max(prefix_max[p]);
        r = r.max(p);
        let earliest = suffix_min[r];
        if earliest >= p && earliest < r {
            r = earliest;
        }
        if (p, r) == (p0, r0) {
            return Boundary { protected_end: p, retained_start: r };
        }
    }
}

/// For each input position, the position of the call its result answers (if any).
fn call_positions(t: &Transcript<'_>, inputs: &[usize]) -> Vec<Option<usize>> {
    let mut pos_of_item = vec![usize::MAX; t.items.len()];
    for (k, &i) in inputs.iter().enumerate() {
        pos_of_item[i] = k;
    }
    inputs
        .iter()
        .map(|&i| {
            let owner = t.items[i].call_item?;
            let pos = pos_of_item[owner];
            (pos != usize::MAX && owner < i).then_some(pos)
        })
        .collect()
}
