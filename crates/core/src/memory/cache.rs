//! A fully associative LRU cache over 32-byte sectors: the reuse-distance model of wang2019
//! (an access hits when fewer distinct sectors than the capacity were touched since its last use,
//! which is exactly what an LRU cache of that capacity decides).
//!
//! O(1) per access (hash map into an intrusive doubly linked list). It counts hits and misses;
//! it does not model associativity sets, write policies or timing.

const NIL: u32 = u32::MAX;
/// Slots of a new cache's table.
const MIN_TABLE: usize = 16;

/// One cached sector and its neighbours in recency order (most recent at `head`).
#[derive(Debug, Clone, Copy)]
struct Node {
    sector: u64,
    prev: u32,
    next: u32,
}

/// An LRU cache of `capacity` sectors.
///
/// The sectors live in `nodes`, linked from most to least recently used; `table` finds a
/// sector's node: open addressing with linear probing over at least twice the sectors held, so
/// a lookup reads one or two slots (4 bytes each) and one node.
#[derive(Debug, Clone)]
pub struct Lru {
    capacity: usize,
    nodes: Vec<Node>,
    table: Vec<u32>,
    /// log2 of the table length.
    table_bits: u32,
    head: u32,
    tail: u32,
    pub hits: u64,
    pub misses: u64,
}

impl Lru {
    /// A cache holding `capacity` sectors (0: every access misses).
    pub fn new(capacity: usize) -> Self {
        // The table grows with the sectors held (`grow`): a small trace never pays for a large
        // cache.
        let table_len = MIN_TABLE;
        Self {
            capacity,
            nodes: Vec::new(),
            table: if capacity == 0 {
                Vec::new()
            } else {
                vec![NIL; table_len]
            },
            table_bits: table_len.trailing_zeros(),
            head: NIL,
            tail: NIL,
            hits: 0,
            misses: 0,
        }
    }

    /// The table slot where the search for `sector` starts (Fibonacci hashing: the top bits of
    /// a multiplication, so sectors that differ in low bits spread out).
    #[inline]
    fn home(&self, sector: u64) -> usize {
        (sector.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> (64 - self.table_bits)) as usize
    }

    /// The table slot and node of `sector`, or the empty slot where it would go.
    #[inline]
    fn find(&self, sector: u64) -> (usize, Option<u32>) {
        let mask = self.table.len() - 1;
        let mut i = self.home(sector);
        loop {
            let n = self.table[i];
            if n == NIL {
                return (i, None);
            }
            if self.nodes[n as usize].sector == sector {
                return (i, Some(n));
            }
            i = (i + 1) & mask;
        }
    }

    /// Empties table slot `i`, moving later entries of its probe run back so that every entry
    /// stays reachable from its home slot (deletion without tombstones).
    fn remove_slot(&mut self, mut i: usize) {
        let mask = self.table.len() - 1;
        self.table[i] = NIL;
        let mut j = i;
        loop {
            j = (j + 1) & mask;
            let n = self.table[j];
            if n == NIL {
                return;
            }
            let home = self.home(self.nodes[n as usize].sector);
            // The entry at j may stay when its home lies cyclically in (i, j].
            let stays = if i <= j {
                i < home && home <= j
            } else {
                i < home || home <= j
            };
            if !stays {
                self.table[i] = n;
                self.table[j] = NIL;
                i = j;
            }
        }
    }

    /// Doubles the table and places every held sector again.
    fn grow(&mut self) {
        let len = self.table.len() * 2;
        self.table = vec![NIL; len];
        self.table_bits = len.trailing_zeros();
        for n in 0..self.nodes.len() as u32 {
            let (slot, _) = self.find(self.nodes[n as usize].sector);
            self.table[slot] = n;
        }
    }

    fn unlink(&mut self, i: u32) {
        let Node { prev, next, .. } = self.nodes[i as usize];
        if prev != NIL {
            self.nodes[prev as usize].next = next;
        } else {
            self.head = next;
        }
        if next != NIL {
            self.nodes[next as usize].prev = prev;
        } else {
            self.tail = prev;
        }
    }

    fn push_front(&mut self, i: u32) {
        let head = self.head;
        let node = &mut self.nodes[i as usize];
        node.prev = NIL;
        node.next = head;
        if head != NIL {
            self.nodes[head as usize].prev = i;
        }
        self.head = i;
        if self.tail == NIL {
            self.tail = i;
        }
    }

    /// Accesses a sector; returns whether it hit.
    #[inline]
    pub fn access(&mut self, sector: u64) -> bool {
        if self.capacity == 0 {
            self.misses += 1;
            return false;
        }
        // The most recent sector again (a warp's broadcast, or the next warp reading what the
        // last one read): a hit that leaves the order as it is, without a lookup.
        if self.head != NIL && self.nodes[self.head as usize].sector == sector {
            self.hits += 1;
            return true;
        }
        let (slot, found) = self.find(sector);
        if let Some(n) = found {
            self.unlink(n);
            self.push_front(n);
            self.hits += 1;
            return true;
        }
        self.miss(sector, slot);
        false
    }

    /// Puts a missed `sector` at the front, in the free table slot `slot` the search ended at
    /// (out of line: the hits, most accesses, stay short where `access` is inlined).
    #[inline(never)]
    fn miss(&mut self, sector: u64, slot: usize) {
        self.misses += 1;
        let (node, slot) = if self.nodes.len() < self.capacity {
            // At most half full, so that probe runs stay short.
            let slot = if 2 * (self.nodes.len() + 1) > self.table.len() {
                self.grow();
                self.find(sector).0
            } else {
                slot
            };
            self.nodes.push(Node {
                sector,
                prev: NIL,
                next: NIL,
            });
            ((self.nodes.len() - 1) as u32, slot)
        } else {
            let victim = self.tail;
            self.unlink(victim);
            let (victim_slot, _) = self.find(self.nodes[victim as usize].sector);
            self.remove_slot(victim_slot);
            self.nodes[victim as usize].sector = sector;
            // Removing the victim moved entries: search the free slot again.
            (victim, self.find(sector).0)
        };
        self.table[slot] = node;
        self.push_front(node);
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

    /// LRU in its plainest form: a list from most to least recent.
    struct PlainLru {
        capacity: usize,
        order: Vec<u64>,
    }

    impl PlainLru {
        fn access(&mut self, s: u64) -> bool {
            let hit = match self.order.iter().position(|&x| x == s) {
                Some(i) => {
                    self.order.remove(i);
                    true
                }
                None => false,
            };
            if self.capacity > 0 {
                self.order.insert(0, s);
                self.order.truncate(self.capacity);
            }
            hit
        }
    }

    #[test]
    fn equals_a_plain_lru_on_random_streams() {
        // Sectors drawn from ranges a little larger than the capacity (many evictions), with
        // strides that collide in the table (multiples of a power of two), xorshift-random.
        let mut x = 0x2545_f491_4f6c_dd1du64;
        for (capacity, range, stride) in [
            (1usize, 3u64, 1u64),
            (4, 9, 1),
            (16, 40, 1 << 20),
            (100, 130, 4),
            (3072, 4000, 32),
            (7, 7, 1 << 40),
        ] {
            let mut fast = Lru::new(capacity);
            let mut plain = PlainLru {
                capacity,
                order: Vec::new(),
            };
            for i in 0..20_000 {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                let s = (x % range) * stride;
                assert_eq!(
                    fast.access(s),
                    plain.access(s),
                    "capacity {capacity}, access {i}"
                );
            }
            assert!(fast.hits > 0 && fast.misses > 0, "capacity {capacity}");
        }
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

/// What happened to one access's sectors: the fraction that hit L1, of the rest the fraction
/// that hit L2, and the fraction of all its sectors that moved to or from DRAM (load misses;
/// for a store or atomic, sectors dirtied for the first time, written back once, plus the
/// sectors an atomic had to fetch).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct AccessHits {
    pub l1: f32,
    pub l2: f32,
    pub dram: f32,
}

impl Default for AccessHits {
    /// An access whose sectors are unknown: every one goes to DRAM.
    fn default() -> Self {
        Self {
            l1: 0.0,
            l2: 0.0,
            dram: 1.0,
        }
    }
}

/// Which global loads the L1 caches (CUDA C++ Programming Guide, "Global Memory" of each
/// compute capability; `data/latencies.toml`'s `global_loads_cached_in_l1` and
/// `global_l1_opt_in`). Local memory is cached in L1 on every architecture; stores and
/// atomics go to L2.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct L1Policy {
    /// An ordinary `ld.global` is cached in L1.
    pub global_loads: bool,
    /// `ld.global.ca` can be cached (the architecture allows opting in).
    pub opt_in: bool,
}

impl L1Policy {
    /// Every load through L1 (Volta and later; Fermi).
    pub const ALL: L1Policy = L1Policy {
        global_loads: true,
        opt_in: true,
    };

    /// Whether an access may hit (and fills) L1.
    pub fn caches(&self, a: &crate::workload::trace::MemAccess) -> bool {
        use crate::workload::trace::{Atomic, CacheOp, MemSpace};
        if a.store || a.atomic != Atomic::No {
            return false;
        }
        match a.space {
            MemSpace::Local => true,
            MemSpace::Global => match a.cache {
                CacheOp::Default => self.global_loads,
                // The read-only data path (texture/L1) on every architecture that has ld.nc.
                CacheOp::ReadOnly => true,
                CacheOp::CacheAll => self.opt_in,
                CacheOp::BypassL1 => false,
            },
            _ => false,
        }
    }
}

/// The result of simulating the caches over a set of warp traces.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct CacheResult {
    /// L1 hits over the global/local load sectors that went through L1.
    pub l1_hit_ratio: f64,
    /// L2 hits over the sectors that reach L2 (L1 misses, uncached loads, stores, atomics).
    pub l2_hit_ratio: f64,
    pub l1_accesses: u64,
    pub l2_accesses: u64,
    /// Sectors moved to or from DRAM (load misses, first writes of stored sectors, atomic
    /// fetches), over every simulated warp.
    pub dram_sectors: u64,
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
    let mut sim = CacheSim::new(warps, l1_sectors, l2_sectors);
    while sim.run_rounds(usize::MAX) {}
    sim.finish()
}

/// [`simulate`] a few rounds at a time, so that a consumer can use the hits of the requests
/// simulated so far (the trace model compresses traces while the caches are still running).
///
/// Several blocks ([`CacheSim::with_blocks`]): each has an L1 of its own (they run on different
/// SMs) and all share the L2. The L2 is write-back and allocates on writes without fetching
/// (sector byte masks): a stored sector costs one DRAM write the first time it is dirtied and
/// nothing for later stores (its eviction is not modelled); a partial sector costs a whole one.
#[derive(Debug)]
pub struct CacheSim<'a> {
    warps: &'a [&'a crate::workload::trace::WarpTrace],
    l1: Vec<Lru>,
    /// The L1 of each warp.
    l1_of: Vec<u16>,
    l2: Lru,
    policy: L1Policy,
    dirty: std::collections::HashSet<u64>,
    dram_sectors: u64,
    /// Per warp, the requests simulated so far: `hits[k][..done[k]]` are final.
    done: Vec<usize>,
    hits: Vec<Vec<AccessHits>>,
}

impl<'a> CacheSim<'a> {
    /// The warps of one SM: one L1, every load through it.
    pub fn new(
        warps: &'a [&'a crate::workload::trace::WarpTrace],
        l1_sectors: usize,
        l2_sectors: usize,
    ) -> Self {
        Self::with_blocks(
            warps,
            vec![0; warps.len()],
            l1_sectors,
            l2_sectors,
            L1Policy::ALL,
        )
    }

    /// Warps of several SMs: `l1_of[k]` is warp `k`'s L1 (numbered from 0), each of
    /// `l1_sectors`, sharing one L2 of `l2_sectors`, under an L1 policy.
    pub fn with_blocks(
        warps: &'a [&'a crate::workload::trace::WarpTrace],
        l1_of: Vec<u16>,
        l1_sectors: usize,
        l2_sectors: usize,
        policy: L1Policy,
    ) -> Self {
        let n_l1 = l1_of.iter().map(|&l| usize::from(l) + 1).max().unwrap_or(1);
        Self {
            warps,
            l1: (0..n_l1).map(|_| Lru::new(l1_sectors)).collect(),
            l1_of,
            l2: Lru::new(l2_sectors),
            policy,
            dirty: std::collections::HashSet::new(),
            dram_sectors: 0,
            done: vec![0; warps.len()],
            hits: warps
                .iter()
                .map(|w| vec![AccessHits::default(); w.accesses.len()])
                .collect(),
        }
    }

    /// Leaves `sectors` (in the order they were touched) in the L2 as a block that ran before
    /// the simulated ones would have: they count as neither hits nor misses, and move no DRAM
    /// sector in the result.
    pub fn warm_l2(&mut self, sectors: &[u64]) {
        let (hits, misses) = (self.l2.hits, self.l2.misses);
        for &s in sectors {
            self.l2.access(s);
        }
        (self.l2.hits, self.l2.misses) = (hits, misses);
    }

    /// Requests of warp `k` simulated so far.
    pub fn done(&self, k: usize) -> usize {
        self.done[k]
    }

    /// The hits of warp `k`'s requests (final below `done(k)`).
    pub fn hits(&self, k: usize) -> &[AccessHits] {
        &self.hits[k]
    }

    /// Runs up to `rounds` rounds of one request per warp; false once every request is done.
    pub fn run_rounds(&mut self, rounds: usize) -> bool {
        use crate::workload::trace::{Atomic, MemSpace};
        for _ in 0..rounds {
            let mut live = 0;
            for (k, w) in self.warps.iter().enumerate() {
                let Some(a) = w.accesses.get(self.done[k]) else {
                    continue;
                };
                live += 1;
                let idx = self.done[k];
                self.done[k] += 1;
                super::prefetch_ahead(w, idx, a.sector_start as usize);
                if !matches!(a.space, MemSpace::Global | MemSpace::Local) {
                    continue;
                }
                let sectors = &w.sector_ids[a.sector_start as usize..a.sector_end as usize];
                if sectors.is_empty() {
                    continue;
                }
                let cached = self.policy.caches(a);
                let l1 = &mut self.l1[usize::from(self.l1_of[k])];
                let (mut h1, mut h2, mut n2, mut dram) = (0u32, 0u32, 0u32, 0u32);
                for &s in sectors {
                    if cached && l1.access(s) {
                        h1 += 1;
                        continue;
                    }
                    n2 += 1;
                    let hit = self.l2.access(s);
                    if hit {
                        h2 += 1;
                    }
                    if a.store {
                        // A store or atomic: one write-back the first time the sector is
                        // dirtied; an atomic also fetches a sector L2 does not hold.
                        dram += u32::from(self.dirty.insert(s));
                        if a.atomic != Atomic::No && !hit {
                            dram += 1;
                        }
                    } else if !hit {
                        dram += 1;
                    }
                }
                self.dram_sectors += u64::from(dram);
                let n = sectors.len() as f32;
                self.hits[k][idx] = AccessHits {
                    l1: h1 as f32 / n,
                    l2: if n2 == 0 { 0.0 } else { h2 as f32 / n2 as f32 },
                    dram: dram as f32 / n,
                };
            }
            if live == 0 {
                return false;
            }
        }
        true
    }

    /// The hit ratios and per-request hits (call after `run_rounds` returned false).
    pub fn finish(self) -> CacheResult {
        let (h, m) = self
            .l1
            .iter()
            .fold((0, 0), |(h, m), c| (h + c.hits, m + c.misses));
        CacheResult {
            l1_hit_ratio: if h + m == 0 {
                0.0
            } else {
                h as f64 / (h + m) as f64
            },
            l2_hit_ratio: self.l2.hit_ratio(),
            l1_accesses: h + m,
            l2_accesses: self.l2.hits + self.l2.misses,
            dram_sectors: self.dram_sectors,
            hits: self.hits,
        }
    }
}
