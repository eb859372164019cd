//! Push notifications to an asker's webhook, as data and rules: what a push config is, which
//! items a change of a task pushes, which addresses a webhook may have, and when a failed
//! delivery is tried again or given up.
//!
//! An asker that does not hold a connection open names a webhook for a task (A2A's
//! TaskPushNotificationConfig); from then on every change of the task is queued for it in
//! the same transaction as the change (the store's `push_deliveries`), so a restart or a
//! crash loses nothing, and the server's sender posts the queue in order. Nothing here
//! speaks HTTP: the server renders the items on the wire and sends them.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
use std::time::Duration;

use ipnet::{Ipv4Net, Ipv6Net};
use serde::{Deserialize, Serialize};

use crate::clock::Timestamp;
use crate::settings::Push;
use crate::task::{Task, TaskId};

/// How the daemon authenticates itself to the webhook (A2A's AuthenticationInfo): sent as
/// `Authorization: {scheme} {credentials}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PushAuth {
    pub scheme: String,
    pub credentials: Option<String>,
}

/// A webhook as the asker names it, before the store gives it an id.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewPushConfig {
    /// The asker's id for the config; the store makes one up when there is none.
    pub id: Option<String>,
    pub url: String,
    /// A2A's `token`: sent back with every push so the receiver knows it is ours.
    pub token: Option<String>,
    pub auth: Option<PushAuth>,
    /// The A2A version the config was set in (`1.0`, `0.3`): its pushes are written in it.
    pub version: String,
}

/// A webhook of one task.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PushConfig {
    pub task_id: TaskId,
    pub id: String,
    pub url: String,
    pub token: Option<String>,
    pub auth: Option<PushAuth>,
    pub version: String,
    pub created_at: Timestamp,
}

/// What one push carries, by the A2A StreamResponse member it becomes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PushItem {
    /// The whole task: the first push of a config, as a stream begins with the Task.
    Task,
    StatusUpdate,
    ArtifactUpdate,
    /// An artifact update with the parts a chunk added (`append: true`); its own name in the
    /// queue, since the delivery's task holds only those parts.
    ArtifactAppend,
}

impl PushItem {
    pub fn as_str(self) -> &'static str {
        match self {
            PushItem::Task => "task",
            PushItem::StatusUpdate => "statusUpdate",
            PushItem::ArtifactUpdate => "artifactUpdate",
            PushItem::ArtifactAppend => "artifactAppend",
        }
    }

    pub fn parse(text: &str) -> Option<Self> {
        match text {
            "task" => Some(PushItem::Task),
            "statusUpdate" => Some(PushItem::StatusUpdate),
            "artifactUpdate" => Some(PushItem::ArtifactUpdate),
            "artifactAppend" => Some(PushItem::ArtifactAppend),
            _ => None,
        }
    }
}

/// One queued push: the item and the task as the item needs it, at the change that made it.
#[derive(Debug, Clone, PartialEq)]
pub struct Delivery {
    /// Queue order: a config's deliveries go out by `seq`.
    pub seq: i64,
    pub config: PushConfig,
    pub item: PushItem,
    /// The task at that change: whole for [`PushItem::Task`]; without history (and with only
    /// the one new artifact, for an artifact update) otherwise.
    pub task: Task,
    pub created_at: Timestamp,
    /// Failed attempts so far.
    pub attempts: u32,
}

/// What a delivery attempt came to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Attempted {
    Delivered,
    /// Failed; tried again at `at`.
    Retry {
        at: Timestamp,
    },
    /// Failed for longer than `push.give_up_after`; removed from the queue.
    Dropped {
        attempts: u32,
        age: Duration,
    },
    /// The delivery was no longer queued (its config was deleted meanwhile).
    Gone,
}

/// The items a change of a task pushes, in order: `before` is the task as it was (`None` for
/// a config's first push, which is the whole task). New or changed artifacts first, then the
/// status, as a stream sends them.
pub fn items_for(before: Option<&Task>, after: &Task) -> Vec<(PushItem, Task)> {
    let Some(before) = before else {
        return vec![(PushItem::Task, after.clone())];
    };
    let bare = || {
        let mut t = after.clone();
        t.history.clear();
        t.artifacts.clear();
        t
    };
    let mut items = Vec::new();
    for change in crate::task::artifact_changes(before, after) {
        let mut t = bare();
        t.artifacts.push(change.artifact);
        let item = if change.append {
            PushItem::ArtifactAppend
        } else {
            PushItem::ArtifactUpdate
        };
        items.push((item, t));
    }
    items.push((PushItem::StatusUpdate, bare()));
    items
}

/// How long after its `attempts`-th failure a delivery is tried again: `push.retry_first`,
/// doubling, at most `push.retry_max`.
pub fn retry_delay(attempts: u32, s: &Push) -> Duration {
    let doublings = attempts.saturating_sub(1).min(31);
    s.retry_first
        .saturating_mul(1u32 << doublings)
        .min(s.retry_max)
}

/// After a failure at `now`: try again, or give up once the delivery is older than
/// `push.give_up_after`.
pub fn after_failure(created_at: Timestamp, attempts: u32, now: Timestamp, s: &Push) -> Attempted {
    let age = now.since(created_at);
    if age >= s.give_up_after {
        Attempted::Dropped { attempts, age }
    } else {
        Attempted::Retry {
            at: now.plus(retry_delay(attempts, s)),
        }
    }
}

const fn v4(a: u8, b: u8, c: u8, d: u8, prefix: u8) -> Ipv4Net {
    Ipv4Net::new_assert(Ipv4Addr::new(a, b, c, d), prefix)
}

const fn v6(first: u16, second: u16, prefix: u8) -> Ipv6Net {
    Ipv6Net::new_assert(Ipv6Addr::new(first, second, 0, 0, 0, 0, 0, 0), prefix)
}

/// IPv4 ranges a webhook may not point into unless the owner allows it, with their names.
const REFUSED_V4: [(Ipv4Net, &str); 13] = [
    (v4(0, 0, 0, 0, 8), "\"this network\" (0.0.0.0/8)"),
    (v4(10, 0, 0, 0, 8), "private (10.0.0.0/8)"),
    (
        v4(100, 64, 0, 0, 10),
        "shared address space (100.64.0.0/10)",
    ),
    (v4(169, 254, 0, 0, 16), "link-local (169.254.0.0/16)"),
    (v4(172, 16, 0, 0, 12), "private (172.16.0.0/12)"),
    (
        v4(192, 0, 0, 0, 24),
        "IETF protocol assignments (192.0.0.0/24)",
    ),
    (v4(192, 0, 2, 0, 24), "documentation (192.0.2.0/24)"),
    (v4(192, 168, 0, 0, 16), "private (192.168.0.0/16)"),
    (v4(198, 18, 0, 0, 15), "benchmarking (198.18.0.0/15)"),
    (v4(198, 51, 100, 0, 24), "documentation (198.51.100.0/24)"),
    (v4(203, 0, 113, 0, 24), "documentation (203.0.113.0/24)"),
    (v4(224, 0, 0, 0, 4), "multicast (224.0.0.0/4)"),
    (v4(240, 0, 0, 0, 4), "reserved (240.0.0.0/4)"),
];

const REFUSED_V6: [(Ipv6Net, &str); 6] = [
    (v6(0, 0, 128), "unspecified (::)"),
    (v6(0x0100, 0, 64), "discard-only (100::/64)"),
    (v6(0x2001, 0x0db8, 32), "documentation (2001:db8::/32)"),
    (v6(0xfc00, 0, 7), "unique-local (fc00::/7)"),
    (v6(0xfe80, 0, 10), "link-local (fe80::/10)"),
    (v6(0xff00, 0, 8), "multicast (ff00::/8)"),
];

/// Why a webhook may not be sent to `ip`, or `None` when it may: loopback and public
/// addresses always may; private, link-local, shared and the other special ranges only when
/// the owner allows them (`push.allow_private_targets`). An IPv4 address inside IPv6
/// (`::ffff:a.b.c.d`) is judged as the IPv4 address it is.
pub fn address_refusal(ip: IpAddr, s: &Push) -> Option<&'static str> {
    if ip.is_loopback() || s.allow_private_targets {
        return None;
    }
    match ip {
        IpAddr::V4(v4) => REFUSED_V4
            .iter()
            .find(|(net, _)| net.contains(&v4))
            .map(|(_, name)| *name),
        IpAddr::V6(v6) => match v6.to_ipv4_mapped() {
            Some(v4) => address_refusal(IpAddr::V4(v4), s),
            None => REFUSED_V6
                .iter()
                .find(|(net, _)| net.contains(&v6))
                .map(|(_, name)| *name),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ip(text: &str) -> IpAddr {
        text.parse().unwrap()
    }

    #[test]
    fn loopback_and_public_pass_the_special_ranges_do_not() {
        let s = Push::default();
        for ok in [
            "127.0.0.1",
            "127.8.9.10",
            "::1",
            "8.8.8.8",
            "2606:4700::1111",
            "172.32.0.1",
        ] {
            assert_eq!(address_refusal(ip(ok), &s), None, "{ok}");
        }
        for (bad, says) in [
            ("10.1.2.3", "private"),
            ("172.16.0.1", "private"),
            ("172.31.255.255", "private"),
            ("192.168.1.1", "private"),
            ("169.254.169.254", "link-local"),
            ("100.64.0.1", "shared"),
            ("0.0.0.0", "this network"),
            ("224.0.0.1", "multicast"),
            ("fd00::1", "unique-local"),
            ("fe80::1", "link-local"),
            ("::", "unspecified"),
            ("::ffff:10.0.0.1", "private"),
            ("::ffff:169.254.169.254", "link-local"),
        ] {
            let why = address_refusal(ip(bad), &s).unwrap_or_else(|| panic!("{bad} passed"));
            assert!(why.contains(says), "{bad}: {why}");
        }
        let allowed = Push {
            allow_private_targets: true,
            ..Push::default()
        };
        assert_eq!(address_refusal(ip("10.1.2.3"), &allowed), None);
        assert_eq!(address_refusal(ip("fe80::1"), &allowed), None);
    }

    #[test]
    fn retries_double_up_to_the_cap_and_stop_after_the_bound() {
        let s = Push {
            retry_first: Duration::from_secs(1),
            retry_max: Duration::from_secs(10),
            give_up_after: Duration::from_secs(3600),
            ..Push::default()
        };
        let delays: Vec<u64> = (1..=6).map(|n| retry_delay(n, &s).as_secs()).collect();
        assert_eq!(delays, [1, 2, 4, 8, 10, 10]);
        assert_eq!(retry_delay(u32::MAX, &s), Duration::from_secs(10));
        let t0 = Timestamp::from_millis(1_000_000);
        assert_eq!(
            after_failure(t0, 3, t0.plus(Duration::from_secs(5)), &s),
            Attempted::Retry {
                at: t0.plus(Duration::from_secs(9))
            }
        );
        assert_eq!(
            after_failure(t0, 9, t0.plus(Duration::from_secs(3600)), &s),
            Attempted::Dropped {
                attempts: 9,
                age: Duration::from_secs(3600)
            }
        );
    }
}
