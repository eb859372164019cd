//! Each caller's share of the A2A requests that stay open: SSE task streams and blocking
//! SendMessage waits. Each one holds a connection, a task of the runtime and a reference to
//! its task for as long as its client stays, so without a cap one token could hold memory
//! and connections without limit. `a2a.streams_per_caller` caps how many one caller (each
//! asker, and the owner) has open at once.
//!
//! A [`Slot`] is taken before the request changes anything (a refused SendStreamingMessage
//! creates no task) and given back when it is dropped, however the stream or wait ends: the
//! task ended, the client left, the daemon stopped. A counter per caller under a mutex is
//! all this needs; the cap is read per request, so a changed setting counts from the next
//! request on, and the streams already open stay open.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use taskkeeper_core::limits::LimitExceeded;

use super::rpc::RpcError;

#[derive(Clone, Debug, Default)]
pub(crate) struct Slots {
    open: Arc<Mutex<HashMap<String, u32>>>,
}

/// One open stream or wait of `caller`; dropping it gives the slot back.
#[derive(Debug)]
pub(crate) struct Slot {
    slots: Slots,
    caller: String,
}

impl Slots {
    fn counts(&self) -> MutexGuard<'_, HashMap<String, u32>> {
        self.open.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// A slot for `caller` if it has fewer than `max` open; else the refusal to answer.
    pub(crate) fn take(&self, caller: &str, max: u32) -> Result<Slot, RpcError> {
        let mut counts = self.counts();
        let open = counts.entry(caller.to_owned()).or_insert(0);
        if *open >= max {
            return Err(RpcError::limit(&LimitExceeded::Streams {
                caller: caller.to_owned(),
                open: u64::from(*open),
                max: u64::from(max),
            })
            .with("caller", caller));
        }
        *open += 1;
        Ok(Slot {
            slots: self.clone(),
            caller: caller.to_owned(),
        })
    }
}

impl Drop for Slot {
    fn drop(&mut self) {
        let mut counts = self.slots.counts();
        if let Some(open) = counts.get_mut(&self.caller) {
            *open = open.saturating_sub(1);
            if *open == 0 {
                counts.remove(&self.caller);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

    use super::*;

    #[test]
    fn a_caller_gets_at_most_max_and_a_dropped_slot_is_given_back() {
        let slots = Slots::default();
        let a = slots.take("alice", 2).unwrap();
        let _b = slots.take("alice", 2).unwrap();
        let refused = slots.take("alice", 2).unwrap_err();
        assert_eq!(refused.reason, Some("STREAMS_PER_CALLER_LIMIT"));
        let setting = taskkeeper_core::limits::Limit::StreamsPerCaller.setting();
        assert_eq!(refused.metadata["setting"], setting);
        assert!(refused.message.contains(setting), "{}", refused.message);
        // Another caller has its own share.
        let _c = slots.take("bob", 2).unwrap();
        drop(a);
        let _d = slots.take("alice", 2).unwrap();
        assert!(slots.take("alice", 2).is_err());
    }

    #[test]
    fn the_last_slot_of_a_caller_leaves_nothing_behind() {
        let slots = Slots::default();
        drop(slots.take("alice", 1).unwrap());
        assert!(slots.counts().is_empty());
    }
}
