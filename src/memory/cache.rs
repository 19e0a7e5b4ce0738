//! A fully associative LRU cache over 32-byte sectors: the reuse-distance model of wang2019
//! (an access hits when fewer distinct sectors than the capacity were touched since its last use,
//! which is exactly what an LRU cache of that capacity decides).
//!
//! O(1) per access (hash map into an intrusive doubly linked list). It counts hits and misses;
//! it does not model associativity sets, write policies or timing.

use std::collections::HashMap;

use crate::ptx::parser::BuildFx;

const NIL: u32 = u32::MAX;

/// An LRU cache of `capacity` sectors.
#[derive(Debug, Clone)]
pub struct Lru {
    capacity: usize,
    map: HashMap<u64, u32, BuildFx>,
    key: Vec<u64>,
    prev: Vec<u32>,
    next: Vec<u32>,
    head: u32,
    tail: u32,
    pub hits: u64,
    pub misses: u64,
}

impl Lru {
    /// A cache holding `capacity` sectors (0: every access misses).
    pub fn new(capacity: usize) -> Self {
        Self {
            capacity,
            map: HashMap::default(),
            key: Vec::new(),
            prev: Vec::new(),
            next: Vec::new(),
            head: NIL,
            tail: NIL,
            hits: 0,
            misses: 0,
        }
    }

    fn unlink(&mut self, i: u32) {
        let (p, n) = (self.prev[i as usize], self.next[i as usize]);
        if p != NIL {
            self.next[p as usize] = n;
        } else {
            self.head = n;
        }
        if n != NIL {
            self.prev[n as usize] = p;
        } else {
            self.tail = p;
        }
    }

    fn push_front(&mut self, i: u32) {
        self.prev[i as usize] = NIL;
        self.next[i as usize] = self.head;
        if self.head != NIL {
            self.prev[self.head as usize] = i;
        }
        self.head = i;
        if self.tail == NIL {
            self.tail = i;
        }
    }

    /// Accesses a sector; returns whether it hit.
    pub fn access(&mut self, sector: u64) -> bool {
        if self.capacity == 0 {
            self.misses += 1;
            return false;
        }
        // The most recent sector again (a warp's broadcast, or the next warp reading what the
        // last one read): a hit that leaves the order as it is, without a map lookup.
        if self.head != NIL && self.key[self.head as usize] == sector {
            self.hits += 1;
            return true;
        }
        if let Some(&i) = self.map.get(&sector) {
            self.unlink(i);
            self.push_front(i);
            self.hits += 1;
            return true;
        }
        self.misses += 1;
        let slot = if self.key.len() < self.capacity {
            self.key.push(sector);
            self.prev.push(NIL);
            self.next.push(NIL);
            (self.key.len() - 1) as u32
        } else {
            let victim = self.tail;
            self.unlink(victim);
            self.map.remove(&self.key[victim as usize]);
            self.key[victim as usize] = sector;
            victim
        };
        self.map.insert(sector, slot);
        self.push_front(slot);
        false
    }

    /// Hits over accesses (0 when nothing was accessed).
    pub fn hit_ratio(&self) -> f64 {
        let n = self.hits + self.misses;
        if n == 0 {
            0.0
        } else {
            self.hits as f64 / n as f64
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reuse_distance_decides() {
        // capacity 2: a b a -> reuse distance of the second a is 1 (only b between): hit.
        let mut c = Lru::new(2);
        assert!(!c.access(1));
        assert!(!c.access(2));
        assert!(c.access(1));
        // a b c a with capacity 2: two distinct sectors (b, c) since a: distance 2 = capacity: miss.
        let mut c = Lru::new(2);
        for s in [1, 2, 3] {
            c.access(s);
        }
        assert!(!c.access(1));
        assert_eq!((c.hits, c.misses), (0, 4));
    }

    #[test]
    fn cyclic_sweep_larger_than_cache_always_misses() {
        // LRU with a cyclic sweep of 5 sectors over 4 slots: every access misses.
        let mut c = Lru::new(4);
        for _ in 0..3 {
            for s in 0..5 {
                c.access(s);
            }
        }
        assert_eq!(c.hits, 0);
        // a sweep of 4 fits: after the first round, 2 more rounds of 4 hits.
        let mut c = Lru::new(4);
        for _ in 0..3 {
            for s in 0..4 {
                c.access(s);
            }
        }
        assert_eq!(c.hits, 8);
        assert!((c.hit_ratio() - 8.0 / 12.0).abs() < 1e-12);
    }
}

/// Hit fractions of one access: sectors that hit L1, and of the rest, those that hit L2.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct AccessHits {
    pub l1: f32,
    pub l2: f32,
}

/// The result of simulating the caches over a set of warp traces.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct CacheResult {
    /// L1 hits over global/local load sectors.
    pub l1_hit_ratio: f64,
    /// L2 hits over the sectors that reach L2 (L1 load misses and all stores).
    pub l2_hit_ratio: f64,
    pub l1_accesses: u64,
    pub l2_accesses: u64,
    /// Per warp, per access (same order as `WarpTrace::accesses`).
    pub hits: Vec<Vec<AccessHits>>,
}

/// Runs the warps' global and local accesses through an L1 of `l1_sectors` and an L2 of
/// `l2_sectors` (both LRU), interleaving the warps round-robin one request at a time, as warps
/// of one SM issue concurrently. Loads go through L1, then L2 for the sectors that missed;
/// stores go to L2 only (NVIDIA's L1 does not allocate on global stores).
pub fn simulate(
    warps: &[&crate::workload::trace::WarpTrace],
    l1_sectors: usize,
    l2_sectors: usize,
) -> CacheResult {
    use crate::workload::trace::MemSpace;
    let mut l1 = Lru::new(l1_sectors);
    let mut l2 = Lru::new(l2_sectors);
    let mut hits: Vec<Vec<AccessHits>> = warps
        .iter()
        .map(|w| vec![AccessHits::default(); w.accesses.len()])
        .collect();
    let mut pos = vec![0usize; warps.len()];
    let mut live = warps.len();
    while live > 0 {
        live = 0;
        for (k, w) in warps.iter().enumerate() {
            let Some(a) = w.accesses.get(pos[k]) else {
                continue;
            };
            live += 1;
            let idx = pos[k];
            pos[k] += 1;
            if !matches!(a.space, MemSpace::Global | MemSpace::Local) {
                continue;
            }
            let sectors = &w.sector_ids[a.sector_start as usize..a.sector_end as usize];
            if sectors.is_empty() {
                continue;
            }
            let (mut h1, mut h2, mut n2) = (0u32, 0u32, 0u32);
            for &s in sectors {
                if !a.store && l1.access(s) {
                    h1 += 1;
                    continue;
                }
                n2 += 1;
                if l2.access(s) {
                    h2 += 1;
                }
            }
            let n = sectors.len() as f32;
            hits[k][idx] = AccessHits {
                l1: h1 as f32 / n,
                l2: if n2 == 0 { 0.0 } else { h2 as f32 / n2 as f32 },
            };
        }
    }
    CacheResult {
        l1_hit_ratio: l1.hit_ratio(),
        l2_hit_ratio: l2.hit_ratio(),
        l1_accesses: l1.hits + l1.misses,
        l2_accesses: l2.hits + l2.misses,
        hits,
    }
}
