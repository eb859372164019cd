//! The desktop notifier without a desktop: what a notification says, and how the notifier
//! thread behaves around a service that hangs (a fake [`Desktop`] that blocks until released).

use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use taskkeeper_app_lib::notifications::{
    Act, Click, Clicks, Desktop, DesktopNotifier, Note, Undelivered, body_markup, render,
};
use taskkeeper_core::{Message, NewTask, Task, TaskId, TaskState, Timestamp};
use taskkeeper_server::notify::{Notice, Notifier as _};
use taskkeeper_server::{Daemon, DaemonConfig};
use tauri::async_runtime::block_on;

/// A task as the store keeps it, in `state`, with the worker's status text if any.
fn task(id: &str, desk: &str, request: &str, state: TaskState, status: Option<&str>) -> Box<Task> {
    let now = Timestamp::parse_rfc3339("2026-11-30T10:00:00Z").unwrap();
    let new = NewTask {
        desk: desk.parse().unwrap(),
        asker: "owner".into(),
        request: Message::user_text("m-1", request),
        context_id: Some("c".into()),
        metadata: Default::default(),
    };
    let mut task = Task::submit(TaskId::from(id), new, 1, now);
    task.status.state = state;
    task.status.message = status.map(|text| Message::agent_text("m-2", text));
    Box::new(task)
}

fn stalled(id: &str, desk: &str, request: &str) -> Notice {
    Notice::Stalled {
        task: task(id, desk, request, TaskState::Working, None),
    }
}

fn ended(desk: &str, open_tasks: usize) -> Notice {
    Notice::SessionEnded {
        session: "s-1".into(),
        desk: desk.into(),
        open_tasks,
    }
}

#[test]
fn a_stall_names_the_desk_and_the_requests_first_line() {
    let note = render(&[stalled(
        "t-1",
        "web",
        "\n  Add a --json flag  \nand a test for it",
    )]);
    assert_eq!(
        (note.summary.as_str(), note.body.as_str(), &note.click),
        (
            "Task stalled at web",
            "Add a --json flag",
            &Click::Task("t-1".into())
        )
    );
    let long = render(&[stalled("t-1", "web", &"word ".repeat(100))]);
    assert!(
        long.body.chars().count() <= 120 && long.body.ends_with('…'),
        "{long:?}"
    );
}

#[test]
fn a_session_that_ended_with_tasks_open_says_so() {
    let note = render(&[ended("api", 2)]);
    assert_eq!(
        (note.summary.as_str(), note.body.as_str(), &note.click),
        (
            "Session ended at api",
            "It ended with 2 tasks still open.",
            &Click::Window
        )
    );
    assert_eq!(
        render(&[ended("api", 1)]).body,
        "It ended with 1 task still open."
    );
}

fn asked(desk: &str, tool: &str, description: Option<&str>) -> Notice {
    Notice::PermissionAsked {
        session: "s-2".into(),
        desk: desk.into(),
        tool: tool.into(),
        description: description.map(Into::into),
        request_id: Some("r-1".into()),
    }
}

#[test]
fn a_permission_request_names_the_desk_and_the_tool_and_says_what_the_call_does() {
    let note = render(&[asked("web", "Bash", Some("touch x"))]);
    assert_eq!(
        (note.summary.as_str(), note.body.as_str(), &note.click),
        (
            "A session at web asks to use Bash",
            "touch x",
            &Click::Desks
        )
    );
    // Without a description the body says what the session waits for.
    assert_eq!(
        render(&[asked("web", "Write", None)]).body,
        "It waits until you allow or deny it."
    );
    // A long or multi-line description is cut like a request.
    let long = render(&[asked(
        "web",
        "Bash",
        Some(&format!("\n{}\nmore", "word ".repeat(100))),
    )]);
    assert!(
        long.body.chars().count() <= 120 && long.body.ends_with('…') && !long.body.contains('\n'),
        "{long:?}"
    );
}

fn buttons(note: &Note) -> Vec<(&str, &str)> {
    note.buttons.iter().map(|b| (b.key, b.label)).collect()
}

fn task_notice(kind: &str, id: &str, state: &str, status: Option<&str>) -> Notice {
    let state = match state {
        "input-required" => TaskState::InputRequired,
        "completed" => TaskState::Completed,
        other => panic!("no task state {other} in these tests"),
    };
    let task = task(id, "web", "Port the parser", state, status);
    match kind {
        "blocked" => Notice::Blocked { task },
        _ => Notice::Finished { task },
    }
}

#[test]
fn each_kind_of_notification_carries_its_actions() {
    let note = render(&[stalled("t-1", "web", "Add a flag")]);
    assert_eq!(
        buttons(&note),
        [
            ("open", "Open"),
            ("remind", "Remind now"),
            ("snooze", "Snooze 1 h")
        ]
    );
    assert_eq!(note.act("remind"), Some(Act::Remind("t-1".into())));
    assert_eq!(note.act("snooze"), Some(Act::Snooze("t-1".into())));
    assert_eq!(
        note.act("default"),
        Some(Act::Open(Click::Task("t-1".into())))
    );
    assert_eq!(note.act("open"), note.act("default"));
    assert_eq!(note.act("allow"), None, "a key this notification has not");

    let note = render(&[asked("web", "Bash", None)]);
    assert_eq!(
        buttons(&note),
        [("allow", "Allow"), ("deny", "Deny"), ("open", "Open")]
    );
    assert_eq!(
        note.act("deny"),
        Some(Act::Answer {
            session: "s-2".into(),
            allow: false,
            request_id: Some("r-1".into())
        }),
        "the answer names the request it answers"
    );

    let note = render(&[ended("api", 1)]);
    assert_eq!(
        buttons(&note),
        [("launch", "Launch a session"), ("open", "Open")]
    );
    assert_eq!(note.act("launch"), Some(Act::Launch("api".into())));

    let note = render(&[task_notice(
        "blocked",
        "t-3",
        "input-required",
        Some("Which branch?\nmain or dev"),
    )]);
    assert_eq!(
        (note.summary.as_str(), note.body.as_str(), buttons(&note)),
        (
            "Task at web waits on its asker",
            "Which branch?",
            vec![("open", "Open")]
        )
    );
    let note = render(&[task_notice("finished", "t-4", "completed", None)]);
    assert_eq!(
        (note.summary.as_str(), note.body.as_str(), &note.click),
        (
            "Task finished at web",
            "Port the parser",
            &Click::Task("t-4".into())
        )
    );

    // Several things at once: only Open, on what they share.
    let note = render(&[
        stalled("t-1", "web", "x"),
        task_notice("finished", "t-4", "completed", None),
    ]);
    assert_eq!(note.summary, "1 task stalled · 1 task finished");
    assert_eq!(buttons(&note), [("open", "Open")]);
    assert_eq!(note.click, Click::Window);
}

#[test]
fn permission_requests_coalesce_with_stalls_and_ended_sessions() {
    let note = render(&[
        stalled("t-1", "web", "Add a --json flag"),
        asked("web", "Bash", Some("touch x")),
        ended("docs", 1),
        asked("api", "mcp__db__query", None),
    ]);
    assert_eq!(
        note.summary,
        "1 task stalled · 1 session ended with tasks open · 2 sessions asking you"
    );
    assert_eq!(
        note.body,
        "web: Add a --json flag\nweb: asks to use Bash\ndocs: session ended, 1 task open\napi: asks to use mcp__db__query"
    );
    assert_eq!(
        note.click,
        Click::Window,
        "a request is answered in the Desks view, not on the task"
    );

    let note = render(&[asked("web", "Bash", None), asked("api", "Write", None)]);
    assert_eq!(note.summary, "2 sessions asking you");
    assert_eq!(note.body, "web: asks to use Bash\napi: asks to use Write");
    assert_eq!(
        note.click,
        Click::Desks,
        "only requests: where they are answered"
    );

    let note = render(&[asked("web", "Bash", None), stalled("t-1", "web", "x")]);
    assert_eq!(note.summary, "1 task stalled · 1 session asking you");
    assert_eq!(note.click, Click::Window);
}

#[test]
fn several_notices_become_one_notification() {
    let note = render(&[
        stalled("t-1", "web", "Add a --json flag"),
        stalled("t-2", "api", "Fix the login"),
        ended("docs", 1),
    ]);
    assert_eq!(
        note.summary,
        "2 tasks stalled · 1 session ended with tasks open"
    );
    assert_eq!(
        note.body,
        "web: Add a --json flag\napi: Fix the login\ndocs: session ended, 1 task open"
    );
    assert_eq!(
        note.click,
        Click::Window,
        "two tasks: the click opens the list"
    );

    let many: Vec<_> = (0..6)
        .map(|i| stalled(&format!("t-{i}"), "web", "x"))
        .collect();
    let note = render(&many);
    assert_eq!(note.summary, "6 tasks stalled");
    assert!(note.body.ends_with("\nand 2 more"), "{}", note.body);
}

/// A notification service that hangs on the first notification until the test releases it,
/// and records what it was asked to show.
struct HangingDesktop {
    shown: Arc<Mutex<Vec<Note>>>,
    release: Option<mpsc::Receiver<()>>,
    started: mpsc::Sender<()>,
}

impl Desktop for HangingDesktop {
    fn show(&mut self, note: &Note, clicks: &Clicks) -> Result<(), Undelivered> {
        let _ = self.started.send(());
        if let Some(release) = self.release.take() {
            let _ = release.recv();
        }
        self.shown.lock().unwrap().push(note.clone());
        // The owner clicks every notification at once.
        clicks.clicked(&note.click);
        Ok(())
    }
}

#[test]
fn a_hung_service_blocks_no_caller_and_what_queues_meanwhile_is_coalesced() {
    let shown = Arc::new(Mutex::new(Vec::new()));
    let (release_tx, release) = mpsc::channel();
    let (started_tx, started) = mpsc::channel();
    let notifier = DesktopNotifier::with_desktop(HangingDesktop {
        shown: shown.clone(),
        release: Some(release),
        started: started_tx,
    })
    .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let daemon = block_on(Daemon::start(DaemonConfig::new(0, dir.path().to_owned()))).unwrap();
    let (clicked_tx, clicked) = mpsc::channel();
    let clicked_tx = Mutex::new(clicked_tx);
    notifier.attach(daemon.owner(), move |target| {
        let _ = clicked_tx.lock().unwrap().send(target.clone());
    });
    let mut page = notifier.subscribe();

    notifier.notice(stalled("t-1", "web", "First"));
    started.recv_timeout(Duration::from_secs(5)).unwrap();
    // The service hangs on the first; the watchdog goes on telling.
    let before = Instant::now();
    for i in 2..=4 {
        notifier.notice(stalled(&format!("t-{i}"), "web", "More"));
    }
    notifier.notice(ended("api", 1));
    assert!(
        before.elapsed() < Duration::from_millis(50),
        "notice() waited {:?}",
        before.elapsed()
    );
    // The page hears every notice at once, whatever the desktop does.
    for _ in 0..5 {
        assert!(page.try_recv().is_ok());
    }

    release_tx.send(()).unwrap();
    started.recv_timeout(Duration::from_secs(5)).unwrap();
    let deadline = Instant::now() + Duration::from_secs(5);
    while shown.lock().unwrap().len() < 2 && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    let shown = shown.lock().unwrap().clone();
    assert_eq!(shown.len(), 2, "{shown:#?}");
    assert_eq!(shown[0].summary, "Task stalled at web");
    assert_eq!(
        shown[1].summary,
        "3 tasks stalled · 1 session ended with tasks open"
    );
    // A click on the first opens its task.
    assert_eq!(
        clicked.recv_timeout(Duration::from_secs(5)).unwrap(),
        Click::Task("t-1".into())
    );
    block_on(daemon.shutdown());
}

/// Counts what it shows.
struct CountingDesktop(mpsc::Sender<Note>);

impl Desktop for CountingDesktop {
    fn show(&mut self, note: &Note, _clicks: &Clicks) -> Result<(), Undelivered> {
        let _ = self.0.send(note.clone());
        Ok(())
    }
}

#[test]
fn notifications_follow_the_setting_at_once() {
    let (tx, shown) = mpsc::channel();
    let notifier = DesktopNotifier::with_desktop(CountingDesktop(tx)).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let daemon = block_on(Daemon::start(DaemonConfig::new(0, dir.path().to_owned()))).unwrap();
    let owner = daemon.owner();
    notifier.attach(owner.clone(), |_| {});
    let set = |value: &str| {
        let change = serde_json::Map::from_iter([("notifications.enabled".into(), value.into())]);
        block_on(owner.set_settings(change)).unwrap();
    };

    set("false");
    notifier.notice(stalled("t-1", "web", "Quiet"));
    // The first notice is dealt with (dropped) before the setting changes back.
    handled(&notifier, 1);
    set("true");
    notifier.notice(stalled("t-2", "web", "Loud"));
    let note = shown.recv_timeout(Duration::from_secs(5)).unwrap();
    assert_eq!(note.body, "Loud");
    handled(&notifier, 2);
    assert!(
        shown.try_recv().is_err(),
        "the notice sent while notifications were off was shown"
    );
    block_on(daemon.shutdown());
}

#[test]
fn each_kind_follows_its_own_setting_and_blocked_and_finished_start_off() {
    let (tx, shown) = mpsc::channel();
    let notifier = DesktopNotifier::with_desktop(CountingDesktop(tx)).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let daemon = block_on(Daemon::start(DaemonConfig::new(0, dir.path().to_owned()))).unwrap();
    let owner = daemon.owner();
    notifier.attach(owner.clone(), |_| {});
    let set = |key: &str, value: &str| {
        let change = serde_json::Map::from_iter([(key.into(), value.into())]);
        block_on(owner.set_settings(change)).unwrap();
    };
    // The notifier works in order: a notice shown after others were sent means those others
    // were looked at first (and dropped, when nothing else came).
    let marker = |body: &str| {
        notifier.notice(stalled("t-m", "web", body));
        shown.recv_timeout(Duration::from_secs(5)).unwrap()
    };

    notifier.notice(task_notice("finished", "t-4", "completed", None));
    notifier.notice(task_notice("blocked", "t-3", "input-required", None));
    assert_eq!(
        marker("first").body,
        "first",
        "off by default: only the marker"
    );

    set("notifications.finished", "true");
    notifier.notice(task_notice("finished", "t-4", "completed", None));
    assert_eq!(
        shown.recv_timeout(Duration::from_secs(5)).unwrap().summary,
        "Task finished at web"
    );

    set("notifications.stalled", "false");
    set("notifications.blocked", "true");
    notifier.notice(stalled("t-1", "web", "quiet now"));
    notifier.notice(task_notice("blocked", "t-3", "input-required", None));
    let note = shown.recv_timeout(Duration::from_secs(5)).unwrap();
    assert_eq!(
        note.summary, "Task at web waits on its asker",
        "the stall was left out: {note:?}"
    );
    assert!(shown.recv_timeout(Duration::from_millis(300)).is_err());
    block_on(daemon.shutdown());
}

/// An asker's request reaches a notification's body as text: markup a notification service
/// would render (a link, an image fetched from anywhere) arrives escaped.
#[test]
fn an_askers_markup_reaches_the_body_as_text() {
    assert_eq!(
        body_markup("<a href=\"https://x\">go</a> & <img src=\"https://x/p.png\">"),
        "&lt;a href=\"https://x\"&gt;go&lt;/a&gt; &amp; &lt;img src=\"https://x/p.png\"&gt;"
    );
}

/// Wait until the notifier thread has dealt with `count` notices (shown or left out).
fn handled(notifier: &DesktopNotifier, count: u64) {
    let deadline = Instant::now() + Duration::from_secs(5);
    while notifier.handled() < count {
        assert!(
            Instant::now() < deadline,
            "the notifier dealt with {} of {count} notices",
            notifier.handled()
        );
        std::thread::sleep(Duration::from_millis(5));
    }
}
