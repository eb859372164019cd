//! Push notifications to an asker's webhook, as data and rules: what a push config is, which
//! items a change of a task pushes, which addresses a webhook may have, and when a failed
//! delivery is tried again or given up.
//!
//! An asker that does not hold a connection open names a webhook for a task (A2A's
//! TaskPushNotificationConfig); from then on every change of the task is queued for it in
//! the same transaction as the change (the store's `push_deliveries`), so a restart or a
//! crash loses nothing, and the server's sender posts the queue in order. Nothing here
//! speaks HTTP: the server renders the items on the wire and sends them.
//!
//! Which addresses: the daemon posts what an asker wrote, with the `Authorization` header
//! the asker chose, to the address the asker named, again and again for a day. On this
//! machine that could reach a local service that trusts loopback (an admin endpoint, the
//! daemon itself), and on the owner's network a router or a metadata service. So a webhook
//! goes to a public address; this machine and the private and special ranges only when the
//! owner allows them, and the daemon's own port never ([`target_refusal`]). The address is
//! judged as a connection would use it: every IPv4 spelling is normalised by the URL parser
//! before it gets here, names are resolved by the caller, and an IPv6 form that stands for an
//! IPv4 address (mapped, compatible, translated, NAT64, 6to4, Teredo) is judged as that
//! address.

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

const fn v6(segments: [u16; 3], prefix: u8) -> Ipv6Net {
    let [a, b, c] = segments;
    Ipv6Net::new_assert(Ipv6Addr::new(a, b, c, 0, 0, 0, 0, 0), prefix)
}

/// IPv4 ranges that reach this machine itself: loopback, and "this network", which Linux
/// connects to as if it were loopback (`http://0.0.0.0:PORT/` reaches a local service).
const LOCAL_V4: [(Ipv4Net, &str); 2] = [
    (v4(127, 0, 0, 0, 8), "loopback (127.0.0.0/8)"),
    (
        v4(0, 0, 0, 0, 8),
        "\"this network\" (0.0.0.0/8), which reaches this machine",
    ),
];

/// IPv4 ranges a webhook may not point into unless the owner allows it, with their names.
const REFUSED_V4: [(Ipv4Net, &str); 12] = [
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

/// IPv6 ranges a webhook may not point into unless the owner allows it (the ones that carry
/// an IPv4 address are judged by that address, [`CARRIERS`]).
const REFUSED_V6: [(Ipv6Net, &str); 7] = [
    (v6([0x0100, 0, 0], 64), "discard-only (100::/64)"),
    (
        v6([0x64, 0xff9b, 1], 48),
        "local-use IPv4/IPv6 translation (64:ff9b:1::/48)",
    ),
    (v6([0x2001, 0x0db8, 0], 32), "documentation (2001:db8::/32)"),
    (v6([0xfc00, 0, 0], 7), "unique-local (fc00::/7)"),
    (v6([0xfe80, 0, 0], 10), "link-local (fe80::/10)"),
    (v6([0xfec0, 0, 0], 10), "site-local (fec0::/10)"),
    (v6([0xff00, 0, 0], 8), "multicast (ff00::/8)"),
];

/// Where an IPv6 transition form keeps the IPv4 address it stands for.
#[derive(Clone, Copy)]
enum Carried {
    /// The last 32 bits.
    Last,
    /// 6to4: the 32 bits after the `2002` prefix.
    SixToFour,
    /// Teredo: the client's address, the last 32 bits inverted.
    TeredoClient,
}

/// The IPv6 forms that stand for an IPv4 address: each is judged as that address, so
/// `[::ffff:127.0.0.1]` is loopback and `[64:ff9b::a9fe:a9fe]` link-local. `::` and `::1`,
/// inside the IPv4-compatible range, are judged before it, as themselves.
const CARRIERS: [(Ipv6Net, &str, Carried); 6] = [
    (
        Ipv6Net::new_assert(Ipv6Addr::new(0, 0, 0, 0, 0, 0xffff, 0, 0), 96),
        "IPv4-mapped (::ffff:0:0/96)",
        Carried::Last,
    ),
    (
        Ipv6Net::new_assert(Ipv6Addr::new(0, 0, 0, 0, 0xffff, 0, 0, 0), 96),
        "IPv4-translated (::ffff:0:0:0/96)",
        Carried::Last,
    ),
    (
        Ipv6Net::new_assert(Ipv6Addr::UNSPECIFIED, 96),
        "IPv4-compatible (::/96)",
        Carried::Last,
    ),
    (
        v6([0x64, 0xff9b, 0], 96),
        "NAT64 (64:ff9b::/96)",
        Carried::Last,
    ),
    (
        v6([0x2002, 0, 0], 16),
        "6to4 (2002::/16)",
        Carried::SixToFour,
    ),
    (
        v6([0x2001, 0, 0], 32),
        "Teredo (2001::/32)",
        Carried::TeredoClient,
    ),
];

/// The IPv4 address an IPv6 transition form stands for, and the form's name.
fn carried_v4(ip: Ipv6Addr) -> Option<(Ipv4Addr, &'static str)> {
    let (_, name, how) = CARRIERS.iter().find(|(net, _, _)| net.contains(&ip))?;
    let o = ip.octets();
    let v4 = match how {
        Carried::Last => Ipv4Addr::new(o[12], o[13], o[14], o[15]),
        Carried::SixToFour => Ipv4Addr::new(o[2], o[3], o[4], o[5]),
        Carried::TeredoClient => Ipv4Addr::new(!o[12], !o[13], !o[14], !o[15]),
    };
    Some((v4, name))
}

/// What kind of address a webhook points at.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    /// This machine: loopback, or an address the kernel connects to as loopback.
    Local(&'static str),
    /// Private, link-local, shared, documentation and the other special ranges.
    Special(&'static str),
    Public,
}

fn kind_v4(ip: Ipv4Addr) -> Kind {
    if let Some((_, name)) = LOCAL_V4.iter().find(|(net, _)| net.contains(&ip)) {
        return Kind::Local(name);
    }
    REFUSED_V4
        .iter()
        .find(|(net, _)| net.contains(&ip))
        .map_or(Kind::Public, |(_, name)| Kind::Special(name))
}

/// The kind of `ip`, and the transition form it was found inside, if any.
fn kind(ip: IpAddr) -> (Kind, Option<&'static str>) {
    match ip {
        IpAddr::V4(v4) => (kind_v4(v4), None),
        IpAddr::V6(v6) if v6.is_loopback() => (Kind::Local("loopback (::1)"), None),
        IpAddr::V6(v6) if v6.is_unspecified() => (
            Kind::Local("unspecified (::), which reaches this machine"),
            None,
        ),
        IpAddr::V6(v6) => match carried_v4(v6) {
            Some((v4, form)) => (kind_v4(v4), Some(form)),
            None => (
                REFUSED_V6
                    .iter()
                    .find(|(net, _)| net.contains(&v6))
                    .map_or(Kind::Public, |(_, name)| Kind::Special(name)),
                None,
            ),
        },
    }
}

/// Why a webhook may not be sent to an address; the words name the range and what allows it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TargetRefused {
    #[error(
        "{}{range}, this machine's own services, where push notifications go only when the owner allows them (`taskkeeper settings set push.allow_loopback_targets true`)",
        carried(*.form)
    )]
    Loopback {
        range: &'static str,
        form: Option<&'static str>,
    },
    #[error(
        "{}{range}, where push notifications are not sent; use a public address (the owner may allow such addresses with `taskkeeper settings set push.allow_private_targets true`)",
        carried(*.form)
    )]
    Special {
        range: &'static str,
        form: Option<&'static str>,
    },
    #[error(
        "{}{range} on the daemon's own port: the daemon never sends push notifications to itself, whatever the settings",
        carried(*.form)
    )]
    Daemon {
        range: &'static str,
        form: Option<&'static str>,
    },
}

fn carried(form: Option<&'static str>) -> String {
    form.map(|f| format!("{f} for ")).unwrap_or_default()
}

/// Whether a webhook may be sent to `ip`, the address itself or the IPv4 address one of the
/// IPv6 transition forms stands for: public addresses may; this machine (loopback, and
/// `0.0.0.0` or `::`, which connect to it) only when the owner allows it
/// (`push.allow_loopback_targets`), and never on the daemon's own port (`on_daemon_port`:
/// the webhook's port is the one the daemon listens on); private, link-local, shared and the
/// other special ranges only when the owner allows them (`push.allow_private_targets`).
/// The address is the one a connection would use: the caller parses and resolves first.
pub fn target_refusal(ip: IpAddr, on_daemon_port: bool, s: &Push) -> Option<TargetRefused> {
    match kind(ip) {
        (Kind::Public, _) => None,
        (Kind::Local(range), form) if on_daemon_port => Some(TargetRefused::Daemon { range, form }),
        (Kind::Local(_), _) if s.allow_loopback_targets => None,
        (Kind::Local(range), form) => Some(TargetRefused::Loopback { range, form }),
        (Kind::Special(_), _) if s.allow_private_targets => None,
        (Kind::Special(range), form) => Some(TargetRefused::Special { range, form }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ip(text: &str) -> IpAddr {
        text.parse().unwrap()
    }

    fn refusal(text: &str, s: &Push) -> Option<String> {
        target_refusal(ip(text), false, s).map(|r| r.to_string())
    }

    #[test]
    fn public_addresses_pass_and_the_special_ranges_do_not() {
        let s = Push::default();
        for ok in [
            "8.8.8.8",
            "2606:4700::1111",
            "172.32.0.1",
            "::ffff:8.8.8.8",
            "64:ff9b::808:808",
            "2002:808:808::1",
        ] {
            assert_eq!(refusal(ok, &s), None, "{ok}");
        }
        for (bad, says) in [
            ("10.1.2.3", "private"),
            ("172.16.0.1", "private"),
            ("172.31.255.255", "private"),
            ("192.168.1.1", "private"),
            ("169.254.169.254", "link-local"),
            ("100.64.0.1", "shared"),
            ("224.0.0.1", "multicast"),
            ("fd00::1", "unique-local"),
            ("fe80::1", "link-local"),
            ("fec0::1", "site-local"),
            ("64:ff9b:1::a00:1", "local-use IPv4/IPv6 translation"),
            ("::ffff:10.0.0.1", "IPv4-mapped (::ffff:0:0/96) for private"),
            (
                "::169.254.169.254",
                "IPv4-compatible (::/96) for link-local",
            ),
            (
                "::ffff:0:a00:1",
                "IPv4-translated (::ffff:0:0:0/96) for private",
            ),
            ("64:ff9b::a9fe:a9fe", "NAT64 (64:ff9b::/96) for link-local"),
            (
                "2002:c0a8:101::1",
                "6to4 (2002::/16) for private (192.168.0.0/16)",
            ),
            // Teredo's client 192.168.1.1, stored inverted.
            (
                "2001:0:4136:e378:8000:63bf:3f57:fefe",
                "Teredo (2001::/32) for private (192.168.0.0/16)",
            ),
        ] {
            let why = refusal(bad, &s).unwrap_or_else(|| panic!("{bad} passed"));
            assert!(why.contains(says), "{bad}: {why}");
            assert!(why.contains("push.allow_private_targets"), "{bad}: {why}");
        }
        let allowed = Push {
            allow_private_targets: true,
            ..Push::default()
        };
        for now_ok in ["10.1.2.3", "fe80::1", "64:ff9b::a9fe:a9fe", "2002:a00:1::"] {
            assert_eq!(refusal(now_ok, &allowed), None, "{now_ok}");
        }
        // Allowing private ranges does not allow this machine.
        assert!(refusal("127.0.0.1", &allowed).is_some());
        assert!(refusal("0.0.0.0", &allowed).is_some());
    }

    #[test]
    fn this_machine_in_any_form_only_when_the_owner_allows_it_and_never_on_the_daemons_port() {
        let this_machine = [
            ("127.0.0.1", "loopback (127.0.0.0/8)"),
            ("127.8.9.10", "loopback (127.0.0.0/8)"),
            ("::1", "loopback (::1)"),
            ("0.0.0.0", "this network"),
            ("::", "unspecified (::)"),
            (
                "::ffff:127.0.0.1",
                "IPv4-mapped (::ffff:0:0/96) for loopback",
            ),
            ("::127.0.0.1", "IPv4-compatible (::/96) for loopback"),
            (
                "::ffff:0:7f00:1",
                "IPv4-translated (::ffff:0:0:0/96) for loopback",
            ),
            ("64:ff9b::7f00:1", "NAT64 (64:ff9b::/96) for loopback"),
            ("2002:7f00:1::", "6to4 (2002::/16) for loopback"),
            (
                "2001:0:4136:e378:8000:63bf:80ff:fffe",
                "Teredo (2001::/32) for loopback",
            ),
        ];
        let s = Push::default();
        for (addr, says) in this_machine {
            let why = refusal(addr, &s).unwrap_or_else(|| panic!("{addr} passed"));
            assert!(why.contains(says), "{addr}: {why}");
            assert!(why.contains("push.allow_loopback_targets"), "{addr}: {why}");
        }
        let loopback = Push {
            allow_loopback_targets: true,
            allow_private_targets: true,
            ..Push::default()
        };
        for (addr, says) in this_machine {
            assert_eq!(refusal(addr, &loopback), None, "{addr}");
            let why = target_refusal(ip(addr), true, &loopback)
                .unwrap_or_else(|| panic!("{addr} on the daemon's port passed"))
                .to_string();
            assert!(
                why.contains(says) && why.contains("the daemon's own port"),
                "{addr}: {why}"
            );
        }
        // The daemon's port elsewhere is just a port.
        assert_eq!(target_refusal(ip("8.8.8.8"), true, &s), None);
        assert_eq!(target_refusal(ip("10.0.0.1"), true, &loopback), None);
        // Loopback allowed does not allow the private ranges.
        let only_loopback = Push {
            allow_loopback_targets: true,
            ..Push::default()
        };
        assert!(refusal("10.0.0.1", &only_loopback).is_some());
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
