//! Every number the owner can tune, with its key, default, parser and validation.
//!
//! Settings are kept in the store as text under their keys; [`Settings`] is the typed view.
//! Durations are written as a number and a unit: `s`, `m`, `h` or `d` (`90s`, `5m`, `24h`,
//! `7d`); seconds exist so tests and demos can run a whole ladder quickly. A ladder is a
//! comma-separated list of durations.

use std::fmt;
use std::time::Duration;

use crate::desk::AgentKind;

/// `reminders.paused`: every reminder paused (the tray's, the window's and the CLI's pause).
pub const REMINDERS_PAUSED: &str = "reminders.paused";
/// `notifications.enabled`: desktop notifications on at all.
pub const NOTIFICATIONS_ENABLED: &str = "notifications.enabled";
/// `app.shortcut`: the desktop app's global shortcut (`off` for none).
pub const APP_SHORTCUT: &str = "app.shortcut";

/// The keys, in the order the settings panel shows them.
pub const KEYS: [&str; 42] = [
    "reminders.first_after.claude-code",
    "reminders.first_after.default",
    "reminders.ladder",
    "reminders.stall_after",
    "reminders.hourly_cap",
    "tasks.expire_after",
    "tasks.keep_ended",
    "a2a.blocking_wait_max",
    "a2a.streams_per_caller",
    NOTIFICATIONS_ENABLED,
    "sessions.create_desks",
    REMINDERS_PAUSED,
    // The limits (see [`Limits`]).
    "limits.open_tasks_per_asker",
    "limits.message_bytes",
    "limits.task_bytes",
    "limits.file_bytes",
    "limits.reply_history",
    "sessions.keep_ended",
    "sessions.max",
    "sessions.create_desks_max",
    // Push notifications (see [`Push`]).
    "push.allow_loopback_targets",
    "push.allow_private_targets",
    "push.retry_first",
    "push.retry_max",
    "push.give_up_after",
    "push.configs_per_task",
    // The digest (see [`crate::digest`]).
    "digest.at",
    // The desktop app (see [`Desktop`]).
    "notifications.stalled",
    "notifications.permission",
    "notifications.blocked",
    "notifications.session_ended",
    "notifications.finished",
    APP_SHORTCUT,
    // The network listener for askers on other machines (see [`crate::network`]).
    "network.listen",
    "network.tls",
    "network.cert_file",
    "network.key_file",
    "network.public_url",
    "network.trusted_proxies",
    "network.insecure_http",
    "network.requests_per_minute",
    "network.streams_per_minute",
];

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
    /// The listener for askers on other machines.
    pub network: crate::network::Network,
}

impl Default for Settings {
    fn default() -> Self {
        let min = |m: u64| Duration::from_secs(m * 60);
        Self {
            first_after_claude_code: min(5),
            first_after_default: min(2),
            ladder: vec![min(1), min(2), min(5), min(10)],
            stall_after: min(30),
            hourly_cap: 6,
            expire_after: min(24 * 60),
            keep_ended: min(7 * 24 * 60),
            blocking_wait_max: min(10),
            streams_per_caller: STREAMS_PER_CALLER_DEFAULT,
            notifications_enabled: true,
            create_desks: true,
            reminders_paused: false,
            limits: Limits::default(),
            push: Push::default(),
            digest_at: crate::digest::OfferAt::Login,
            desktop: Desktop::default(),
            network: crate::network::Network::default(),
        }
    }
}

/// A refused setting: the message names the key and what it accepts.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SettingError {
    #[error("unknown setting {key:?}; the settings are: {}", KEYS.join(", "))]
    UnknownKey { key: String },
    #[error("invalid value {value:?} for {key}: {expected}")]
    InvalidValue {
        key: String,
        value: String,
        expected: &'static str,
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
            expected,
        }
    }
}

const DURATION_HELP: &str = "a duration such as 90s, 5m, 2h or 7d (more than zero)";
const LADDER_HELP: &str =
    "a comma-separated list of durations such as 1m,2m,5m,10m (at least one step)";
const CAP_HELP: &str = "a whole number from 1 to 60";
const BOOL_HELP: &str = "true or false";

// ---- streams per caller ----
/// Enough for an asker that follows a handful of tasks on several desks at once; each open
/// stream or wait holds a connection and a reference to its task.
pub const STREAMS_PER_CALLER_DEFAULT: u32 = 16;
pub const STREAMS_PER_CALLER_MAX: u32 = 1000;
const STREAMS_HELP: &str = "a whole number from 1 to 1000";
// ---- end streams per caller ----

impl Settings {
    pub fn first_after(&self, agent: AgentKind) -> Duration {
        match agent {
            AgentKind::ClaudeCode => self.first_after_claude_code,
            _ => self.first_after_default,
        }
    }

    /// The value of `key`, written as it is parsed.
    pub fn get(&self, key: &str) -> Result<String, SettingError> {
        Ok(match key {
            "reminders.first_after.claude-code" => format_duration(self.first_after_claude_code),
            "reminders.first_after.default" => format_duration(self.first_after_default),
            "reminders.ladder" => self
                .ladder
                .iter()
                .map(|d| format_duration(*d))
                .collect::<Vec<_>>()
                .join(","),
            "reminders.stall_after" => format_duration(self.stall_after),
            "reminders.hourly_cap" => self.hourly_cap.to_string(),
            "tasks.expire_after" => format_duration(self.expire_after),
            "tasks.keep_ended" => format_duration(self.keep_ended),
            "a2a.blocking_wait_max" => format_duration(self.blocking_wait_max),
            "a2a.streams_per_caller" => self.streams_per_caller.to_string(),
            NOTIFICATIONS_ENABLED => self.notifications_enabled.to_string(),
            "sessions.create_desks" => self.create_desks.to_string(),
            REMINDERS_PAUSED => self.reminders_paused.to_string(),
            "digest.at" => self.digest_at.to_string(),
            k if k.starts_with("push.") => return self.push.get(key),
            k if k.starts_with("network.") => return self.network.get(key),
            k if Desktop::owns(k) => return self.desktop.get(key),
            _ => return self.limits.get(key),
        })
    }

    /// Set `key` from text; on error nothing changes.
    pub fn set(&mut self, key: &str, value: &str) -> Result<(), SettingError> {
        let invalid = |expected| SettingError::invalid(key, value, expected);
        let duration = || parse_duration(value).ok_or_else(|| invalid(DURATION_HELP));
        match key {
            "reminders.first_after.claude-code" => self.first_after_claude_code = duration()?,
            "reminders.first_after.default" => self.first_after_default = duration()?,
            "reminders.ladder" => {
                let steps: Option<Vec<Duration>> =
                    value.split(',').map(|s| parse_duration(s.trim())).collect();
                self.ladder = steps
                    .filter(|s| !s.is_empty())
                    .ok_or_else(|| invalid(LADDER_HELP))?;
            }
            "reminders.stall_after" => self.stall_after = duration()?,
            "reminders.hourly_cap" => {
                self.hourly_cap = value
                    .trim()
                    .parse::<u32>()
                    .ok()
                    .filter(|n| (1..=60).contains(n))
                    .ok_or_else(|| invalid(CAP_HELP))?;
            }
            "tasks.expire_after" => self.expire_after = duration()?,
            "tasks.keep_ended" => self.keep_ended = duration()?,
            "a2a.blocking_wait_max" => self.blocking_wait_max = duration()?,
            "a2a.streams_per_caller" => {
                self.streams_per_caller = value
                    .trim()
                    .parse::<u32>()
                    .ok()
                    .filter(|n| (1..=STREAMS_PER_CALLER_MAX).contains(n))
                    .ok_or_else(|| invalid(STREAMS_HELP))?;
            }
            NOTIFICATIONS_ENABLED => {
                self.notifications_enabled = parse_bool(value).ok_or_else(|| invalid(BOOL_HELP))?
            }
            REMINDERS_PAUSED => {
                self.reminders_paused = parse_bool(value).ok_or_else(|| invalid(BOOL_HELP))?
            }
            "sessions.create_desks" => {
                self.create_desks = parse_bool(value).ok_or_else(|| invalid(BOOL_HELP))?
            }
            "digest.at" => {
                self.digest_at = value
                    .parse()
                    .map_err(|_| invalid(crate::digest::OFFER_HELP))?
            }
            k if k.starts_with("push.") => return self.push.set(key, value),
            k if k.starts_with("network.") => return self.network.set(key, value),
            k if Desktop::owns(k) => return self.desktop.set(key, value),
            _ => return self.limits.set(key, value),
        }
        Ok(())
    }

    /// Every setting as (key, value) text, in [`KEYS`] order.
    pub fn pairs(&self) -> Vec<(&'static str, String)> {
        KEYS.iter()
            .filter_map(|k| self.get(k).ok().map(|v| (*k, v)))
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
    fn default() -> Self {
        Self {
            open_tasks_per_asker: 100,
            message_bytes: 256 * KIB,
            task_bytes: 2 * MIB,
            file_bytes: 10 * MIB,
            reply_history: 20,
            keep_ended_sessions: Duration::from_secs(86_400),
            sessions_max: 500,
            create_desks_max: 50,
        }
    }
}

const KIB: u64 = 1024;
const MIB: u64 = 1024 * 1024;
const LIMIT_COUNT_MAX: u64 = 100_000;
const LIMIT_COUNT_HELP: &str = "a whole number from 1 to 100000";
const LIMIT_BYTES_HELP: &str =
    "a size such as 4096B, 256KiB or 2MiB (from 1KiB to 1024MiB; B, KiB or MiB)";

impl Limits {
    fn get(&self, key: &str) -> Result<String, SettingError> {
        Ok(match key {
            "limits.open_tasks_per_asker" => self.open_tasks_per_asker.to_string(),
            "limits.message_bytes" => format_bytes(self.message_bytes),
            "limits.task_bytes" => format_bytes(self.task_bytes),
            "limits.file_bytes" => format_bytes(self.file_bytes),
            "limits.reply_history" => self.reply_history.to_string(),
            "sessions.keep_ended" => format_duration(self.keep_ended_sessions),
            "sessions.max" => self.sessions_max.to_string(),
            "sessions.create_desks_max" => self.create_desks_max.to_string(),
            _ => {
                return Err(SettingError::unknown(key));
            }
        })
    }

    fn set(&mut self, key: &str, value: &str) -> Result<(), SettingError> {
        let invalid = |expected| SettingError::invalid(key, value, expected);
        let count = || {
            value
                .trim()
                .parse::<u64>()
                .ok()
                .filter(|n| (1..=LIMIT_COUNT_MAX).contains(n))
                .ok_or_else(|| invalid(LIMIT_COUNT_HELP))
        };
        let bytes = || parse_bytes(value).ok_or_else(|| invalid(LIMIT_BYTES_HELP));
        match key {
            "limits.open_tasks_per_asker" => self.open_tasks_per_asker = count()?,
            "limits.message_bytes" => self.message_bytes = bytes()?,
            "limits.task_bytes" => self.task_bytes = bytes()?,
            "limits.file_bytes" => self.file_bytes = bytes()?,
            "limits.reply_history" => {
                self.reply_history =
                    u32::try_from(count()?).map_err(|_| invalid(LIMIT_COUNT_HELP))?
            }
            "sessions.keep_ended" => {
                self.keep_ended_sessions =
                    parse_duration(value).ok_or_else(|| invalid(DURATION_HELP))?
            }
            "sessions.max" => self.sessions_max = count()?,
            "sessions.create_desks_max" => self.create_desks_max = count()?,
            _ => {
                return Err(SettingError::unknown(key));
            }
        }
        Ok(())
    }
}

/// `4096B`, `256KiB`, `2MiB` (or a bare number of bytes) → bytes, from 1 KiB to 1024 MiB.
pub fn parse_bytes(text: &str) -> Option<u64> {
    let text = text.trim();
    let unit_at = text
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(text.len());
    let (number, unit) = text.split_at(unit_at);
    let n: u64 = number.parse().ok()?;
    let bytes = match unit.trim() {
        "" | "B" => n,
        "KiB" => n.checked_mul(KIB)?,
        "MiB" => n.checked_mul(MIB)?,
        _ => return None,
    };
    (KIB..=1024 * MIB).contains(&bytes).then_some(bytes)
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
}

impl Default for Push {
    fn default() -> Self {
        Self {
            allow_loopback_targets: false,
            allow_private_targets: false,
            retry_first: Duration::from_secs(1),
            retry_max: Duration::from_secs(300),
            give_up_after: Duration::from_secs(86_400),
            configs_per_task: 10,
        }
    }
}

const PUSH_CONFIGS_HELP: &str = "a whole number from 1 to 100";

impl Push {
    fn get(&self, key: &str) -> Result<String, SettingError> {
        Ok(match key {
            "push.allow_loopback_targets" => self.allow_loopback_targets.to_string(),
            "push.allow_private_targets" => self.allow_private_targets.to_string(),
            "push.retry_first" => format_duration(self.retry_first),
            "push.retry_max" => format_duration(self.retry_max),
            "push.give_up_after" => format_duration(self.give_up_after),
            "push.configs_per_task" => self.configs_per_task.to_string(),
            _ => {
                return Err(SettingError::unknown(key));
            }
        })
    }

    fn set(&mut self, key: &str, value: &str) -> Result<(), SettingError> {
        let invalid = |expected| SettingError::invalid(key, value, expected);
        let duration = || parse_duration(value).ok_or_else(|| invalid(DURATION_HELP));
        match key {
            "push.allow_loopback_targets" => {
                self.allow_loopback_targets = parse_bool(value).ok_or_else(|| invalid(BOOL_HELP))?
            }
            "push.allow_private_targets" => {
                self.allow_private_targets = parse_bool(value).ok_or_else(|| invalid(BOOL_HELP))?
            }
            "push.retry_first" => self.retry_first = duration()?,
            "push.retry_max" => self.retry_max = duration()?,
            "push.give_up_after" => self.give_up_after = duration()?,
            "push.configs_per_task" => {
                self.configs_per_task = value
                    .trim()
                    .parse::<u64>()
                    .ok()
                    .filter(|n| (1..=100).contains(n))
                    .ok_or_else(|| invalid(PUSH_CONFIGS_HELP))?
            }
            _ => {
                return Err(SettingError::unknown(key));
            }
        }
        Ok(())
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
    pub fn key(self) -> &'static str {
        match self {
            NoticeKind::Stalled => "notifications.stalled",
            NoticeKind::Permission => "notifications.permission",
            NoticeKind::Blocked => "notifications.blocked",
            NoticeKind::SessionEnded => "notifications.session_ended",
            NoticeKind::Finished => "notifications.finished",
        }
    }

    fn from_key(key: &str) -> Option<NoticeKind> {
        NoticeKind::ALL.into_iter().find(|k| k.key() == key)
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
    fn default() -> Self {
        Self {
            shown: vec![
                NoticeKind::Stalled,
                NoticeKind::Permission,
                NoticeKind::SessionEnded,
            ],
            shortcut: Some(SHORTCUT_DEFAULT.to_owned()),
        }
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
    fn owns(key: &str) -> bool {
        key == APP_SHORTCUT || NoticeKind::from_key(key).is_some()
    }

    /// Whether notifications of this kind are shown (`notifications.enabled` aside).
    pub fn shows(&self, kind: NoticeKind) -> bool {
        self.shown.contains(&kind)
    }

    fn get(&self, key: &str) -> Result<String, SettingError> {
        if key == APP_SHORTCUT {
            return Ok(self.shortcut.clone().unwrap_or_else(|| "off".to_owned()));
        }
        let kind = NoticeKind::from_key(key).ok_or_else(|| SettingError::unknown(key))?;
        Ok(self.shows(kind).to_string())
    }

    fn set(&mut self, key: &str, value: &str) -> Result<(), SettingError> {
        let invalid = |expected| SettingError::invalid(key, value, expected);
        if key == APP_SHORTCUT {
            self.shortcut = parse_shortcut(value).ok_or_else(|| invalid(SHORTCUT_HELP))?;
            return Ok(());
        }
        let kind = NoticeKind::from_key(key).ok_or_else(|| SettingError::unknown(key))?;
        let on = parse_bool(value).ok_or_else(|| invalid(BOOL_HELP))?;
        self.shown.retain(|k| *k != kind);
        if on {
            self.shown.push(kind);
        }
        Ok(())
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
            "network.listen = off",
            "network.tls = self-signed",
            "network.requests_per_minute = 600",
            "network.streams_per_minute = 60",
        ] {
            assert!(text.contains(line), "missing {line} in\n{text}");
        }
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
        assert_eq!(parse_bytes("1023"), None);
        assert_eq!(parse_bytes("1KiB"), Some(1024));
        assert_eq!(parse_bytes("1025MiB"), None);
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
