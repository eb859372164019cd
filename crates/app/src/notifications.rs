//! Desktop notifications by kind, each kind a setting (`notifications.<kind>`, under
//! `notifications.enabled`): a stall ("Task stalled at web", the request's first line), a
//! headless session that asks to use a tool ("A session at web asks to use Bash", what the
//! call does), a session that ended with tasks open, and (off by default) a task blocked on
//! its asker and a finished task. [`DesktopNotifier`] is the daemon's
//! [`Notifier`](taskkeeper_server::notify::Notifier) in the app (`DaemonConfig::notifier`).
//!
//! A notification about one thing carries actions ([`Act`], [`render`] says which): a stall
//! has Open, Remind now and Snooze 1 h; a permission request Allow, Deny and Open; an ended
//! session Launch a session and Open. Clicking the body opens the window on the task. Every
//! action but Open goes through the owner service ([`OwnerService`]), as the window's own
//! buttons do; its outcome is logged, and a refusal opens the window instead.
//!
//! Showing a notification can block for a long time: a notification service that is registered
//! but hung, or activatable but never starting, holds a D-Bus call 25 s, or 120 s with Debian's
//! session bus configuration (docs/tauri.md §7). So the daemon never waits on one:
//!
//! * [`Notifier::notice`] only puts the notice in a bounded queue and returns (it runs on the
//!   watchdog's task);
//! * one thread, `notifier`, takes notices off the queue and sends one notification at a time;
//!   notices that arrive while a send is in flight are **coalesced** into the next notification
//!   ("3 tasks stalled") instead of piling up behind it;
//! * on Linux each send first asks the bus whether `org.freedesktop.Notifications` has an owner
//!   or can be activated (which never starts a service), and gives up after [`SEND_TIMEOUT`]
//!   (`TASKKEEPER_NOTIFY_TIMEOUT_MS` shortens it for the end-to-end test of a hung service);
//!   no service is a logged warning, never a hang or a crash; the tray icon stays the signal;
//! * the settings are read when a notice arrives, so a change counts at once;
//! * where the service supports actions, a short-lived thread per notification waits for the
//!   owner's choice (`ActionInvoked`) with notify-rust's `wait_for_action`, keeping the
//!   notification's connection alive meanwhile (GNOME drops a notification whose sender has
//!   gone); the chosen action runs on the async runtime, never on the notifier thread.
//!
//! Every notice also goes to the window as `taskkeeper://notice` ([`DesktopNotifier::subscribe`]).

use std::sync::mpsc::{self, Receiver, SyncSender, TrySendError};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use taskkeeper_core::Message;
use taskkeeper_core::settings::NoticeKind;
use taskkeeper_server::OwnerService;
use taskkeeper_server::notify::{Notice, Notifier};
use tokio::sync::broadcast;

/// How long one send may take, service check included, before the notifier gives up on it.
pub const SEND_TIMEOUT: Duration = Duration::from_secs(20);
/// Notices waiting for the notifier thread; more are dropped (they would be coalesced anyway).
const QUEUE: usize = 64;
/// How long "Snooze 1 h" waits before the stall is told again.
pub const SNOOZE: Duration = Duration::from_secs(3600);

/// What a click on a notification opens.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Click {
    /// The window on this task.
    Task(String),
    /// The window on the Desks view, where a session's request is answered.
    Desks,
    /// The window on the Digest view.
    Digest,
    /// The window as it is.
    Window,
}

/// What the owner can do from a notification.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Act {
    /// Open the window (on a task, on the Desks view).
    Open(Click),
    /// Remind the session holding this task now (`remind_now`).
    Remind(String),
    /// Tell the owner of this stalled task again in [`SNOOZE`] (`snooze_task`).
    Snooze(String),
    /// Answer a session's permission request (`answer_permission`).
    Answer {
        session: String,
        allow: bool,
        request_id: Option<String>,
    },
    /// Launch a headless session at this desk (`launch_session`).
    Launch(String),
}

/// A button on a notification: its action key (sent back in `ActionInvoked`), its label.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Button {
    pub key: &'static str,
    pub label: &'static str,
    pub act: Act,
}

/// One notification as the owner reads it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Note {
    pub summary: String,
    pub body: String,
    /// What a click on the body opens (action `default`).
    pub click: Click,
    /// The buttons, in order; a notification about several things has only Open.
    pub buttons: Vec<Button>,
}

impl Note {
    /// What the action key `key` does: `default` is the body's click.
    pub fn act(&self, key: &str) -> Option<Act> {
        if key == "default" {
            return Some(Act::Open(self.click.clone()));
        }
        self.buttons
            .iter()
            .find(|b| b.key == key)
            .map(|b| b.act.clone())
    }
}

fn open_button(click: &Click) -> Button {
    Button {
        key: "open",
        label: "Open",
        act: Act::Open(click.clone()),
    }
}

/// Why a notification was not shown.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Undelivered {
    /// Nobody on the session bus shows notifications (or there is no session bus).
    NoService(String),
    /// The service was there but the send failed or timed out.
    Failed(String),
}

/// Carries out what the owner chose on a notification, once the app is attached.
#[derive(Clone)]
pub struct Clicks(Arc<Link>);

impl Clicks {
    pub fn clicked(&self, target: &Click) {
        self.invoked(&Act::Open(target.clone()));
    }

    /// Runs `act`: Open at once (it only shows the window), the rest on the async runtime
    /// through the owner service. Never blocks the caller on the store.
    pub fn invoked(&self, act: &Act) {
        tracing::info!(?act, "notification action");
        if let Act::Open(target) = act {
            tracing::info!(?target, "notification clicked");
            return self.open(target);
        }
        let Some(owner) = self.0.owner.get().cloned() else {
            tracing::debug!("a notification action came before the app was ready");
            return;
        };
        let (act, clicks) = (act.clone(), self.clone());
        tauri::async_runtime::spawn(async move {
            let (done, on_refusal) = match &act {
                Act::Remind(id) => (
                    owner.remind_now(id).await.map(drop),
                    Click::Task(id.clone()),
                ),
                Act::Snooze(id) => (
                    owner.snooze_task(id, SNOOZE).await.map(drop),
                    Click::Task(id.clone()),
                ),
                Act::Answer {
                    session,
                    allow,
                    request_id,
                } => (
                    owner
                        .answer_permission(session, *allow, None, request_id.clone())
                        .await
                        .map(drop),
                    Click::Desks,
                ),
                Act::Launch(desk) => (owner.launch_session(desk).await.map(drop), Click::Desks),
                Act::Open(_) => return,
            };
            match done {
                Ok(()) => tracing::info!(?act, "notification action done"),
                // The window says why and offers the way on.
                Err(error) => {
                    tracing::warn!(?act, %error, "notification action refused");
                    clicks.open(&on_refusal);
                }
            }
        });
    }

    fn open(&self, target: &Click) {
        match self.0.on_click.get() {
            Some(on_click) => on_click(target),
            None => tracing::debug!("a notification was clicked before the app was ready"),
        }
    }
}

/// Where notifications are shown: the system's service ([`SystemDesktop`]), or a fake in tests.
/// `show` runs on the notifier thread and may block; it must return eventually (the real one
/// gives up after [`SEND_TIMEOUT`]).
pub trait Desktop: Send + 'static {
    fn show(&mut self, note: &Note, clicks: &Clicks) -> Result<(), Undelivered>;
}

type OnClick = Box<dyn Fn(&Click) + Send + Sync>;

/// What the notifier learns after it was handed to the daemon: the owner service (to read
/// settings) and what to do on a click.
#[derive(Default)]
struct Link {
    owner: OnceLock<OwnerService>,
    on_click: OnceLock<OnClick>,
    /// Notices the thread has dealt with (shown, coalesced or left out by the settings):
    /// what a test waits for instead of sleeping.
    handled: std::sync::atomic::AtomicU64,
}

/// The app's [`Notifier`]: see the module docs.
pub struct DesktopNotifier {
    queue: SyncSender<Notice>,
    page: broadcast::Sender<Notice>,
    link: Arc<Link>,
}

impl std::fmt::Debug for DesktopNotifier {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DesktopNotifier").finish_non_exhaustive()
    }
}

impl DesktopNotifier {
    /// Starts the notifier thread over the system's notification service.
    pub fn start() -> std::io::Result<Arc<Self>> {
        let timeout = std::env::var("TASKKEEPER_NOTIFY_TIMEOUT_MS")
            .ok()
            .and_then(|ms| ms.trim().parse().ok())
            .map_or(SEND_TIMEOUT, Duration::from_millis);
        Self::with_desktop(SystemDesktop::new(timeout))
    }

    /// Starts the notifier thread over any [`Desktop`]. The thread ends when the notifier is
    /// dropped.
    pub fn with_desktop(desktop: impl Desktop) -> std::io::Result<Arc<Self>> {
        let (queue, notices) = mpsc::sync_channel(QUEUE);
        let link = Arc::new(Link::default());
        let clicks = Clicks(link.clone());
        let settings = link.clone();
        std::thread::Builder::new()
            .name("notifier".into())
            .spawn(move || run(notices, desktop, &clicks, &settings))?;
        Ok(Arc::new(Self {
            queue,
            page: broadcast::channel(64).0,
            link,
        }))
    }

    /// Connects the notifier to the running app: settings are read from `owner`, clicks go to
    /// `on_click`. Notices before this are shown with notifications enabled.
    pub fn attach(&self, owner: OwnerService, on_click: impl Fn(&Click) + Send + Sync + 'static) {
        let _ = self.link.owner.set(owner);
        let _ = self.link.on_click.set(Box::new(on_click));
    }

    /// Every notice, for the window.
    pub fn subscribe(&self) -> broadcast::Receiver<Notice> {
        self.page.subscribe()
    }

    /// How many notices the notifier thread has dealt with so far, shown or not.
    pub fn handled(&self) -> u64 {
        self.link.handled.load(std::sync::atomic::Ordering::SeqCst)
    }
}

impl Notifier for DesktopNotifier {
    /// Never blocks: the notice is queued for the notifier thread and published to the window.
    fn notice(&self, notice: Notice) {
        let _ = self.page.send(notice.clone());
        match self.queue.try_send(notice) {
            Ok(()) => {}
            Err(TrySendError::Full(_)) => {
                tracing::debug!(
                    "the notifier is behind; a notice is left to the window and the tray"
                );
            }
            Err(TrySendError::Disconnected(_)) => {
                tracing::warn!("the notifier thread is gone; no desktop notification");
            }
        }
    }
}

/// The notifier thread: one send at a time; whatever queued up meanwhile becomes one
/// notification.
fn run(notices: Receiver<Notice>, mut desktop: impl Desktop, clicks: &Clicks, link: &Link) {
    while let Ok(first) = notices.recv() {
        let mut batch = vec![first];
        batch.extend(notices.try_iter());
        let count = batch.len() as u64;
        deliver(batch, &mut desktop, clicks, link);
        link.handled
            .fetch_add(count, std::sync::atomic::Ordering::SeqCst);
    }
    tracing::debug!("notifier thread stopped");
}

/// One batch of notices: as one notification, unless the settings leave them out.
fn deliver(mut batch: Vec<Notice>, desktop: &mut impl Desktop, clicks: &Clicks, link: &Link) {
    if batch.len() > 1 {
        tracing::debug!(
            notices = batch.len(),
            "coalescing notices into one notification"
        );
    }
    let shown = Shown::read(link);
    if !shown.enabled {
        tracing::info!("desktop notifications are off (notifications.enabled); not shown");
        return;
    }
    let before = batch.len();
    batch.retain(|n| n.kind().is_none_or(|k| shown.kinds.contains(&k)));
    if batch.is_empty() {
        tracing::info!(
            notices = before,
            "these kinds of notification are off; not shown"
        );
        return;
    }
    let note = render(&batch);
    match desktop.show(&note, clicks) {
        Ok(()) => tracing::info!(summary = %note.summary, "desktop notification shown"),
        Err(Undelivered::NoService(why)) => tracing::warn!(
            "no desktop notification service ({why}); the tray icon shows it instead: {}",
            note.summary
        ),
        Err(Undelivered::Failed(why)) => {
            tracing::warn!("desktop notification failed ({why}): {}", note.summary);
        }
    }
}

/// Which notifications the settings let through.
struct Shown {
    enabled: bool,
    kinds: Vec<NoticeKind>,
}

impl Shown {
    /// Reads the settings now, so a change takes effect at once. Unreadable settings (or no
    /// daemon yet) count as the defaults: a notification too many beats a stall missed.
    fn read(link: &Link) -> Shown {
        let defaults = taskkeeper_core::settings::Desktop::default();
        let mut shown = Shown {
            enabled: true,
            kinds: defaults.shown.clone(),
        };
        let Some(owner) = link.owner.get() else {
            return shown;
        };
        match tauri::async_runtime::block_on(owner.settings()) {
            Ok(settings) => {
                let text = |key: &str| {
                    settings
                        .get(key)
                        .and_then(|v| v.as_str())
                        .map(str::to_owned)
                };
                shown.enabled = text(taskkeeper_core::settings::NOTIFICATIONS_ENABLED).as_deref()
                    != Some("false");
                shown.kinds = NoticeKind::ALL
                    .into_iter()
                    .filter(|k| match text(k.key()).as_deref() {
                        Some(value) => value == "true",
                        None => defaults.shows(*k),
                    })
                    .collect();
            }
            Err(error) => {
                tracing::warn!(%error, "could not read which notifications are on");
            }
        }
        shown
    }
}

/// What to say about some notices (one, or several coalesced), and the buttons it gets.
pub fn render(batch: &[Notice]) -> Note {
    if let [one] = batch {
        return render_one(one);
    }
    let count = |kind: NoticeKind| batch.iter().filter(|n| n.kind() == Some(kind)).count();
    let stalled: Vec<&str> = batch
        .iter()
        .filter_map(|n| match n {
            Notice::Stalled { task } => Some(task.id.as_str()),
            _ => None,
        })
        .collect();
    let (ended, asks) = (
        count(NoticeKind::SessionEnded),
        count(NoticeKind::Permission),
    );
    let (blocked, finished) = (count(NoticeKind::Blocked), count(NoticeKind::Finished));
    let digests = batch
        .iter()
        .filter(|n| matches!(n, Notice::Digest { .. }))
        .count();
    let mut parts = Vec::new();
    if !stalled.is_empty() {
        parts.push(format!(
            "{} stalled",
            plural(stalled.len(), "task", "tasks")
        ));
    }
    if ended > 0 {
        parts.push(format!(
            "{} ended with tasks open",
            plural(ended, "session", "sessions")
        ));
    }
    if asks > 0 {
        parts.push(format!(
            "{} asking you",
            plural(asks, "session", "sessions")
        ));
    }
    if blocked > 0 {
        parts.push(format!(
            "{} waiting on the asker",
            plural(blocked, "task", "tasks")
        ));
    }
    if finished > 0 {
        parts.push(format!("{} finished", plural(finished, "task", "tasks")));
    }
    if digests > 0 {
        parts.push("the digest".to_owned());
    }
    const SHOWN: usize = 4;
    let mut lines: Vec<String> = batch
        .iter()
        .take(SHOWN)
        .map(|n| match n {
            Notice::Stalled { task } => {
                format!("{}: {}", task.desk, first_line(&task.request_text()))
            }
            Notice::SessionEnded {
                desk, open_tasks, ..
            } => format!(
                "{desk}: session ended, {} open",
                plural(*open_tasks, "task", "tasks")
            ),
            Notice::PermissionAsked { desk, tool, .. } => format!("{desk}: asks to use {tool}"),
            Notice::Digest { counts } => format!("Digest: {}", digest_line(counts)),
            Notice::Blocked { task } => format!("{}: waits on its asker", task.desk),
            Notice::Finished { task } => {
                format!(
                    "{}: finished {}",
                    task.desk,
                    first_line(&task.request_text())
                )
            }
        })
        .collect();
    if batch.len() > SHOWN {
        lines.push(format!("and {} more", batch.len() - SHOWN));
    }
    let mut ids = stalled;
    ids.dedup();
    let others = batch.len() - ids.len() - asks;
    let click = match (ids.as_slice(), others, asks) {
        ([id], 0, 0) => Click::Task((*id).to_owned()),
        // Only requests: they are answered in the Desks view.
        ([], 0, _) => Click::Desks,
        _ => Click::Window,
    };
    Note {
        summary: parts.join(" · "),
        body: lines.join("\n"),
        buttons: vec![open_button(&click)],
        click,
    }
}

/// One notice: the notification with its kind's buttons.
fn render_one(notice: &Notice) -> Note {
    match notice {
        Notice::Stalled { task } => {
            let click = Click::Task(task.id.to_string());
            Note {
                summary: format!("Task stalled at {}", task.desk),
                body: first_line(&task.request_text()),
                buttons: vec![
                    open_button(&click),
                    Button {
                        key: "remind",
                        label: "Remind now",
                        act: Act::Remind(task.id.to_string()),
                    },
                    Button {
                        key: "snooze",
                        label: "Snooze 1 h",
                        act: Act::Snooze(task.id.to_string()),
                    },
                ],
                click,
            }
        }
        Notice::SessionEnded {
            desk, open_tasks, ..
        } => Note {
            summary: format!("Session ended at {desk}"),
            body: format!(
                "It ended with {} still open.",
                plural(*open_tasks, "task", "tasks")
            ),
            click: Click::Window,
            buttons: vec![
                Button {
                    key: "launch",
                    label: "Launch a session",
                    act: Act::Launch(desk.clone()),
                },
                open_button(&Click::Window),
            ],
        },
        Notice::PermissionAsked {
            session,
            desk,
            tool,
            description,
            request_id,
        } => {
            let answer = |allow| Act::Answer {
                session: session.clone(),
                allow,
                request_id: request_id.clone(),
            };
            Note {
                summary: format!("A session at {desk} asks to use {tool}"),
                body: description
                    .as_deref()
                    .map(first_line)
                    .unwrap_or_else(|| "It waits until you allow or deny it.".to_owned()),
                click: Click::Desks,
                buttons: vec![
                    Button {
                        key: "allow",
                        label: "Allow",
                        act: answer(true),
                    },
                    Button {
                        key: "deny",
                        label: "Deny",
                        act: answer(false),
                    },
                    open_button(&Click::Desks),
                ],
            }
        }
        Notice::Blocked { task } => {
            let click = Click::Task(task.id.to_string());
            Note {
                summary: format!("Task at {} waits on its asker", task.desk),
                body: first_line(
                    &task
                        .status
                        .message
                        .as_ref()
                        .map_or_else(|| task.request_text(), Message::text),
                ),
                buttons: vec![open_button(&click)],
                click,
            }
        }
        Notice::Finished { task } => {
            let click = Click::Task(task.id.to_string());
            Note {
                summary: format!("Task finished at {}", task.desk),
                body: first_line(&task.request_text()),
                buttons: vec![open_button(&click)],
                click,
            }
        }
        Notice::Digest { counts } => Note {
            summary: "Digest".to_owned(),
            body: digest_line(counts),
            buttons: vec![open_button(&Click::Digest)],
            click: Click::Digest,
        },
    }
}

/// The digest's counts in one line, only those that are not zero.
fn digest_line(c: &taskkeeper_core::digest::Counts) -> String {
    let parts: Vec<String> = [
        (c.stalled, "stalled"),
        (c.finished, "finished"),
        (c.waiting_on_owner, "waiting on you"),
        (c.ack_pending, "not acknowledged"),
        (c.reminders, "reminders sent"),
    ]
    .iter()
    .filter(|(n, _)| *n > 0)
    .map(|(n, what)| format!("{n} {what}"))
    .collect();
    if parts.is_empty() {
        "Nothing happened since the last digest.".to_owned()
    } else {
        parts.join(", ")
    }
}

fn plural(n: usize, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}

/// A body as XDG notification services read it (they may render markup): task text, which an
/// asker wrote, is escaped so it shows as text and never as a link or an image.
pub fn body_markup(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

/// The first non-blank line of a request, cut to what a notification shows.
fn first_line(text: &str) -> String {
    const MAX: usize = 120;
    let line = text
        .lines()
        .map(str::trim)
        .find(|l| !l.is_empty())
        .unwrap_or("");
    if line.chars().count() <= MAX {
        return line.to_owned();
    }
    let cut: String = line.chars().take(MAX - 1).collect();
    format!("{}…", cut.trim_end())
}

/// The system's notification service through notify-rust: XDG over D-Bus (zbus) on Linux and
/// the BSDs, Notification Center on macOS, toasts on Windows.
#[derive(Debug)]
pub struct SystemDesktop {
    /// How long one send may take (Linux: the service check included).
    #[cfg_attr(not(all(unix, not(target_os = "macos"))), allow(dead_code))]
    timeout: Duration,
    #[cfg(all(unix, not(target_os = "macos")))]
    waiting: Arc<std::sync::atomic::AtomicUsize>,
}

impl SystemDesktop {
    pub fn new(timeout: Duration) -> Self {
        Self {
            timeout,
            #[cfg(all(unix, not(target_os = "macos")))]
            waiting: Arc::default(),
        }
    }
}

impl Default for SystemDesktop {
    fn default() -> Self {
        Self::new(SEND_TIMEOUT)
    }
}

#[cfg(all(unix, not(target_os = "macos")))]
mod xdg {
    use std::sync::atomic::Ordering;

    use zbus::names::BusName;

    use super::{Clicks, Desktop, Note, SystemDesktop, Undelivered};

    const SERVICE: &str = "org.freedesktop.Notifications";
    /// Notifications whose click is still awaited; past this, new ones get no click.
    const MAX_WAITING: usize = 16;

    impl Desktop for SystemDesktop {
        fn show(&mut self, note: &Note, clicks: &Clicks) -> Result<(), Undelivered> {
            let mut notification = notify_rust::Notification::new();
            notification
                .appname("Taskkeeper")
                .icon("taskkeeper-app")
                .summary(&note.summary)
                .body(&super::body_markup(&note.body))
                .action("default", "Open")
                .timeout(notify_rust::Timeout::Default);
            for button in &note.buttons {
                notification.action(button.key, button.label);
            }
            let send = async {
                service_present().await?;
                notification
                    .show_async()
                    .await
                    .map_err(|e| Undelivered::Failed(e.to_string()))
            };
            let timeout = self.timeout;
            let handle =
                tauri::async_runtime::block_on(async { tokio::time::timeout(timeout, send).await })
                    .map_err(|_| {
                        Undelivered::Failed(format!(
                            "the notification service did not answer within {timeout:?}"
                        ))
                    })??;
            tracing::debug!(id = handle.id(), "notification sent");

            if self.waiting.load(Ordering::Relaxed) >= MAX_WAITING {
                tracing::debug!("too many notifications await a click; this one gets none");
                return Ok(());
            }
            let (clicks, note, waiting) = (clicks.clone(), note.clone(), self.waiting.clone());
            waiting.fetch_add(1, Ordering::Relaxed);
            let spawned = std::thread::Builder::new()
                .name("notification-click".into())
                .spawn({
                    let waiting = waiting.clone();
                    move || {
                        // Returns on a click, or when the notification is closed or expires.
                        handle.wait_for_action(|key| match note.act(key) {
                            Some(act) => clicks.invoked(&act),
                            // "__closed" and the like: the notification went away.
                            None => tracing::debug!(key, "notification closed"),
                        });
                        waiting.fetch_sub(1, Ordering::Relaxed);
                    }
                });
            if let Err(error) = spawned {
                waiting.fetch_sub(1, Ordering::Relaxed);
                tracing::debug!(%error, "cannot wait for a click on the notification");
            }
            Ok(())
        }
    }

    /// Whether a notification service runs or can be started, asked of the bus itself, which
    /// never starts one. Without this, a send to a missing service fails fast anyway, but one
    /// that is activatable and broken would block until the bus gives up.
    async fn service_present() -> Result<(), Undelivered> {
        let no_service = |e: &dyn std::fmt::Display| Undelivered::NoService(e.to_string());
        let connection = zbus::Connection::session()
            .await
            .map_err(|e| no_service(&e))?;
        let bus = zbus::fdo::DBusProxy::new(&connection)
            .await
            .map_err(|e| no_service(&e))?;
        let name = BusName::try_from(SERVICE).map_err(|e| no_service(&e))?;
        if bus.name_has_owner(name).await.map_err(|e| no_service(&e))? {
            return Ok(());
        }
        let activatable = bus
            .list_activatable_names()
            .await
            .map_err(|e| no_service(&e))?;
        if activatable.iter().any(|n| n.as_str() == SERVICE) {
            return Ok(());
        }
        Err(Undelivered::NoService(format!(
            "{SERVICE} is neither running nor activatable on the session bus"
        )))
    }
}

#[cfg(not(all(unix, not(target_os = "macos"))))]
impl Desktop for SystemDesktop {
    fn show(&mut self, note: &Note, _clicks: &Clicks) -> Result<(), Undelivered> {
        // Notification Center and toasts don't hang like a D-Bus service can; a click brings
        // the app forward on its own there.
        notify_rust::Notification::new()
            .appname("Taskkeeper")
            .summary(&note.summary)
            .body(&note.body)
            .show()
            .map(|_| ())
            .map_err(|e| Undelivered::Failed(e.to_string()))
    }
}
