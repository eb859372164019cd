//! Every setting the owner can tune, described once: [`SETTINGS`], a table of key, kind with
//! its range and units, default, label, help and group, which [`Settings::set`] parses and
//! checks by, [`Settings::default`] starts from, the owner API serves as the catalogue
//! (`GET /api/settings/catalogue`), the settings panel draws its fields from and
//! `taskkeeper settings list` prints. A new setting is one entry in the table (and the typed
//! field the code reads it from).
//!
//! Settings are kept in the store as text under their keys; [`Settings`] is the typed view.
//! Durations are written as a number and a unit: `s`, `m`, `h` or `d` (`90s`, `5m`, `24h`,
//! `7d`); seconds exist so tests and demos can run a whole ladder quickly. A ladder is a
//! comma-separated list of durations.

use std::fmt;
use std::path::PathBuf;
use std::time::Duration;

use crate::desk::AgentKind;
use crate::digest::OfferAt;

/// `reminders.paused`: every reminder paused (the tray's, the window's and the CLI's pause).
pub const REMINDERS_PAUSED: &str = "reminders.paused";
/// `notifications.enabled`: desktop notifications on at all.
pub const NOTIFICATIONS_ENABLED: &str = "notifications.enabled";
/// `app.shortcut`: the desktop app's global shortcut (`off` for none).
pub const APP_SHORTCUT: &str = "app.shortcut";

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Settings {
    /// First reminder after this much quiet, for Claude Code sessions.
    pub first_after_claude_code: Duration,
    /// First reminder after this much quiet, for every other agent kind.
    pub first_after_default: Duration,
    /// The further reminders, each after this much more quiet.
    pub ladder: Vec<Duration>,
    /// The task stalls this long after the last reminder.
    pub stall_after: Duration,
    /// Watchdog messages into one session per rolling hour.
    pub hourly_cap: u32,
    /// An open task is canceled as expired this long after it was created.
    pub expire_after: Duration,
    /// Ended tasks are pruned this long after they ended.
    pub keep_ended: Duration,
    /// The longest a blocking SendMessage waits before it answers with the current task.
    pub blocking_wait_max: Duration,
    /// At most this many A2A streams and blocking waits open at once per caller (each
    /// asker, and the owner).
    pub streams_per_caller: u32,
    pub notifications_enabled: bool,
    /// A session in a directory no desk covers gets a desk of its own.
    pub create_desks: bool,
    /// The owner paused all reminders.
    pub reminders_paused: bool,
    /// How much any one caller may make Taskkeeper keep.
    pub limits: Limits,
    /// Push notifications to askers' webhooks.
    pub push: Push,
    /// When the daemon offers a digest by itself.
    pub digest_at: crate::digest::OfferAt,
    /// Which desktop notifications the owner gets, and the app's shortcut.
    pub desktop: Desktop,
    /// The listener for askers on other machines (its own module parses its settings).
    pub network: crate::network::Network,
}

impl Default for Settings {
    /// Every setting at its default in [`SETTINGS`] (`every_default_in_the_table_is_taken`).
    fn default() -> Self {
        let mut s = Settings::blank();
        for row in SETTINGS {
            // Each default is taken (the test above): an error here cannot happen.
            let _ = row.set(&mut s, row.default);
        }
        s
    }
}

/// A refused setting: the message names the key and what it accepts.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SettingError {
    #[error("unknown setting {key:?}; the settings are: {}", keys().collect::<Vec<_>>().join(", "))]
    UnknownKey { key: String },
    #[error("invalid value {value:?} for {key}: {expected}")]
    InvalidValue {
        key: String,
        value: String,
        expected: String,
    },
}

impl SettingError {
    pub(crate) fn unknown(key: &str) -> Self {
        SettingError::UnknownKey {
            key: key.to_owned(),
        }
    }

    pub(crate) fn invalid(key: &str, value: &str, expected: &'static str) -> Self {
        SettingError::InvalidValue {
            key: key.to_owned(),
            value: value.to_owned(),
            expected: expected.to_owned(),
        }
    }
}

// ---- the table ----------------------------------------------------------------------------

/// Where a setting shows in the settings panel.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Group {
    Reminders,
    Tasks,
    App,
    Limits,
    Push,
    Digest,
    Network,
}

impl Group {
    /// Its heading.
    pub fn name(self) -> &'static str {
        match self {
            Group::Reminders => "Reminders",
            Group::Tasks => "Tasks",
            Group::App => "App",
            Group::Limits => "Limits",
            Group::Push => "Push notifications",
            Group::Digest => "Digest",
            Group::Network => "Askers on other machines",
        }
    }
}

/// What a setting's value is, with its range: how it is written and checked.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// A number and a unit of [`DURATION_UNITS`], more than zero.
    Duration,
    /// Durations, comma-separated, at least one.
    Ladder,
    /// A whole number from `min` to `max`.
    Count { min: u64, max: u64 },
    /// A number of bytes and a unit of [`BYTE_UNITS`] (none: bytes), from `min` to `max` bytes.
    Bytes { min: u64, max: u64 },
    /// `true` or `false`.
    Bool,
    /// Modifiers and one key joined by `+`, or `off`.
    Shortcut,
    /// `off`, `login`, or a local time of day `HH:MM`.
    TimeOfDay,
    /// Words the setting's own module reads (an address, a URL, a path, one of a few names),
    /// in the forms it says.
    Text { expected: &'static str },
}

/// The units a duration takes, shortest first.
pub const DURATION_UNITS: [&str; 4] = ["s", "m", "h", "d"];
/// The units a size takes, smallest first.
pub const BYTE_UNITS: [&str; 3] = ["B", "KiB", "MiB"];

impl Kind {
    /// What a value of this kind is, in the words a refusal uses.
    pub fn expected(self) -> String {
        match self {
            Kind::Duration => "a duration such as 90s, 5m, 2h or 7d (more than zero)".to_owned(),
            Kind::Ladder => {
                "a comma-separated list of durations such as 1m,2m,5m,10m (at least one step)"
                    .to_owned()
            }
            Kind::Count { min, max } => format!("a whole number from {min} to {max}"),
            Kind::Bytes { min, max } => format!(
                "a size such as 4096B, 256KiB or 2MiB (from {} to {}; B, KiB or MiB)",
                format_bytes(min),
                format_bytes(max)
            ),
            Kind::Bool => "true or false".to_owned(),
            Kind::Shortcut => SHORTCUT_HELP.to_owned(),
            Kind::TimeOfDay => crate::digest::OFFER_HELP.to_owned(),
            Kind::Text { expected } => expected.to_owned(),
        }
    }

    /// The units a value is written in (none for a plain number or a word).
    pub fn units(self) -> &'static [&'static str] {
        match self {
            Kind::Duration | Kind::Ladder => &DURATION_UNITS,
            Kind::Bytes { .. } => &BYTE_UNITS,
            _ => &[],
        }
    }
}

/// Reads a setting's typed value from [`Settings`] and writes it there.
type Access<T> = (fn(&Settings) -> T, fn(&mut Settings, T));

/// Where a setting lives in [`Settings`], and so what it is.
#[derive(Debug, Clone, Copy)]
enum Field {
    Duration(Access<Duration>),
    Ladder(Access<Vec<Duration>>),
    Count(u64, u64, Access<u64>),
    Bytes(u64, u64, Access<u64>),
    Bool(Access<bool>),
    Shortcut(Access<Option<String>>),
    TimeOfDay(Access<OfferAt>),
    /// Read and written by the module that owns it, by key (`crate::network`).
    Text {
        expected: &'static str,
        get: fn(&Settings, &str) -> String,
        set: fn(&mut Settings, &str, &str) -> Result<(), SettingError>,
    },
}

/// The `push.extra_roots` path (`Push::extra_roots`).
const fn push_extra_roots() -> Field {
    Field::Text {
        expected: crate::network::PATH_HELP,
        get: |s, _| crate::network::path_text(&s.push.extra_roots),
        set: |s, key, value| {
            s.push.extra_roots = crate::network::path_value(value)
                .ok_or_else(|| SettingError::invalid(key, value, crate::network::PATH_HELP))?;
            Ok(())
        },
    }
}

/// A `network.*` setting, read and written by `crate::network` (it checks what it takes).
const fn network(expected: &'static str) -> Field {
    Field::Text {
        expected,
        get: |s, key| s.network.get(key).unwrap_or_default(),
        set: |s, key, value| {
            s.network.set(key, value).map_err(|refused| match refused {
                crate::network::Refused::Unknown => SettingError::unknown(key),
                crate::network::Refused::Invalid { expected } => {
                    SettingError::invalid(key, value, expected)
                }
            })
        },
    }
}

/// The field at `path` in [`Settings`], read and written as it is.
macro_rules! at {
    ($($path:ident).+) => {
        (|s: &Settings| s.$($path).+, |s: &mut Settings, v| s.$($path).+ = v)
    };
}

/// A `u32` field at `path`, as a count (the table's range keeps it within `u32`).
macro_rules! at_u32 {
    ($($path:ident).+) => {
        (
            |s: &Settings| u64::from(s.$($path).+),
            |s: &mut Settings, v: u64| s.$($path).+ = u32::try_from(v).unwrap_or(u32::MAX),
        )
    };
}

/// One setting, as everything that shows or checks it reads it.
#[derive(Debug, Clone, Copy)]
pub struct Setting {
    pub key: &'static str,
    pub group: Group,
    /// Its name in the settings panel.
    pub label: &'static str,
    /// What it does, in a sentence (its accepted forms are [`Setting::kind`]'s).
    pub help: &'static str,
    /// Its value until the owner changes it, as text.
    pub default: &'static str,
    /// Listed by the settings panel and `taskkeeper settings list`; a setting that is not
    /// is still read and written by its key.
    pub shown: bool,
    field: Field,
}

const KIB: u64 = 1024;
const MIB: u64 = 1024 * 1024;

mod table;
pub use table::SETTINGS;

/// Every setting's key, in the table's order.
pub fn keys() -> impl Iterator<Item = &'static str> {
    SETTINGS.iter().map(|row| row.key)
}

/// The setting called `key`.
pub fn setting(key: &str) -> Option<&'static Setting> {
    SETTINGS.iter().find(|row| row.key == key)
}

impl Setting {
    /// What its value is, with its range.
    pub fn kind(&self) -> Kind {
        match self.field {
            Field::Duration(_) => Kind::Duration,
            Field::Ladder(_) => Kind::Ladder,
            Field::Count(min, max, _) => Kind::Count { min, max },
            Field::Bytes(min, max, _) => Kind::Bytes { min, max },
            Field::Bool(_) => Kind::Bool,
            Field::Shortcut(_) => Kind::Shortcut,
            Field::TimeOfDay(_) => Kind::TimeOfDay,
            Field::Text { expected, .. } => Kind::Text { expected },
        }
    }

    /// Its value in `s`, written as it is parsed.
    fn get(&self, s: &Settings) -> String {
        match self.field {
            Field::Duration((get, _)) => format_duration(get(s)),
            Field::Ladder((get, _)) => get(s)
                .iter()
                .map(|d| format_duration(*d))
                .collect::<Vec<_>>()
                .join(","),
            Field::Count(_, _, (get, _)) => get(s).to_string(),
            Field::Bytes(_, _, (get, _)) => format_bytes(get(s)),
            Field::Bool((get, _)) => get(s).to_string(),
            Field::Shortcut((get, _)) => get(s).unwrap_or_else(|| "off".to_owned()),
            Field::TimeOfDay((get, _)) => get(s).to_string(),
            Field::Text { get, .. } => get(s, self.key),
        }
    }

    /// Set it in `s` from `text`, checked against its kind and range; on error nothing changes.
    fn set(&self, s: &mut Settings, text: &str) -> Result<(), SettingError> {
        let invalid = || SettingError::InvalidValue {
            key: self.key.to_owned(),
            value: text.to_owned(),
            expected: self.kind().expected(),
        };
        let within = |min: u64, max: u64, n: Option<u64>| n.filter(|n| (min..=max).contains(n));
        match self.field {
            Field::Duration((_, set)) => set(s, parse_duration(text).ok_or_else(invalid)?),
            Field::Ladder((_, set)) => {
                let steps: Option<Vec<Duration>> =
                    text.split(',').map(|s| parse_duration(s.trim())).collect();
                set(s, steps.filter(|s| !s.is_empty()).ok_or_else(invalid)?);
            }
            Field::Count(min, max, (_, set)) => {
                let n = within(min, max, text.trim().parse::<u64>().ok());
                set(s, n.ok_or_else(invalid)?);
            }
            Field::Bytes(min, max, (_, set)) => {
                set(s, within(min, max, parse_bytes(text)).ok_or_else(invalid)?);
            }
            Field::Bool((_, set)) => set(s, parse_bool(text).ok_or_else(invalid)?),
            Field::Shortcut((_, set)) => set(s, parse_shortcut(text).ok_or_else(invalid)?),
            Field::TimeOfDay((_, set)) => set(s, text.parse().map_err(|_| invalid())?),
            Field::Text { set, .. } => set(s, self.key, text)?,
        }
        Ok(())
    }
}

impl Settings {
    /// Every field at zero or empty: what [`Settings::default`] fills in from the table.
    fn blank() -> Self {
        let zero = Duration::ZERO;
        Self {
            first_after_claude_code: zero,
            first_after_default: zero,
            ladder: Vec::new(),
            stall_after: zero,
            hourly_cap: 0,
            expire_after: zero,
            keep_ended: zero,
            blocking_wait_max: zero,
            streams_per_caller: 0,
            notifications_enabled: false,
            create_desks: false,
            reminders_paused: false,
            limits: Limits {
                open_tasks_per_asker: 0,
                message_bytes: 0,
                task_bytes: 0,
                file_bytes: 0,
                reply_history: 0,
                keep_ended_sessions: zero,
                sessions_max: 0,
                create_desks_max: 0,
            },
            push: Push {
                allow_loopback_targets: false,
                allow_private_targets: false,
                retry_first: zero,
                retry_max: zero,
                give_up_after: zero,
                configs_per_task: 0,
                extra_roots: None,
            },
            digest_at: OfferAt::Off,
            desktop: Desktop {
                shown: Vec::new(),
                shortcut: None,
            },
            network: crate::network::Network::default(),
        }
    }

    pub fn first_after(&self, agent: AgentKind) -> Duration {
        match agent {
            AgentKind::ClaudeCode => self.first_after_claude_code,
            _ => self.first_after_default,
        }
    }

    /// The value of `key`, written as it is parsed.
    pub fn get(&self, key: &str) -> Result<String, SettingError> {
        let row = setting(key).ok_or_else(|| SettingError::UnknownKey {
            key: key.to_owned(),
        })?;
        Ok(row.get(self))
    }

    /// Set `key` from text, as its entry in [`SETTINGS`] says; on error nothing changes.
    pub fn set(&mut self, key: &str, value: &str) -> Result<(), SettingError> {
        let row = setting(key).ok_or_else(|| SettingError::UnknownKey {
            key: key.to_owned(),
        })?;
        row.set(self, value)
    }

    /// Every setting as (key, value) text, in [`SETTINGS`] order.
    pub fn pairs(&self) -> Vec<(&'static str, String)> {
        SETTINGS
            .iter()
            .map(|row| (row.key, row.get(self)))
            .collect()
    }
}

impl fmt::Display for Settings {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (k, v) in self.pairs() {
            writeln!(f, "{k} = {v}")?;
        }
        Ok(())
    }
}

fn parse_bool(text: &str) -> Option<bool> {
    match text.trim() {
        "true" => Some(true),
        "false" => Some(false),
        _ => None,
    }
}

/// `90s`, `5m`, `2h`, `7d` → a positive duration.
pub fn parse_duration(text: &str) -> Option<Duration> {
    let text = text.trim();
    let unit_at = text.find(|c: char| !c.is_ascii_digit())?;
    let (number, unit) = text.split_at(unit_at);
    let n: u64 = number.parse().ok().filter(|n| *n > 0)?;
    let secs = match unit {
        "s" => n,
        "m" => n.checked_mul(60)?,
        "h" => n.checked_mul(3600)?,
        "d" => n.checked_mul(86_400)?,
        _ => return None,
    };
    Some(Duration::from_secs(secs))
}

/// The shortest exact form: `7d`, `24h` → `1d`, `90s`.
pub fn format_duration(d: Duration) -> String {
    let s = d.as_secs();
    match s {
        0 => "0s".to_owned(),
        s if s % 86_400 == 0 => format!("{}d", s / 86_400),
        s if s % 3600 == 0 => format!("{}h", s / 3600),
        s if s % 60 == 0 => format!("{}m", s / 60),
        s => format!("{s}s"),
    }
}

// ---- limits -----------------------------------------------------------------------------

/// The bounds on what callers can make Taskkeeper keep: open tasks per asker, the size of a
/// message and of a task, how much history a reply carries by default, how long ended
/// sessions stay, how many sessions are kept, and how many desks sessions may create. The
/// rules that use them are in [`crate::limits`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Limits {
    /// Open tasks one asker (an A2A asker, or a desk asking through `task_send`) may have.
    pub open_tasks_per_asker: u64,
    /// The largest message (as stored, JSON) an asker may send.
    pub message_bytes: u64,
    /// The largest a task may grow (history, artifacts and metadata, as stored) by the
    /// asker's messages.
    pub task_bytes: u64,
    /// The largest file: one an asker sends inline in a message part (decoded), or one a
    /// worker attaches to a task as an artifact. An inline file is inside its message, so
    /// `message_bytes` bounds it too.
    pub file_bytes: u64,
    /// The most recent messages a reply carries when the asker gives no `historyLength`.
    pub reply_history: u32,
    /// Ended sessions are pruned this long after their last change.
    pub keep_ended_sessions: Duration,
    /// Sessions kept in all; a new one takes the place of the oldest ended one.
    pub sessions_max: u64,
    /// Sessions create a desk only while there are fewer desks than this.
    pub create_desks_max: u64,
}

impl Default for Limits {
    /// The table's defaults ([`SETTINGS`]).
    fn default() -> Self {
        Settings::default().limits
    }
}

/// `4096B`, `256KiB`, `2MiB` (or a bare number of bytes) → bytes; the range is the setting's.
pub fn parse_bytes(text: &str) -> Option<u64> {
    let text = text.trim();
    let unit_at = text
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(text.len());
    let (number, unit) = text.split_at(unit_at);
    let n: u64 = number.parse().ok()?;
    match unit.trim() {
        "" | "B" => Some(n),
        "KiB" => n.checked_mul(KIB),
        "MiB" => n.checked_mul(MIB),
        _ => None,
    }
}

/// The shortest exact form: `2MiB`, `256KiB`, `1500B`.
pub fn format_bytes(bytes: u64) -> String {
    match bytes {
        0 => "0B".to_owned(),
        b if b % MIB == 0 => format!("{}MiB", b / MIB),
        b if b % KIB == 0 => format!("{}KiB", b / KIB),
        b => format!("{b}B"),
    }
}

// ---- push notifications -----------------------------------------------------------------

/// Push notifications to askers' webhooks (the rules are in [`crate::push`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Push {
    /// Webhooks may point at this machine (loopback; never the daemon's own port).
    pub allow_loopback_targets: bool,
    /// Webhooks may point into private, link-local, shared and the other special ranges
    /// (public addresses always may).
    pub allow_private_targets: bool,
    /// A failed delivery is tried again after this, doubling with each failure...
    pub retry_first: Duration,
    /// ...up to this.
    pub retry_max: Duration,
    /// A delivery still failing this long after its change is dropped (and logged).
    pub give_up_after: Duration,
    /// Webhooks one task may have.
    pub configs_per_task: u64,
    /// A PEM file of root certificates an `https://` webhook's certificate may also chain to,
    /// beside the system's (an owner's own CA); read again when it changes.
    pub extra_roots: Option<PathBuf>,
}

impl Default for Push {
    /// The table's defaults ([`SETTINGS`]).
    fn default() -> Self {
        Settings::default().push
    }
}
// ---- end push notifications ----

// ---- the desktop app ----------------------------------------------------------------------

/// The kinds of desktop notification, each one a setting (`notifications.<kind>`), on top of
/// `notifications.enabled`, which silences them all.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum NoticeKind {
    /// A task's ladder ran out.
    Stalled,
    /// A session waits for the owner to allow a tool.
    Permission,
    /// The worker said what it needs from the asker (INPUT_REQUIRED): the asker is waited on.
    Blocked,
    /// A session ended with tasks still open.
    SessionEnded,
    /// The worker finished a task.
    Finished,
}

impl NoticeKind {
    pub const ALL: [NoticeKind; 5] = [
        NoticeKind::Stalled,
        NoticeKind::Permission,
        NoticeKind::Blocked,
        NoticeKind::SessionEnded,
        NoticeKind::Finished,
    ];

    /// Its setting's key.
    pub const fn key(self) -> &'static str {
        match self {
            NoticeKind::Stalled => "notifications.stalled",
            NoticeKind::Permission => "notifications.permission",
            NoticeKind::Blocked => "notifications.blocked",
            NoticeKind::SessionEnded => "notifications.session_ended",
            NoticeKind::Finished => "notifications.finished",
        }
    }
}

/// What the desktop app does for the owner: which notifications it shows, and the shortcut
/// that shows and hides its window.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Desktop {
    /// The kinds shown (when `notifications.enabled`). Stalls, permission requests and ended
    /// sessions need the owner; a blocked task waits on its asker and a finished one needs
    /// nobody, so those two are off unless asked for.
    pub shown: Vec<NoticeKind>,
    /// The global shortcut, in the form `CmdOrCtrl+Alt+K` (modifiers, then one key); `None`
    /// for none (written `off`).
    pub shortcut: Option<String>,
}

impl Default for Desktop {
    /// The table's defaults ([`SETTINGS`]).
    fn default() -> Self {
        Settings::default().desktop
    }
}

/// K for keeper; Ctrl+Alt+T and Super+… are the desktops' own.
pub const SHORTCUT_DEFAULT: &str = "CmdOrCtrl+Alt+K";
const SHORTCUT_HELP: &str = "modifiers and one key joined by +, such as CmdOrCtrl+Alt+K or Ctrl+Shift+F12 \
     (modifiers: Ctrl, Alt, Shift, Super, Cmd, CmdOrCtrl), or off for none";
const SHORTCUT_MODIFIERS: [&str; 12] = [
    "ctrl",
    "control",
    "alt",
    "option",
    "shift",
    "super",
    "cmd",
    "command",
    "cmdorctrl",
    "commandorcontrol",
    "meta",
    "altgr",
];

impl Desktop {
    /// Whether notifications of this kind are shown (`notifications.enabled` aside).
    pub fn shows(&self, kind: NoticeKind) -> bool {
        self.shown.contains(&kind)
    }

    /// Show notifications of this kind, or not.
    fn show(&mut self, kind: NoticeKind, on: bool) {
        self.shown.retain(|k| *k != kind);
        if on {
            self.shown.push(kind);
        }
    }
}

/// `CmdOrCtrl+Alt+K` → itself (spaces around `+` removed); `off` or blank → no shortcut
/// (`Some(None)`); anything without a modifier and exactly one key after them → `None`. The
/// key's name is checked by the app when it registers the shortcut (it logs one it can't).
fn parse_shortcut(text: &str) -> Option<Option<String>> {
    let text = text.trim();
    if text.is_empty() || text.eq_ignore_ascii_case("off") {
        return Some(None);
    }
    let parts: Vec<&str> = text.split('+').map(str::trim).collect();
    let (key, modifiers) = parts.split_last()?;
    let is_modifier = |p: &str| SHORTCUT_MODIFIERS.contains(&p.to_ascii_lowercase().as_str());
    let key_ok = !key.is_empty()
        && !is_modifier(key)
        && key
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || ".,;/-=[]'`\\".contains(c));
    (key_ok && !modifiers.is_empty() && modifiers.iter().all(|m| is_modifier(m)))
        .then(|| Some(parts.join("+")))
}
// ---- end the desktop app ----

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_match_the_design() {
        let s = Settings::default();
        let text = s.to_string();
        for line in [
            "reminders.first_after.claude-code = 5m",
            "reminders.first_after.default = 2m",
            "reminders.ladder = 1m,2m,5m,10m",
            "reminders.stall_after = 30m",
            "reminders.hourly_cap = 6",
            "tasks.expire_after = 1d",
            "tasks.keep_ended = 7d",
            "a2a.blocking_wait_max = 10m",
            "a2a.streams_per_caller = 16",
            "notifications.enabled = true",
            "sessions.create_desks = true",
            "reminders.paused = false",
            "limits.open_tasks_per_asker = 100",
            "limits.message_bytes = 256KiB",
            "limits.task_bytes = 2MiB",
            "limits.file_bytes = 10MiB",
            "limits.reply_history = 20",
            "sessions.keep_ended = 1d",
            "sessions.max = 500",
            "sessions.create_desks_max = 50",
            "push.allow_loopback_targets = false",
            "push.allow_private_targets = false",
            "push.retry_first = 1s",
            "push.retry_max = 5m",
            "push.give_up_after = 1d",
            "push.configs_per_task = 10",
            "notifications.stalled = true",
            "notifications.permission = true",
            "notifications.blocked = false",
            "notifications.session_ended = true",
            "notifications.finished = false",
            "app.shortcut = CmdOrCtrl+Alt+K",
        ] {
            assert!(text.contains(line), "missing {line} in\n{text}");
        }
    }

    /// The table is the settings' one description: every default is taken and reads back as
    /// written, every key is there once, and a group's settings stand together.
    #[test]
    fn every_default_in_the_table_is_taken() {
        let mut s = Settings::blank();
        for row in SETTINGS {
            row.set(&mut s, row.default)
                .unwrap_or_else(|e| panic!("{}: {e}", row.key));
            assert_eq!(
                row.get(&s),
                row.default,
                "{} reads back as written",
                row.key
            );
        }
        assert_eq!(s, Settings::default());
        let mut keys: Vec<&str> = keys().collect();
        keys.sort_unstable();
        keys.dedup();
        assert_eq!(keys.len(), SETTINGS.len(), "every key once");
        let mut groups: Vec<Group> = SETTINGS.iter().map(|r| r.group).collect();
        groups.dedup();
        let mut seen = groups.clone();
        seen.sort_by_key(|g| g.name());
        seen.dedup();
        assert_eq!(
            groups.len(),
            seen.len(),
            "a group's settings stand together"
        );
    }

    /// The table's ranges are what `set` takes: the bounds of every count and size are taken,
    /// one past them refused with the kind's words, and nothing changes.
    #[test]
    fn the_table_decides_what_each_setting_takes() {
        let mut ranged = 0;
        for row in SETTINGS {
            let (min, max, show): (u64, u64, fn(u64) -> String) = match row.kind() {
                Kind::Count { min, max } => (min, max, |n| n.to_string()),
                Kind::Bytes { min, max } => (min, max, |n| format!("{n}B")),
                _ => continue,
            };
            ranged += 1;
            let mut s = Settings::default();
            for ok in [min, max] {
                s.set(row.key, &show(ok)).unwrap();
                assert_eq!(
                    parse_bytes(&s.get(row.key).unwrap()),
                    Some(ok),
                    "{}",
                    row.key
                );
            }
            let before = s.clone();
            for bad in [min - 1, max + 1] {
                let err = s.set(row.key, &show(bad)).unwrap_err().to_string();
                assert!(
                    err.contains(row.key) && err.ends_with(&row.kind().expected()),
                    "{err}"
                );
            }
            assert_eq!(s, before, "{}: a refusal changes nothing", row.key);
        }
        assert_eq!(ranged, 12, "every count and size was checked");
        assert_eq!(
            setting("reminders.hourly_cap").map(|r| r.kind().expected()),
            Some("a whole number from 1 to 60".to_owned())
        );
        assert_eq!(
            setting("limits.file_bytes").map(|r| (r.kind().expected(), r.kind().units())),
            Some((
                "a size such as 4096B, 256KiB or 2MiB (from 1KiB to 1024MiB; B, KiB or MiB)"
                    .to_owned(),
                &BYTE_UNITS[..]
            ))
        );
    }

    #[test]
    fn values_round_trip_and_bad_values_change_nothing() {
        let mut s = Settings::default();
        s.set("reminders.ladder", "10s, 20s,1m").unwrap();
        assert_eq!(s.get("reminders.ladder").unwrap(), "10s,20s,1m");
        s.set("tasks.expire_after", "36h").unwrap();
        assert_eq!(s.expire_after, Duration::from_secs(36 * 3600));

        let before = s.clone();
        for (k, v) in [
            ("reminders.stall_after", "soon"),
            ("reminders.stall_after", "0m"),
            ("reminders.stall_after", "5w"),
            ("reminders.ladder", ""),
            ("reminders.ladder", "1m,,2m"),
            ("reminders.hourly_cap", "0"),
            ("reminders.hourly_cap", "-1"),
            ("notifications.enabled", "yes"),
            ("a2a.streams_per_caller", "0"),
            ("a2a.streams_per_caller", "1001"),
            ("a2a.streams_per_caller", "many"),
            ("limits.open_tasks_per_asker", "0"),
            ("limits.open_tasks_per_asker", "100001"),
            ("limits.message_bytes", "1KB"),
            ("limits.message_bytes", "100B"),
            ("limits.task_bytes", "2GiB"),
            ("limits.reply_history", "lots"),
            ("sessions.keep_ended", "0d"),
            ("sessions.max", "-5"),
            ("sessions.create_desks_max", ""),
            ("push.allow_loopback_targets", "yes"),
            ("push.allow_private_targets", "1"),
            ("push.retry_first", "0s"),
            ("push.give_up_after", "soon"),
            ("push.configs_per_task", "101"),
            ("notifications.finished", "sometimes"),
            ("app.shortcut", "K"),
            ("app.shortcut", "Ctrl+Alt"),
            ("app.shortcut", "Ctrl++K"),
            ("app.shortcut", "Hyper+K"),
        ] {
            let err = s.set(k, v).unwrap_err();
            assert!(err.to_string().contains(k), "{err}");
        }
        assert!(
            s.set("reminders.nope", "1")
                .unwrap_err()
                .to_string()
                .contains("unknown setting")
        );
        assert_eq!(s, before);
    }

    #[test]
    fn notification_kinds_and_the_shortcut_round_trip() {
        let mut s = Settings::default();
        assert!(s.desktop.shows(NoticeKind::Stalled) && !s.desktop.shows(NoticeKind::Finished));
        s.set("notifications.finished", "true").unwrap();
        s.set("notifications.stalled", "false").unwrap();
        assert!(s.desktop.shows(NoticeKind::Finished) && !s.desktop.shows(NoticeKind::Stalled));
        assert_eq!(s.get("notifications.finished").unwrap(), "true");
        s.set("app.shortcut", " Ctrl + Shift + F12 ").unwrap();
        assert_eq!(s.get("app.shortcut").unwrap(), "Ctrl+Shift+F12");
        s.set("app.shortcut", "off").unwrap();
        assert_eq!(
            (
                s.desktop.shortcut.as_deref(),
                s.get("app.shortcut").unwrap().as_str()
            ),
            (None, "off")
        );
        let err = s.set("app.shortcut", "K").unwrap_err().to_string();
        assert!(
            err.contains("app.shortcut") && err.contains("CmdOrCtrl+Alt+K"),
            "{err}"
        );
    }

    #[test]
    fn limits_round_trip_in_their_shortest_form() {
        let mut s = Settings::default();
        s.set("limits.message_bytes", "512 KiB").unwrap();
        assert_eq!(s.limits.message_bytes, 512 * 1024);
        assert_eq!(s.get("limits.message_bytes").unwrap(), "512KiB");
        s.set("limits.task_bytes", "3145728").unwrap();
        assert_eq!(s.get("limits.task_bytes").unwrap(), "3MiB");
        s.set("limits.task_bytes", "1500B").unwrap();
        assert_eq!(s.get("limits.task_bytes").unwrap(), "1500B");
        s.set("sessions.keep_ended", "36h").unwrap();
        assert_eq!(s.limits.keep_ended_sessions, Duration::from_secs(36 * 3600));
        s.set("limits.open_tasks_per_asker", " 7 ").unwrap();
        assert_eq!(s.limits.open_tasks_per_asker, 7);
        assert_eq!(parse_bytes("1KiB"), Some(1024));
        assert_eq!(parse_bytes("2KB"), None);
        for out_of_range in ["1023", "1025MiB"] {
            assert!(s.set("limits.task_bytes", out_of_range).is_err());
        }
    }

    #[test]
    fn durations_parse_with_units() {
        assert_eq!(parse_duration("90s"), Some(Duration::from_secs(90)));
        assert_eq!(parse_duration("7d"), Some(Duration::from_secs(7 * 86_400)));
        assert_eq!(parse_duration("5"), None);
        assert_eq!(parse_duration("m"), None);
        assert_eq!(format_duration(Duration::from_secs(90)), "90s");
        assert_eq!(format_duration(Duration::from_secs(7200)), "2h");
    }
}
