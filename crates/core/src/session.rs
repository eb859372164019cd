//! Sessions: live agent processes attached to desks, and what each is doing.
//!
//! A session's activity is a *level* state rebuilt from *edges* (design.md §5): the adapters
//! translate an agent's hooks into [`Edge`]s, and [`Session::apply`] folds them in. Edges can
//! be missed — an Esc interrupt fires no hook, a killed process sends nothing — so
//! [`Session::reconcile`] corrects the state from a level signal (the agent's own status
//! file, whether the process is alive) and the state never stays "busy" on hooks alone.

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use crate::clock::Timestamp;
use crate::desk::{AgentKind, DeskName};
use crate::task::Task;

pub use crate::session_id::{DIR_MAX, InvalidId, SESSION_ID_MAX, SessionId, check_dir};

/// What a session is doing, as a level.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Activity {
    /// A turn is running.
    Busy,
    /// Between turns.
    Idle,
    /// A permission prompt or a question waits on the owner.
    WaitingOnOwner,
    /// The owner interrupted it (Esc); nobody has written to it since.
    StoppedByOwner,
    /// The process ended.
    Ended,
}

impl Activity {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Busy => "busy",
            Self::Idle => "idle",
            Self::WaitingOnOwner => "waiting-on-owner",
            Self::StoppedByOwner => "stopped-by-owner",
            Self::Ended => "ended",
        }
    }
}

/// Who started the current turn: a turn the watchdog's own reminder started must not restart
/// the ladder; one the owner typed does.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum TurnOrigin {
    /// The owner (or anyone at the keyboard) typed a prompt.
    Owner,
    /// Taskkeeper delivered a task or a reminder.
    Taskkeeper,
    /// A background command finished and woke the session.
    Background,
}

/// What the watchdog keeps per session, in the store so a restart resumes exactly.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Watch {
    /// When each watchdog message of the last hour was recorded (for the hourly cap).
    #[serde(default)]
    pub sent: Vec<Timestamp>,
    /// The number of the last watchdog message recorded for this session; each message
    /// carries its number so a repeat after a crash is recognisable.
    #[serde(default)]
    pub seq: u64,
    /// A recorded message not yet delivered: (seq, text).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pending: Option<(u64, String)>,
    /// Time the machine slept while this session was quiet: the quiet clock runs this much
    /// later (the session slept too).
    #[serde(default)]
    pub slept_ms: i64,
    /// The owner paused this session's reminders.
    #[serde(default)]
    pub paused: bool,
}

/// The window of the hourly cap on watchdog messages.
pub const CAP_WINDOW: std::time::Duration = std::time::Duration::from_secs(3600);

impl Watch {
    /// Record the session's next watchdog message before anything delivers it: number it,
    /// count it against the hourly cap (when `counted`), and keep it as the pending message
    /// (replacing an undelivered one: the newer names every due task). `text` gets the
    /// message's number. Returns the number.
    pub fn record(
        &mut self,
        now: Timestamp,
        counted: bool,
        text: impl FnOnce(u64) -> String,
    ) -> u64 {
        self.seq += 1;
        if counted {
            self.sent
                .retain(|t| *t > now.minus(std::time::Duration::from_secs(3600)));
            self.sent.push(now);
        }
        self.pending = Some((self.seq, text(self.seq)));
        self.seq
    }
}

/// How many turns a session keeps for the timeline: enough for a whole ladder's worth of
/// reminders and the turns they start, few enough that a session's body stays small.
pub const TURNS_KEPT: usize = 32;

/// One turn of a session, as its edges told it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Turn {
    pub started_at: Timestamp,
    /// `None` while it runs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ended_at: Option<Timestamp>,
    pub origin: TurnOrigin,
}

/// Where a session can be reached, as its hooks report it.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Reach {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tmux_pane: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pid: Option<u32>,
    /// When `pid` started (Linux: `/proc/PID/stat`'s `starttime`, clock ticks after boot), read
    /// by the daemon when the pid was reported: a process of that pid with another start time is
    /// not the session's (the agent went and its pid was reused).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pid_started: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub messaging_socket: Option<String>,
    /// The tmux server's socket (from `$TMUX`), for pasting into `tmux_pane`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tmux_socket: Option<String>,
    /// The agent's own status file (Claude Code: `~/.claude/sessions/<pid>.json`), a level
    /// signal.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status_file: Option<String>,
    /// The token Claude Code gives each session for its inbox socket (its environment's
    /// `CLAUDE_CODE_MESSAGING_TOKEN`), sent as the first line of what Taskkeeper writes there.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub messaging_token: Option<String>,
    /// The control socket of the Codex app server that runs the session
    /// (`$CODEX_HOME/app-server-control/app-server-control.sock`, from the hook's
    /// `CODEX_HOME`), where a `turn/start` into its thread wakes it when it is idle.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub app_server_socket: Option<String>,
    /// Taskkeeper launched this session headless and speaks to it on its stdin; its
    /// activity comes from its own event stream, not from hooks.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub headless: bool,
}

impl Reach {
    /// Take what `newer` knows, keep what it does not.
    pub fn merge(&mut self, newer: Reach) {
        let Reach {
            tmux_pane,
            pid,
            pid_started,
            messaging_socket,
            tmux_socket,
            status_file,
            messaging_token,
            app_server_socket,
            headless,
        } = newer;
        // A pid and its start time go together: a newer pid without one has none.
        if pid.is_some() {
            self.pid_started = pid_started;
        }
        self.headless |= headless;
        self.app_server_socket = app_server_socket.or(self.app_server_socket.take());
        self.messaging_token = messaging_token.or(self.messaging_token.take());
        self.tmux_pane = tmux_pane.or(self.tmux_pane.take());
        self.pid = pid.or(self.pid);
        self.messaging_socket = messaging_socket.or(self.messaging_socket.take());
        self.tmux_socket = tmux_socket.or(self.tmux_socket.take());
        self.status_file = status_file.or(self.status_file.take());
    }
}

/// One thing that happened to a session, in agent-neutral words.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Edge {
    /// The session started (or was cleared, resumed, compacted into a new id).
    Started,
    /// A turn started.
    TurnStarted { origin: TurnOrigin },
    /// A tool call began or ended: the session is evidently working.
    ToolActivity,
    /// A background command was started (its id).
    BackgroundStarted { id: String },
    /// A permission prompt or question is shown to the owner.
    WaitingOnOwner,
    /// The turn ended; `background` is the full set of background commands still running.
    TurnEnded {
        last_words: Option<String>,
        background: Vec<String>,
    },
    /// What the session scheduled for itself as of the turn that just ended: it wakes itself
    /// at `at` (the earliest of its wake-ups, [`next_wake`]); `None`, nothing is scheduled.
    WakeScheduled { at: Option<Timestamp> },
    /// The turn ended on an API error; rate limits say until when.
    TurnFailed {
        rate_limited_until: Option<Timestamp>,
    },
    /// The owner interrupted the turn and the agent said so (Codex's `Interrupt`; Claude Code
    /// says nothing, and its level signal tells the same thing).
    Interrupted,
    /// The session ended.
    Ended,
}

/// A prompt a session scheduled for itself (Claude Code lists them in its Stop hook's
/// `session_crons`: what `CronCreate`, `/loop` and `ScheduleWakeup` made): when it comes due,
/// the agent starts a turn with it on its own.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SelfWake {
    /// A standard 5-field cron expression ("M H DoM Mon DoW") in the machine's local time.
    pub schedule: String,
    /// It fires again after this time (else it is deleted once it fired).
    pub recurring: bool,
}

/// How late Claude Code may fire a recurring wake-up: a tenth of its period, at most this
/// (its scheduled-tasks documentation; a one-shot one fires on time or up to 90 s early).
pub const WAKE_LATE_AT_MOST: std::time::Duration = std::time::Duration::from_secs(15 * 60);

/// When the earliest of `wakes` is due, as of `now`, reading the expressions in the time zone
/// `tz` (the machine's, where the agent runs): a recurring one's next time plus the lateness
/// the agent allows itself ([`WAKE_LATE_AT_MOST`]); a one-shot one's next time, unless its
/// last time is nearer: then it was missed (the session was busy) and fires as soon as the
/// session is idle, so it is due already. (`ScheduleWakeup` pins only the minute and hour of a
/// one-shot, at most an hour ahead; read as missed, a far one-shot only lets a reminder come.)
/// An expression that does not parse, or never matches again, counts for nothing.
pub fn next_wake<Tz: chrono::TimeZone>(
    wakes: &[SelfWake],
    now: Timestamp,
    tz: &Tz,
) -> Option<Timestamp> {
    use std::str::FromStr as _;
    let start = tz.timestamp_millis_opt(now.as_millis()).single()?;
    let due = |w: &SelfWake| -> Option<Timestamp> {
        let cron = croner::Cron::from_str(w.schedule.trim()).ok()?;
        let next = cron.find_next_occurrence(&start, false).ok()?;
        let at = Timestamp::from_millis(next.timestamp_millis());
        if !w.recurring {
            let missed = cron
                .find_previous_occurrence(&start, true)
                .ok()
                .map(|p| Timestamp::from_millis(p.timestamp_millis()))
                .filter(|p| now.since(*p) < at.since(now));
            return Some(missed.unwrap_or(at));
        }
        let late = cron
            .find_next_occurrence(&next, false)
            .ok()
            .map(|after| {
                let period = std::time::Duration::from_millis(
                    u64::try_from(after.timestamp_millis() - next.timestamp_millis()).unwrap_or(0),
                );
                (period / 10).min(WAKE_LATE_AT_MOST)
            })
            .unwrap_or(WAKE_LATE_AT_MOST);
        Some(at.plus(late))
    };
    wakes.iter().filter_map(due).min()
}

/// A level signal about a session, read from outside its hooks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Level {
    /// The agent's own status says idle (e.g. Claude Code's session file).
    Idle,
    Busy,
    Waiting,
    /// The process is gone.
    Gone,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Session {
    pub id: SessionId,
    pub desk: DeskName,
    pub agent: AgentKind,
    pub cwd: PathBuf,
    pub activity: Activity,
    /// When `activity` last changed.
    pub since: Timestamp,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub turn_origin: Option<TurnOrigin>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub turn_ended_at: Option<Timestamp>,
    /// Background commands still running.
    #[serde(default)]
    pub background: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub background_ended_at: Option<Timestamp>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rate_limited_until: Option<Timestamp>,
    /// The earliest wake-up the session scheduled for itself, as of its last turn's end: until
    /// then it is not quiet, since it will start a turn on its own.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub wakes_at: Option<Timestamp>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_words: Option<String>,
    #[serde(default)]
    pub reach: Reach,
    /// The watchdog's bookkeeping for this session.
    #[serde(default)]
    pub watch: Watch,
    /// The latest turns, oldest first, at most [`TURNS_KEPT`] (the timeline shows them).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub turns: Vec<Turn>,
    pub created_at: Timestamp,
    pub updated_at: Timestamp,
}

impl Session {
    pub fn new(
        id: SessionId,
        desk: DeskName,
        agent: AgentKind,
        cwd: PathBuf,
        now: Timestamp,
    ) -> Self {
        Self {
            id,
            desk,
            agent,
            cwd,
            activity: Activity::Idle,
            since: now,
            turn_origin: None,
            turn_ended_at: None,
            background: Vec::new(),
            background_ended_at: None,
            rate_limited_until: None,
            wakes_at: None,
            last_words: None,
            reach: Reach::default(),
            watch: Watch::default(),
            turns: Vec::new(),
            created_at: now,
            updated_at: now,
        }
    }

    fn set_activity(&mut self, activity: Activity, now: Timestamp) {
        if self.activity != activity {
            self.activity = activity;
            self.since = now;
        }
    }

    /// Fold one edge in. An ended session stays ended unless it starts again.
    pub fn apply(&mut self, edge: Edge, now: Timestamp) {
        self.updated_at = now;
        if self.activity == Activity::Ended && edge != Edge::Started {
            return;
        }
        match edge {
            Edge::Started => {
                self.set_activity(Activity::Idle, now);
                self.turn_origin = None;
            }
            Edge::TurnStarted { origin } => {
                self.end_turn(now);
                self.turns.push(Turn {
                    started_at: now,
                    ended_at: None,
                    origin,
                });
                let extra = self.turns.len().saturating_sub(TURNS_KEPT);
                self.turns.drain(..extra);
                self.watch.slept_ms = 0;
                self.turn_origin = Some(origin);
                self.rate_limited_until = None;
                self.set_activity(Activity::Busy, now);
            }
            Edge::ToolActivity => self.set_activity(Activity::Busy, now),
            Edge::BackgroundStarted { id } => {
                if !self.background.contains(&id) {
                    self.background.push(id);
                }
            }
            Edge::WaitingOnOwner => self.set_activity(Activity::WaitingOnOwner, now),
            Edge::TurnEnded {
                last_words,
                background,
            } => {
                if let Some(w) = last_words.filter(|w| !w.trim().is_empty()) {
                    self.last_words = Some(w);
                }
                if background.is_empty() && !self.background.is_empty() {
                    self.background_ended_at = Some(now);
                }
                self.background = background;
                self.watch.slept_ms = 0;
                self.turn_ended_at = Some(now);
                self.end_turn(now);
                self.set_activity(Activity::Idle, now);
            }
            Edge::WakeScheduled { at } => self.wakes_at = at,
            Edge::TurnFailed { rate_limited_until } => {
                self.end_turn(now);
                self.rate_limited_until = rate_limited_until;
                self.turn_ended_at = Some(now);
                self.set_activity(Activity::Idle, now);
            }
            Edge::Interrupted => {
                // What reconcile concludes from an idle level in a busy turn, said outright.
                if matches!(self.activity, Activity::Busy | Activity::WaitingOnOwner) {
                    self.end_turn(now);
                    self.set_activity(Activity::StoppedByOwner, now);
                }
            }
            Edge::Ended => {
                self.end_turn(now);
                self.set_activity(Activity::Ended, now);
            }
        }
    }

    /// Close the running turn, if one runs.
    fn end_turn(&mut self, now: Timestamp) {
        if let Some(t) = self.turns.last_mut().filter(|t| t.ended_at.is_none()) {
            t.ended_at = Some(now);
        }
    }

    /// Correct the state from a level signal. Hooks say busy or waiting but the agent says
    /// idle: the owner interrupted (Esc fires no hook). The process is gone: ended.
    pub fn reconcile(&mut self, level: Level, now: Timestamp) {
        let next = match (self.activity, level) {
            (Activity::Ended, _) => return,
            (_, Level::Gone) => Activity::Ended,
            (Activity::Busy | Activity::WaitingOnOwner, Level::Idle) => Activity::StoppedByOwner,
            (Activity::Idle | Activity::StoppedByOwner, Level::Busy) => Activity::Busy,
            (_, Level::Waiting) => Activity::WaitingOnOwner,
            (current, _) => current,
        };
        if next != self.activity {
            self.updated_at = now;
            if matches!(next, Activity::Ended | Activity::StoppedByOwner) {
                self.end_turn(now);
            }
            self.set_activity(next, now);
        }
    }

    /// Live: attached and not ended.
    pub fn is_live(&self) -> bool {
        self.activity != Activity::Ended
    }
}

/// What a change of a session's activity does to its desk's waiting-on-owner mark: `Some(true)`
/// when the session starts waiting on the owner (a permission prompt or a question), so the
/// desk's working tasks carry the mark; `Some(false)` when it stops waiting, whatever moved it
/// (the owner answered, dismissed it with Esc, the turn failed, the session ended); `None`
/// when the mark stays as it is. The one rule; `Sessions` applies it wherever an activity
/// changes, so no adapter decides it on its own.
pub fn owner_wait_change(before: Activity, after: Activity) -> Option<bool> {
    let waits = |a: Activity| a == Activity::WaitingOnOwner;
    (waits(before) != waits(after)).then_some(waits(after))
}

/// Whether `a` holds its desk rather than `b`: the newer session (the one changed last; the
/// smaller id when both changed at once, as the store lists them).
fn newer(a: &Session, b: &Session) -> bool {
    (b.updated_at, &a.id) < (a.updated_at, &b.id)
}

/// Who holds a desk among its sessions: the newest live one, the one that works there on
/// what no session was handed ([`works_on`]).
pub fn holder<'a>(desk_sessions: impl IntoIterator<Item = &'a Session>) -> Option<&'a Session> {
    desk_sessions
        .into_iter()
        .filter(|s| s.is_live())
        .fold(None, |best: Option<&Session>, s| match best {
            Some(b) if !newer(s, b) => Some(b),
            _ => Some(s),
        })
}

/// **Which session works on `task`** among `sessions` (any of them; those of other desks are
/// passed over): the one it was handed to ([`Task::delivered_to`]), while that one is live,
/// since it alone may end it ([`crate::queue::session_may_end`]); none while it is not (its
/// end gives the task back, [`crate::queue::goes_back`]). A task no session was handed (queued,
/// not yet delivered, given back, or taken by the desk's command) is its desk's [`holder`]'s.
/// The one rule: the watchdog reminds that session of the task, the push loop pushes to it
/// what the task has to be told, and the owner's timeline and reminder on demand follow it.
pub fn works_on<'a>(
    task: &Task,
    sessions: impl IntoIterator<Item = &'a Session>,
) -> Option<&'a Session> {
    let mut live = sessions
        .into_iter()
        .filter(|s| s.desk == task.desk && s.is_live());
    match &task.delivered_to {
        Some(to) => live.find(|s| s.id == *to),
        None => holder(live),
    }
}

/// Each live session among `sessions` that [`works_on`] some of `tasks`, with those tasks, in
/// the order the sessions come: what the watchdog plans with.
pub fn work<'s, 't>(
    sessions: &'s [Session],
    tasks: impl IntoIterator<Item = &'t Task>,
) -> Vec<(&'s Session, Vec<&'t Task>)> {
    let mut out: Vec<(&Session, Vec<&Task>)> = Vec::new();
    for t in tasks {
        let Some(s) = works_on(t, sessions) else {
            continue;
        };
        match out.iter_mut().find(|(x, _)| x.id == s.id) {
            Some((_, ts)) => ts.push(t),
            None => out.push((s, vec![t])),
        }
    }
    let order = |s: &Session| sessions.iter().position(|x| x.id == s.id);
    out.sort_by_key(|(s, _)| order(s));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(s: i64) -> Timestamp {
        Timestamp::from_millis(s * 1000)
    }

    /// A pid and the start time read with it travel together: a report with another pid
    /// brings its own (or none), one without a pid keeps both.
    #[test]
    fn a_pid_keeps_its_own_start_time() {
        let mut reach = Reach {
            pid: Some(10),
            pid_started: Some(100),
            ..Reach::default()
        };
        reach.merge(Reach {
            tmux_pane: Some("%1".into()),
            ..Reach::default()
        });
        assert_eq!((reach.pid, reach.pid_started), (Some(10), Some(100)));
        reach.merge(Reach {
            pid: Some(11),
            ..Reach::default()
        });
        assert_eq!((reach.pid, reach.pid_started), (Some(11), None));
        reach.merge(Reach {
            pid: Some(12),
            pid_started: Some(120),
            ..Reach::default()
        });
        assert_eq!((reach.pid, reach.pid_started), (Some(12), Some(120)));
    }

    #[test]
    fn turns_are_kept_with_their_ends_and_only_the_latest() {
        let mut s = session();
        s.apply(
            Edge::TurnStarted {
                origin: TurnOrigin::Owner,
            },
            t(1),
        );
        s.reconcile(Level::Idle, t(2));
        assert_eq!(
            s.turns,
            [Turn {
                started_at: t(1),
                ended_at: Some(t(2)),
                origin: TurnOrigin::Owner
            }],
            "an Esc ends the turn too"
        );
        for i in 0..40 {
            s.apply(
                Edge::TurnStarted {
                    origin: TurnOrigin::Taskkeeper,
                },
                t(10 + 2 * i),
            );
            s.apply(
                Edge::TurnEnded {
                    last_words: None,
                    background: vec![],
                },
                t(11 + 2 * i),
            );
        }
        assert_eq!(s.turns.len(), TURNS_KEPT);
        assert_eq!(s.turns.last().map(|x| x.ended_at), Some(Some(t(89))));
        s.apply(
            Edge::TurnStarted {
                origin: TurnOrigin::Owner,
            },
            t(100),
        );
        s.apply(Edge::Ended, t(101));
        assert_eq!(s.turns.last().and_then(|x| x.ended_at), Some(t(101)));
    }

    fn session() -> Session {
        Session::new(
            "s-1".into(),
            "web".parse().unwrap(),
            AgentKind::ClaudeCode,
            "/src/web".into(),
            t(0),
        )
    }

    #[test]
    fn a_turn_with_a_tool_and_a_background_command() {
        let mut s = session();
        s.apply(
            Edge::TurnStarted {
                origin: TurnOrigin::Owner,
            },
            t(1),
        );
        s.apply(Edge::ToolActivity, t(2));
        s.apply(Edge::BackgroundStarted { id: "b1".into() }, t(3));
        s.apply(
            Edge::TurnEnded {
                last_words: Some("Now writing the probe…".into()),
                background: vec!["b1".into()],
            },
            t(4),
        );
        assert_eq!(
            (s.activity, s.since, s.background.len()),
            (Activity::Idle, t(4), 1)
        );
        assert_eq!(s.last_words.as_deref(), Some("Now writing the probe…"));
        // The background command finished: it woke the session, whose next Stop lists none.
        s.apply(
            Edge::TurnStarted {
                origin: TurnOrigin::Background,
            },
            t(60),
        );
        s.apply(
            Edge::TurnEnded {
                last_words: None,
                background: vec![],
            },
            t(61),
        );
        assert_eq!(
            (s.background.len(), s.background_ended_at),
            (0, Some(t(61)))
        );
        assert_eq!(
            s.last_words.as_deref(),
            Some("Now writing the probe…"),
            "empty last words keep the old ones"
        );
    }

    #[test]
    fn esc_fires_no_hook_and_the_level_signal_says_stopped() {
        let mut s = session();
        s.apply(
            Edge::TurnStarted {
                origin: TurnOrigin::Owner,
            },
            t(1),
        );
        s.reconcile(Level::Busy, t(2));
        assert_eq!(s.activity, Activity::Busy);
        s.reconcile(Level::Idle, t(3));
        assert_eq!((s.activity, s.since), (Activity::StoppedByOwner, t(3)));
        // Someone writes to it again.
        s.apply(
            Edge::TurnStarted {
                origin: TurnOrigin::Owner,
            },
            t(9),
        );
        assert_eq!(s.activity, Activity::Busy);
    }

    #[test]
    fn an_interrupt_the_agent_reports_stops_a_busy_turn_and_nothing_else() {
        let mut s = session();
        s.apply(Edge::Interrupted, t(1));
        assert_eq!(s.activity, Activity::Idle, "no turn, nothing to stop");
        s.apply(
            Edge::TurnStarted {
                origin: TurnOrigin::Owner,
            },
            t(2),
        );
        s.apply(Edge::Interrupted, t(3));
        assert_eq!((s.activity, s.since), (Activity::StoppedByOwner, t(3)));
        s.apply(Edge::Ended, t(4));
        s.apply(Edge::Interrupted, t(5));
        assert_eq!(s.activity, Activity::Ended);
    }

    #[test]
    fn a_permission_prompt_then_esc() {
        let mut s = session();
        s.apply(
            Edge::TurnStarted {
                origin: TurnOrigin::Owner,
            },
            t(1),
        );
        s.apply(Edge::WaitingOnOwner, t(2));
        assert_eq!(s.activity, Activity::WaitingOnOwner);
        s.reconcile(Level::Idle, t(5));
        assert_eq!(s.activity, Activity::StoppedByOwner);
    }

    #[test]
    fn a_killed_session_ends_and_stays_ended() {
        let mut s = session();
        s.apply(
            Edge::TurnStarted {
                origin: TurnOrigin::Owner,
            },
            t(1),
        );
        s.reconcile(Level::Gone, t(2));
        assert_eq!(s.activity, Activity::Ended);
        s.apply(Edge::ToolActivity, t(3));
        s.reconcile(Level::Busy, t(3));
        assert_eq!(s.activity, Activity::Ended);
    }

    fn utc(text: &str) -> Timestamp {
        Timestamp::parse_rfc3339(text).unwrap()
    }

    fn wake(schedule: &str, recurring: bool) -> SelfWake {
        SelfWake {
            schedule: schedule.into(),
            recurring,
        }
    }

    /// Claude Code reads the expressions in local time and fires a recurring one up to a tenth
    /// of its period late (at most 15 minutes): the wake is due when Claude Code may fire it.
    #[test]
    fn a_wake_up_is_due_when_the_agent_may_fire_it_in_its_own_time_zone() {
        let now = utc("2026-12-01T12:02:30.000Z");
        let utc_tz = chrono::Utc;
        let plus_one = chrono::FixedOffset::east_opt(3600).unwrap();
        let next = |w: &[SelfWake], tz: &chrono::FixedOffset| next_wake(w, now, tz);
        assert_eq!(
            next_wake(&[wake("*/5 * * * *", true)], now, &utc_tz),
            Some(utc("2026-12-01T12:05:30.000Z")),
            "every 5 minutes: at most 30 s late"
        );
        assert_eq!(
            next(&[wake("7 * * * *", true)], &plus_one),
            Some(utc("2026-12-01T12:13:00.000Z")),
            "hourly at :07 (13:07 local): at most 6 minutes late"
        );
        assert_eq!(
            next(&[wake("0 9 * * *", true)], &plus_one),
            Some(utc("2026-12-02T08:15:00.000Z")),
            "daily at 9 local (08:00 UTC, passed today): tomorrow, at most 15 minutes late"
        );
        assert_eq!(
            next(&[wake("30 14 1 12 *", false)], &plus_one),
            Some(utc("2026-12-01T13:30:00.000Z")),
            "a one-shot at 14:30 local, on time"
        );
        assert_eq!(
            next(
                &[
                    wake("0 9 * * *", true),
                    wake("not a schedule", false),
                    wake("45 13 * * *", false),
                ],
                &plus_one
            ),
            Some(utc("2026-12-01T12:45:00.000Z")),
            "the earliest counts; one that does not parse counts for nothing"
        );
        // What ScheduleWakeup(600 s) at 13:53 listed (a real Stop payload): 14:04, once.
        let loop_wake = [wake("4 14 * * *", false)];
        assert_eq!(
            next_wake(&loop_wake, utc("2026-12-01T13:55:00.000Z"), &utc_tz),
            Some(utc("2026-12-01T14:04:00.000Z"))
        );
        assert_eq!(
            next_wake(&loop_wake, utc("2026-12-01T14:10:00.000Z"), &utc_tz),
            Some(utc("2026-12-01T14:04:00.000Z")),
            "still listed after its time: missed, it fires at the next idle moment, not tomorrow"
        );
        assert_eq!(next(&[], &plus_one), None);
        assert_eq!(next(&[wake("* * 31 2 *", false)], &plus_one), None, "never");
    }

    #[test]
    fn a_scheduled_wake_is_kept_until_a_turn_end_says_otherwise() {
        let mut s = session();
        s.apply(Edge::WakeScheduled { at: Some(t(600)) }, t(1));
        assert_eq!(s.wakes_at, Some(t(600)));
        s.apply(
            Edge::TurnStarted {
                origin: TurnOrigin::Owner,
            },
            t(2),
        );
        assert_eq!(
            s.wakes_at,
            Some(t(600)),
            "the turn's own Stop says it again"
        );
        s.apply(Edge::WakeScheduled { at: None }, t(3));
        assert_eq!(s.wakes_at, None);
    }

    #[test]
    fn a_rate_limit_is_kept_until_the_next_turn() {
        let mut s = session();
        s.apply(
            Edge::TurnStarted {
                origin: TurnOrigin::Owner,
            },
            t(1),
        );
        s.apply(
            Edge::TurnFailed {
                rate_limited_until: Some(t(3600)),
            },
            t(2),
        );
        assert_eq!(
            (s.activity, s.rate_limited_until),
            (Activity::Idle, Some(t(3600)))
        );
        s.apply(
            Edge::TurnStarted {
                origin: TurnOrigin::Owner,
            },
            t(4000),
        );
        assert_eq!(s.rate_limited_until, None);
    }

    #[test]
    fn the_mark_follows_waiting_on_the_owner_and_nothing_else() {
        use Activity::*;
        let all = [Busy, Idle, WaitingOnOwner, StoppedByOwner, Ended];
        for before in all {
            for after in all {
                let want = match (before, after) {
                    (b, WaitingOnOwner) if b != WaitingOnOwner => Some(true),
                    (WaitingOnOwner, a) if a != WaitingOnOwner => Some(false),
                    _ => None,
                };
                assert_eq!(
                    owner_wait_change(before, after),
                    want,
                    "{before:?} -> {after:?}"
                );
            }
        }
        // Esc at a prompt, a failed turn, an end: each clears it.
        for after in [StoppedByOwner, Idle, Ended, Busy] {
            assert_eq!(owner_wait_change(WaitingOnOwner, after), Some(false));
        }
    }

    #[test]
    fn the_newest_live_session_holds_its_desk_whatever_the_order() {
        let at = |id: &str, desk: &str, updated: i64, live: bool| {
            let mut s = session();
            s.id = id.into();
            s.desk = desk.parse().unwrap();
            s.updated_at = t(updated);
            if !live {
                s.activity = Activity::Ended;
            }
            s
        };
        let sessions = vec![
            at("a", "web", 1, true),
            at("b", "web", 5, true),
            at("c", "web", 9, false),
            at("d", "api", 3, true),
            at("e", "api", 3, true),
        ];
        let mut reversed = sessions.clone();
        reversed.reverse();
        assert_eq!(holder(&sessions[3..]).map(|s| s.id.as_str()), Some("d"));
        assert_eq!(
            holder(&reversed[..2]).map(|s| s.id.as_str()),
            Some("d"),
            "ties go to the smaller id"
        );
        assert_eq!(holder(&sessions[..3]).map(|s| s.id.as_str()), Some("b"));
        assert_eq!(
            holder(&sessions[2..3]),
            None,
            "an ended session holds nothing"
        );
    }

    /// The session a task was handed to works on it, though a newer one holds the desk; what
    /// no session was handed goes by the desk's newest live session; a task handed to a
    /// session that is gone is nobody's until it is given back.
    #[test]
    fn the_session_a_task_was_handed_to_works_on_it() {
        let at = |id: &str, updated: i64, live: bool| {
            let mut s = session();
            s.id = id.into();
            s.updated_at = t(updated);
            if !live {
                s.activity = Activity::Ended;
            }
            s
        };
        let (older, newer, gone) = (at("a", 1, true), at("b", 5, true), at("c", 9, false));
        let mut api = at("d", 7, true);
        api.desk = "api".parse().unwrap();
        let sessions = vec![older, newer, gone, api];
        let task = |to: Option<&str>| {
            let new = crate::task::NewTask {
                desk: "web".parse().unwrap(),
                asker: "alice".into(),
                request: crate::task::Message::user_text("m-1", "Add a --json flag"),
                context_id: None,
                metadata: serde_json::Map::new(),
            };
            let mut task = Task::submit("t-1".into(), new, 1, t(0));
            task.delivered_to = to.map(SessionId::from);
            task
        };
        let who = |t: &Task| works_on(t, &sessions).map(|s| s.id.to_string());
        assert_eq!(
            who(&task(Some("a"))).as_deref(),
            Some("a"),
            "handed to the older"
        );
        assert_eq!(who(&task(None)).as_deref(), Some("b"), "the desk's newest");
        assert_eq!(who(&task(Some("c"))), None, "handed to one that ended");
        assert_eq!(who(&task(Some("d"))), None, "a session of another desk");
        let (to_a, queued) = (task(Some("a")), task(None));
        let work = work(&sessions, [&queued, &to_a]);
        let pairs: Vec<(&str, usize)> = work
            .iter()
            .map(|(s, ts)| (s.id.as_str(), ts.len()))
            .collect();
        assert_eq!(pairs, [("a", 1), ("b", 1)], "in the sessions' order");
        assert_eq!(
            work[0].1[0].delivered_to.as_ref().map(SessionId::as_str),
            Some("a")
        );
    }
}
