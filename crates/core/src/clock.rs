//! Time, injected. Every rule that depends on time takes a [`Timestamp`] from a [`Clock`] so
//! tests can script the wall clock instead of sleeping.
//!
//! Deadlines are wall-clock milliseconds since the Unix epoch: they are what the store keeps,
//! so a restart resumes where it was (reliability.md §8).

use std::fmt;
use std::sync::Arc;
use std::sync::atomic::{AtomicI64, Ordering};
use std::time::Duration;

use chrono::{DateTime, SecondsFormat, TimeZone, Utc};
use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// A wall-clock instant in whole milliseconds since the Unix epoch (UTC).
///
/// On the wire it is ISO 8601 with milliseconds and a `Z` suffix, as A2A asks (spec §5.6.1;
/// docs/a2a.md §5).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS), ts(type = "string"))]
pub struct Timestamp(i64);

impl Timestamp {
    pub const fn from_millis(ms: i64) -> Self {
        Self(ms)
    }

    pub const fn as_millis(self) -> i64 {
        self.0
    }

    /// `self + d`, saturating instead of overflowing.
    pub fn plus(self, d: Duration) -> Self {
        let ms = i64::try_from(d.as_millis()).unwrap_or(i64::MAX);
        Self(self.0.saturating_add(ms))
    }

    /// `self - d`, saturating instead of overflowing.
    pub fn minus(self, d: Duration) -> Self {
        let ms = i64::try_from(d.as_millis()).unwrap_or(i64::MAX);
        Self(self.0.saturating_sub(ms))
    }

    /// The time from `earlier` to `self`, zero if `earlier` is later.
    pub fn since(self, earlier: Timestamp) -> Duration {
        Duration::from_millis(u64::try_from(self.0.saturating_sub(earlier.0)).unwrap_or(0))
    }

    pub fn to_datetime(self) -> DateTime<Utc> {
        Utc.timestamp_millis_opt(self.0)
            .single()
            .unwrap_or(DateTime::<Utc>::MIN_UTC)
    }

    /// ISO 8601, UTC, millisecond precision, `Z` suffix.
    pub fn to_rfc3339(self) -> String {
        self.to_datetime()
            .to_rfc3339_opts(SecondsFormat::Millis, true)
    }

    pub fn parse_rfc3339(text: &str) -> Option<Self> {
        DateTime::parse_from_rfc3339(text)
            .ok()
            .map(|t| Self(t.with_timezone(&Utc).timestamp_millis()))
    }
}

impl fmt::Display for Timestamp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.to_rfc3339())
    }
}

impl Serialize for Timestamp {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.to_rfc3339())
    }
}

impl<'de> Deserialize<'de> for Timestamp {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let text = String::deserialize(d)?;
        Self::parse_rfc3339(&text)
            .ok_or_else(|| serde::de::Error::custom(format!("not an ISO 8601 timestamp: {text:?}")))
    }
}

/// Where "now" comes from.
pub trait Clock: Send + Sync + fmt::Debug {
    /// The wall clock: it jumps after a suspend and can step back.
    fn now(&self) -> Timestamp;
    /// A monotonic clock that does not count time the machine slept (Linux, macOS), from an
    /// arbitrary origin. Compared with the wall clock, it tells a suspend from a wait.
    fn monotonic(&self) -> Duration;
}

/// The real wall clock.
#[derive(Debug, Clone, Copy, Default)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now(&self) -> Timestamp {
        Timestamp(Utc::now().timestamp_millis())
    }

    fn monotonic(&self) -> Duration {
        static ORIGIN: std::sync::OnceLock<std::time::Instant> = std::sync::OnceLock::new();
        ORIGIN.get_or_init(std::time::Instant::now).elapsed()
    }
}

/// A clock that only moves when told to; clones share the same time. Its wall and
/// monotonic readings move together on [`advance`](Self::advance), and apart on
/// [`suspend`](Self::suspend) and [`step_wall`](Self::step_wall).
#[derive(Debug, Clone)]
pub struct ManualClock {
    wall: Arc<AtomicI64>,
    mono: Arc<AtomicI64>,
}

fn ms(d: Duration) -> i64 {
    i64::try_from(d.as_millis()).unwrap_or(i64::MAX)
}

impl ManualClock {
    pub fn new(start: Timestamp) -> Self {
        Self {
            wall: Arc::new(AtomicI64::new(start.0)),
            mono: Arc::new(AtomicI64::new(0)),
        }
    }

    /// Time passes while the machine is awake.
    pub fn advance(&self, d: Duration) {
        self.wall.fetch_add(ms(d), Ordering::SeqCst);
        self.mono.fetch_add(ms(d), Ordering::SeqCst);
    }

    /// The machine sleeps for `d`: the wall clock moves, the monotonic clock does not.
    pub fn suspend(&self, d: Duration) {
        self.wall.fetch_add(ms(d), Ordering::SeqCst);
    }

    /// The wall clock is set forward (positive) or back (negative) by `delta_ms`.
    pub fn step_wall(&self, delta_ms: i64) {
        self.wall.fetch_add(delta_ms, Ordering::SeqCst);
    }

    pub fn set(&self, t: Timestamp) {
        self.wall.store(t.0, Ordering::SeqCst);
    }
}

impl Clock for ManualClock {
    fn now(&self) -> Timestamp {
        Timestamp(self.wall.load(Ordering::SeqCst))
    }

    fn monotonic(&self) -> Duration {
        Duration::from_millis(u64::try_from(self.mono.load(Ordering::SeqCst)).unwrap_or(0))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_through_iso_8601_with_millis() {
        let t = Timestamp::from_millis(1_796_033_673_887);
        assert_eq!(t.to_rfc3339(), "2026-11-30T10:14:33.887Z");
        assert_eq!(Timestamp::parse_rfc3339(&t.to_rfc3339()), Some(t));
        assert_eq!(Timestamp::parse_rfc3339("yesterday"), None);
    }

    #[test]
    fn manual_clock_moves_only_when_told() {
        let c = ManualClock::new(Timestamp::from_millis(1000));
        let shared = c.clone();
        c.advance(Duration::from_secs(2));
        assert_eq!(shared.now(), Timestamp::from_millis(3000));
        assert_eq!(
            shared.now().since(Timestamp::from_millis(500)),
            Duration::from_millis(2500)
        );
        assert_eq!(
            Timestamp::from_millis(5).since(Timestamp::from_millis(9)),
            Duration::ZERO
        );
    }
}
