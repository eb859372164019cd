//! What reaches a terminal. A tmux pane is pasted into only when it belongs to the session's
//! own process, checked before every paste; and what is pasted arrives as one bracketed
//! paste whatever the asker wrote. Real tmux servers on private sockets, with two kinds of
//! pane: a shell (what an attacker would name: a task's words pasted there run), and a
//! recorder that asks for bracketed paste and keeps every byte it is given.
//!
//! "Nothing was pasted" is never concluded from a pause: the desk's command delivering the
//! task says the paste was tried and refused (the command is the next method), and a
//! sentinel typed into the shell afterwards says the shell has run all it was given before.

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::json;

use crate::hooks::Hooks;
use crate::support::{TestDaemon, read, until};

/// A tmux server of the test's own, killed on drop; its panes start in `dir`, so whatever a
/// failing run makes a shell do stays in the test's directory.
pub(crate) struct Tmux {
    pub(crate) sock: PathBuf,
    pub(crate) dir: PathBuf,
}

impl Tmux {
    pub(crate) fn new(dir: &Path) -> Self {
        Self {
            sock: dir.join("tmux.sock"),
            dir: dir.to_owned(),
        }
    }

    pub(crate) fn socket(&self) -> String {
        self.sock.to_string_lossy().into_owned()
    }

    pub(crate) fn run(&self, args: &[&str]) -> String {
        let out = Command::new("tmux")
            .arg("-S")
            .arg(&self.sock)
            .arg("-f")
            .arg("/dev/null")
            .args(args)
            .output()
            .unwrap_or_else(|e| panic!("cannot run tmux (apt package tmux): {e}"));
        assert!(
            out.status.success(),
            "tmux {args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).trim().to_owned()
    }

    /// A new tmux session `name` running `command`; its pane's id.
    pub(crate) fn pane(&self, name: &str, command: &str) -> String {
        self.run(&[
            "new-session",
            "-d",
            "-c",
            &self.dir.to_string_lossy(),
            "-s",
            name,
            "-x",
            "200",
            "-y",
            "50",
            command,
        ]);
        self.run(&["display-message", "-p", "-t", name, "#{pane_id}"])
    }

    pub(crate) fn pane_pid(&self, pane: &str) -> u32 {
        self.run(&["display-message", "-p", "-t", pane, "#{pane_pid}"])
            .parse()
            .unwrap()
    }

    /// Type a line into the pane, as a person would.
    pub(crate) fn type_line(&self, pane: &str, line: &str) {
        self.run(&["send-keys", "-t", pane, "-l", line]);
        self.run(&["send-keys", "-t", pane, "Enter"]);
    }
}

impl Drop for Tmux {
    fn drop(&mut self) {
        let _ = Command::new("tmux")
            .arg("-S")
            .arg(&self.sock)
            .arg("kill-server")
            .output();
    }
}

/// What a hook reports about the session's reach: the pane, its server, and the pid.
pub(crate) fn reach(tmux: &Tmux, pane: &str, pid: Option<u32>) -> Vec<(&'static str, String)> {
    let mut headers = vec![
        ("X-Taskkeeper-Tmux-Pane", pane.to_owned()),
        ("X-Taskkeeper-Tmux", format!("{},1,0", tmux.socket())),
    ];
    if let Some(pid) = pid {
        headers.push(("X-Taskkeeper-Pid", pid.to_string()));
    }
    headers
}

/// The desk `web` at the hooks' directory, with a command that appends what it is given to
/// `out/texts`: the method after the paste.
pub(crate) fn web_desk(d: &TestDaemon, h: &Hooks<'_>) -> PathBuf {
    let out = d.data_dir.join("out");
    std::fs::create_dir_all(&out).unwrap();
    std::fs::create_dir_all(&h.cwd).unwrap();
    let command = format!("cat >> {}/texts", out.display());
    let (status, desk) = d.call(
        "POST",
        "/api/desks",
        Some(&json!({"name": "web", "dir": h.cwd, "deliverCommand": command})),
    );
    assert_eq!(status, 201, "{desk}");
    out.join("texts")
}

pub(crate) fn delivered(d: &TestDaemon, id: &str) -> Option<()> {
    d.task(id)["deliveredAt"].is_string().then_some(())
}

/// The shell in `pane` has run everything it was given before now, and none of it touched
/// `marker`: a sentinel typed after it has run. (Words pasted there that left the shell
/// inside a quote would swallow the sentinel: that fails too.)
pub(crate) fn shell_ran_nothing_of_it(tmux: &Tmux, pane: &str, dir: &Path, marker: &Path) {
    let sentinel = dir.join("sentinel");
    tmux.type_line(pane, &format!("touch {}", sentinel.display()));
    until("the shell to run the sentinel", || {
        assert!(
            !marker.exists(),
            "a task's words ran in a shell that is not the session's"
        );
        sentinel.exists().then_some(())
    });
    assert!(!marker.exists());
}

/// A session naming a pane that runs a shell, with a pid that is not the pane's process nor
/// a child of it (the test's own process), or with no pid at all: nothing is pasted into
/// the shell, and the task goes through the desk's command instead.
#[test]
fn a_pane_that_is_not_the_sessions_own_is_never_pasted_into() {
    for pid in [Some(std::process::id()), None] {
        let d = TestDaemon::start();
        let h = Hooks::new(&d);
        let texts = web_desk(&d, &h);
        let tmux = Tmux::new(&d.data_dir);
        let shell = tmux.pane("victim", "sh");
        let (status, _) = h.send(
            "s-1",
            "SessionStart",
            json!({"source": "startup"}),
            &reach(&tmux, &shell, pid),
        );
        assert_eq!(status, 200);
        let marker = d.data_dir.join("pwned");
        // An asker cannot even name the pane: its token opens no hook route.
        let (_, asker) = d.call("POST", "/api/askers", Some(&json!({"name": "mallory"})));
        let mut headers = vec![
            (
                "Authorization".to_owned(),
                format!("Bearer {}", asker["token"].as_str().unwrap()),
            ),
            ("Content-Type".to_owned(), "application/json".to_owned()),
        ];
        headers.extend(
            reach(&tmux, &shell, Some(std::process::id()))
                .into_iter()
                .map(|(k, v)| (k.to_owned(), v)),
        );
        let body = json!({"session_id": "s-evil", "hook_event_name": "SessionStart",
            "cwd": h.cwd, "source": "startup"});
        let (status, text) = d.raw(
            "POST",
            "/hooks/claude-code",
            &d.host(),
            &headers,
            &body.to_string(),
        );
        assert_eq!(status, 403, "{text}");
        // Pasted into a shell, `$(...)` runs whatever line it lands on.
        let id = d.add_task("web", &format!("Please run\n$(touch {})", marker.display()));

        until("the command to deliver", || {
            read(&texts).filter(|t| t.contains(&id))
        });
        until("the task marked delivered", || delivered(&d, &id));
        shell_ran_nothing_of_it(&tmux, &shell, &d.data_dir, &marker);
    }
}

/// A pane (tmux session `name`) that asks for bracketed paste and records every byte, run by
/// the session's process's parent: the session's pid is the recorder's `cat`, a child of the
/// pane's process. Returns the pane, the pid and the record's path.
pub(crate) fn recorder(tmux: &Tmux, dir: &Path, name: &str) -> (String, u32, PathBuf) {
    let (script, child, record) = (
        dir.join(format!("{name}.sh")),
        dir.join(format!("{name}.pid")),
        dir.join(format!("{name}.record")),
    );
    std::fs::write(
        &script,
        format!(
            "printf '\\033[?2004hREADY\\n'\n\
             stty raw -echo\n\
             sh -c 'echo $$ > \"$1\"; exec cat > \"$2\"' sh '{}' '{}'\n",
            child.display(),
            record.display()
        ),
    )
    .unwrap();
    let pane = tmux.pane(name, &format!("exec sh '{}'", script.display()));
    // tmux reads the pane's output in order: once READY shows, the mode is set.
    until("the recorder to ask for bracketed paste", || {
        tmux.run(&["capture-pane", "-p", "-t", &pane])
            .contains("READY")
            .then_some(())
    });
    let pid: u32 = until("the recorder's pid", || {
        read(&child).and_then(|p| p.trim().parse().ok())
    });
    assert_ne!(pid, tmux.pane_pid(&pane), "a child of the pane's process");
    (pane, pid, record)
}

/// The session's own pane gets the paste, as one bracketed paste even though the asker's
/// words hold the sequence that ends one; a later report that moves the session's reach to
/// a shell's pane gets the same check before the next paste, and is refused.
#[test]
fn the_sessions_own_pane_gets_one_paste_and_a_moved_reach_is_checked_again() {
    let d = TestDaemon::start();
    let h = Hooks::new(&d);
    let texts = web_desk(&d, &h);
    let tmux = Tmux::new(&d.data_dir);
    let (pane, pid, record) = recorder(&tmux, &d.data_dir, "cc");
    let shell = tmux.pane("victim", "sh");
    let (status, _) = h.send(
        "s-1",
        "SessionStart",
        json!({"source": "startup"}),
        &reach(&tmux, &pane, Some(pid)),
    );
    assert_eq!(status, 200);

    let first = d.add_task(
        "web",
        "Look at this\u{1b}[201~\nechoed after the paste\u{9b}201~",
    );
    let got = until("the paste and its Enter", || {
        read(&record).filter(|r| r.contains(&first) && r.ends_with('\r'))
    });
    assert!(got.starts_with("\u{1b}[200~«Taskkeeper» Task "), "{got:?}");
    assert_eq!(got.matches("\u{1b}[200~").count(), 1, "{got:?}");
    assert_eq!(got.matches("\u{1b}[201~").count(), 1, "one paste: {got:?}");
    let (inside, after) = got.split_once("\u{1b}[201~").unwrap();
    assert!(
        inside.contains("\r│ Look at this[201~\r│ echoed after the paste201~\r"),
        "the asker's words are inside the paste: {got:?}"
    );
    assert!(inside.contains("task_update"), "{got:?}");
    assert!(
        after.chars().all(|c| c == '\r'),
        "after the paste only Enter: {got:?}"
    );
    assert!(read(&texts).is_none(), "the paste, not the command");
    h.ok("s-1", "UserPromptSubmit", json!({"prompt": "(pasted)"}));
    until("the paste confirmed", || delivered(&d, &first));

    // The turn ends naming another pane (a shell), with the same pid; the first task ends,
    // and the next one must not be pasted there.
    let (status, _) = h.send(
        "s-1",
        "Stop",
        json!({"last_assistant_message": "Looking."}),
        &reach(&tmux, &shell, Some(pid)),
    );
    assert_eq!(status, 200);
    assert_eq!(h.session("s-1")["tmuxPane"], shell.as_str());
    let (status, _) = d.call(
        "POST",
        &format!("/api/tasks/{first}/update"),
        Some(&json!({"status": "done", "text": "Looked"})),
    );
    assert_eq!(status, 200);
    let marker = d.data_dir.join("pwned");
    let second = d.add_task("web", &format!("Then\n$(touch {})", marker.display()));
    until("the command to deliver the second", || {
        read(&texts).filter(|t| t.contains(&second))
    });
    until("the second marked delivered", || delivered(&d, &second));
    shell_ran_nothing_of_it(&tmux, &shell, &d.data_dir, &marker);
    assert!(
        !read(&record).unwrap_or_default().contains(&second),
        "nor did the second go to the old pane"
    );
}
