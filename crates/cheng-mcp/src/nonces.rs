//! Approvals already used: the memory that makes a sealed `requestState` single-use.
//!
//! Every sealed state carries a nonce; [`crate::approve::Sealer::open`] spends it here on first
//! use, so a replayed state (same `requestState`, same `inputResponses`) runs nothing. The memory
//! is bounded: a nonce is forgotten once its state has expired (the sealer refuses it as expired
//! from then on anyway), and at most [`MAX_SPENT`] unexpired nonces are held; past that, new
//! approvals are refused until older ones expire, never forgotten early (forgetting one early
//! would let it be replayed).

use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap};

/// The most unexpired spent nonces held at once (about 3 MiB at the most).
pub const MAX_SPENT: usize = 65_536;

/// Why a nonce could not be spent.
#[derive(Debug, PartialEq, Eq)]
pub enum Unspendable {
    /// It was spent before: the approval was already used.
    AlreadySpent,
    /// [`MAX_SPENT`] unexpired approvals were used already; the oldest expire within the state's
    /// lifetime.
    Full,
}

/// Spent nonces with the time (unix milliseconds) after which their states no longer open.
pub struct SpentNonces {
    expiry: HashMap<u64, i64>,
    /// The same entries, soonest expiry first, so expired ones are dropped without a scan.
    by_expiry: BinaryHeap<Reverse<(i64, u64)>>,
    cap: usize,
}

impl Default for SpentNonces {
    fn default() -> Self {
        SpentNonces::with_cap(MAX_SPENT)
    }
}

impl SpentNonces {
    /// A memory holding at most `cap` unexpired nonces.
    pub fn with_cap(cap: usize) -> SpentNonces {
        SpentNonces {
            expiry: HashMap::new(),
            by_expiry: BinaryHeap::new(),
            cap,
        }
    }

    /// Spends `nonce`, whose state expires at `expires_ms`; `now_ms` is the current time.
    pub fn spend(&mut self, nonce: u64, expires_ms: i64, now_ms: i64) -> Result<(), Unspendable> {
        self.forget_expired(now_ms);
        if self.expiry.contains_key(&nonce) {
            return Err(Unspendable::AlreadySpent);
        }
        if self.expiry.len() >= self.cap {
            return Err(Unspendable::Full);
        }
        self.expiry.insert(nonce, expires_ms);
        self.by_expiry.push(Reverse((expires_ms, nonce)));
        Ok(())
    }

    /// How many nonces are held.
    pub fn len(&self) -> usize {
        self.expiry.len()
    }

    pub fn is_empty(&self) -> bool {
        self.expiry.is_empty()
    }

    /// Drops the nonces whose states expired before `now_ms`.
    fn forget_expired(&mut self, now_ms: i64) {
        while let Some(Reverse((expires, nonce))) = self.by_expiry.peek().copied() {
            if expires >= now_ms {
                break;
            }
            self.by_expiry.pop();
            self.expiry.remove(&nonce);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_nonce_is_spent_once() {
        let mut spent = SpentNonces::default();
        assert_eq!(spent.spend(7, 1_000, 0), Ok(()));
        assert_eq!(spent.spend(7, 1_000, 10), Err(Unspendable::AlreadySpent));
        assert_eq!(spent.spend(8, 1_000, 10), Ok(()));
        // Right up to its expiry it is still remembered.
        assert_eq!(spent.spend(7, 1_000, 1_000), Err(Unspendable::AlreadySpent));
    }

    #[test]
    fn expired_nonces_are_forgotten_and_the_memory_stays_bounded() {
        let mut spent = SpentNonces::with_cap(3);
        for nonce in 0..3 {
            assert_eq!(spent.spend(nonce, 100 + nonce as i64, 0), Ok(()));
        }
        // Full of unexpired nonces: a new approval is refused, none is forgotten early.
        assert_eq!(spent.spend(3, 500, 50), Err(Unspendable::Full));
        assert_eq!(spent.spend(0, 100, 50), Err(Unspendable::AlreadySpent));
        assert_eq!(spent.len(), 3);
        // Nonces 0 and 1 expired (100, 101 < 102): room again.
        assert_eq!(spent.spend(3, 500, 102), Ok(()));
        assert_eq!(spent.len(), 2);
        // Many approvals over a long time hold only the unexpired ones.
        let mut spent = SpentNonces::with_cap(10);
        for n in 0..10_000u64 {
            let now = n as i64 * 10;
            assert_eq!(spent.spend(n, now + 50, now), Ok(()));
            assert!(spent.len() <= 6, "{} nonces held at {now}", spent.len());
        }
    }
}
