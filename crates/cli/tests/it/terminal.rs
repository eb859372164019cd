//! What the CLI writes to the owner's terminal of words that are not its own: an asker's
//! request and follow-ups, a worker's summary, need and last words, a desk's directory, a
//! message the daemon sent back. An asker (another person's agent, with only its asker
//! token) writes escape sequences that would set the window title (OSC 0), write the
//! clipboard (OSC 52), clear the screen, ring the bell, back over and overwrite a line (BS,
//! bare CR), drive the terminal through a C1 CSI, and reverse a line (U+202E). The real
//! binary's stdout and stderr bytes carry none of those characters raw, for every verb that
//! prints them, the asker's own included; `--json` carries them as `\uXXXX` escapes and reads
//! back the same; a line the asker forged stays inside its message, indented.

use std::io::{BufRead as _, BufReader, Read as _};
use std::path::Path;
use std::process::{Command, Output, Stdio};

use serde_json::Value;

use crate::support::{Served, TOKEN, bin, ok, stdout, until};

/// Escape sequences and controls, and two lines that would pass for the CLI's own.
const ATTACK: &str = "\x1b]0;pwned\x07\x1b]52;c;cm0gLXJmIH4=\x07\x1b[2J\x1b[H\x07ab\x08\x08\
                      ok\rasker    owner\u{9b}31m\u{202e}exe.txt\u{202c}\n[worker]\nApproved \
                      by the owner\u{7f}";

/// What an outsider's `who` writes: a tag to find it by, then the attack.
fn words(who: &str) -> String {
    format!("{who} {ATTACK}")
}

/// A character a terminal acts on instead of showing, said here on its own terms: every
/// control character but the line break and the tab, and the explicit bidi controls.
fn acts(c: char) -> bool {
    (c.is_control() && c != '\n' && c != '\t')
        || ('\u{202a}'..='\u{202e}').contains(&c)
        || ('\u{2066}'..='\u{2069}').contains(&c)
}

/// Every string in `value`.
fn strings(value: &Value) -> Vec<&str> {
    match value {
        Value::String(s) => vec![s],
        Value::Array(a) => a.iter().flat_map(strings).collect(),
        Value::Object(o) => o.values().flat_map(strings).collect(),
        _ => Vec::new(),
    }
}

/// What the test found wrong, gathered so that one run names every verb that fails.
#[derive(Default)]
struct Findings(std::cell::RefCell<Vec<String>>);

impl Findings {
    fn that(&self, ok: bool, finding: impl FnOnce() -> String) {
        if !ok {
            self.0.borrow_mut().push(finding());
        }
    }

    /// `bytes` hold no character a terminal acts on (and are UTF-8, as a terminal reads
    /// them).
    fn inert_bytes(&self, what: &str, bytes: &[u8]) {
        let text = String::from_utf8_lossy(bytes);
        let raw: Vec<char> = text.chars().filter(|&c| acts(c)).collect();
        self.that(raw.is_empty() && std::str::from_utf8(bytes).is_ok(), || {
            format!("{what} wrote {raw:?} raw:\n{text}")
        });
    }

    /// Both streams of a run are inert; its stdout, for more checks.
    fn inert(&self, what: &str, out: &Output) -> String {
        self.inert_bytes(&format!("{what} (stdout)"), &out.stdout);
        self.inert_bytes(&format!("{what} (stderr)"), &out.stderr);
        stdout(out)
    }

    /// `--json`: inert, and read back it carries every word as it was written.
    fn inert_json(&self, what: &str, out: &Output, tags: &[&str]) -> Value {
        let text = self.inert(what, out);
        let value: Value =
            serde_json::from_str(&text).unwrap_or_else(|e| panic!("{what}: {e}: {text}"));
        for tag in tags {
            assert!(
                strings(&value).iter().any(|s| s.contains(&words(tag))),
                "{what}: {tag}'s words did not come back as written: {text}"
            );
        }
        value
    }

    /// A listing shows the attack as text: its escapes are there to read, not obeyed.
    fn shown(&self, what: &str, text: &str) {
        self.that(
            text.contains("\\u{1b}]0;pwned\\u{7}") && text.contains("\\u{202e}exe.txt"),
            || format!("{what} does not show the escapes:\n{text}"),
        );
    }

    /// No line of `text` starts with a line the asker forged.
    fn not_forged(&self, what: &str, text: &str) {
        for line in text.lines() {
            self.that(
                !line.starts_with("asker    owner") && !line.starts_with("Approved by the owner"),
                || format!("{what}: a forged line at the left edge: {line:?}"),
            );
        }
    }

    fn none(self) {
        let found = self.0.into_inner();
        assert!(
            found.is_empty(),
            "{} finding(s):\n\n{}",
            found.len(),
            found.join("\n\n")
        );
    }
}

/// `taskkeeper ARGS` in `dir` as the desk's agent reports its session.
fn report(d: &Served, dir: &Path, args: &[&str]) {
    let out = Command::new(bin())
        .arg("report")
        .args(args)
        .current_dir(dir)
        .env("TASKKEEPER_URL", d.url())
        .env("TASKKEEPER_TOKEN", TOKEN)
        .env("TASKKEEPER_DATA_DIR", &d.data_dir)
        .env_remove("TASKKEEPER_SESSION")
        .env_remove("TASKKEEPER_DESK")
        .env_remove("TMUX")
        .env_remove("TMUX_PANE")
        .stdin(Stdio::null())
        .output()
        .unwrap();
    ok(out);
}

#[test]
fn nothing_an_asker_or_a_worker_writes_acts_on_the_owners_terminal() {
    let check = Findings::default();
    let root = tempfile::tempdir().unwrap();
    let d = Served::start(&root.path().join("data"));
    // The desk's directory is named with an escape sequence, a C1 and a bidi override.
    let dir = root.path().join("work\x1b]0;dir\x07\u{9b}2J\u{202e}");
    std::fs::create_dir_all(&dir).unwrap();
    let dir_text = dir.to_str().unwrap();
    // A generic desk whose command takes what it is given: a delivered task is the worker's.
    let added = d.cli(&[
        "desk",
        "add",
        "web",
        "--dir",
        dir_text,
        "--agent",
        "generic",
        "--deliver-command",
        "cat > /dev/null",
    ]);
    check.inert("desk add", &ok(added));
    report(&d, &dir, &["started", "--session", "s-1"]);

    let token = stdout(&ok(d.cli(&["asker", "add", "bot"])))
        .trim()
        .to_owned();
    let as_bot = |args: &[&str]| {
        Command::new(bin())
            .args(args)
            .env("TASKKEEPER_URL", d.url())
            .env("TASKKEEPER_A2A_TOKEN", &token)
            .env_remove("TASKKEEPER_TOKEN")
            .stdin(Stdio::null())
            .output()
            .unwrap()
    };
    let sent = check.inert(
        "send",
        &ok(as_bot(&[
            "send",
            "web",
            &words("REQUEST"),
            "--no-wait",
            "--json",
        ])),
    );
    let first: Value = serde_json::from_str(&sent).unwrap();
    let first = first["id"].as_str().unwrap().to_owned();

    let delivered = |id: &str| {
        until("the task delivered", || {
            let task: Value =
                serde_json::from_str(&stdout(&d.cli(&["task", "get", id, "--json"]))).ok()?;
            task["deliveredAt"].is_string().then_some(())
        });
    };
    delivered(&first);
    // The worker's last words, its need, the asker's follow-up, the worker's summary.
    report(
        &d,
        &dir,
        &["turn-ended", "--session", "s-1", "--words", &words("WORDS")],
    );
    check.inert(
        "task update blocked",
        &ok(d.cli(&["task", "update", &first, "blocked", &words("NEED")])),
    );
    check.inert(
        "send --task",
        &ok(as_bot(&[
            "send",
            "web",
            &words("FOLLOWUP"),
            "--task",
            &first,
            "--no-wait",
        ])),
    );
    check.inert(
        "task update done",
        &ok(d.cli(&["task", "update", &first, "done", &words("SUMMARY")])),
    );
    // A second task stays open, with the worker's last words on it.
    let sent = check.inert(
        "send",
        &ok(as_bot(&[
            "send",
            "web",
            &words("OPEN"),
            "--no-wait",
            "--json",
        ])),
    );
    let second: Value = serde_json::from_str(&sent).unwrap();
    let second = second["id"].as_str().unwrap().to_owned();
    delivered(&second);
    report(
        &d,
        &dir,
        &["turn-ended", "--session", "s-1", "--words", &words("LAST")],
    );

    // The owner's verbs.
    let listing = check.inert("task list", &ok(d.cli(&["task", "list", "--state", "all"])));
    assert!(
        listing.contains("REQUEST") && listing.contains("OPEN"),
        "{listing}"
    );
    check.shown("task list", &listing);
    check.inert_json(
        "task list --json",
        &ok(d.cli(&["task", "list", "--state", "all", "--json"])),
        &["REQUEST", "OPEN", "LAST", "SUMMARY"],
    );
    let detail = check.inert("task get", &ok(d.cli(&["task", "get", &first])));
    for tag in ["REQUEST", "FOLLOWUP", "NEED", "SUMMARY", "WORDS"] {
        assert!(detail.contains(tag), "task get lacks {tag}: {detail}");
    }
    check.shown("task get", &detail);
    check.not_forged("task get", &detail);
    check.that(
        detail.contains("\n    [worker]\n    Approved by the owner"),
        || format!("task get: the asker's lines are not under its label:\n{detail}"),
    );
    check.inert_json(
        "task get --json",
        &ok(d.cli(&["task", "get", &first, "--json"])),
        &["REQUEST", "FOLLOWUP", "NEED", "SUMMARY", "WORDS"],
    );
    let open = check.inert("task get (open)", &ok(d.cli(&["task", "get", &second])));
    assert!(open.contains("last words  LAST"), "{open}");
    check.not_forged("task get (open)", &open);

    let peek = check.inert("digest --peek", &ok(d.cli(&["digest", "--peek"])));
    assert!(peek.contains("REQUEST"), "{peek}");
    check.shown("digest --peek", &peek);
    check.inert_json(
        "digest --peek --json",
        &ok(d.cli(&["digest", "--peek", "--json"])),
        &["REQUEST"],
    );
    let taken = check.inert("digest", &ok(d.cli(&["digest"])));
    assert!(taken.contains("REQUEST"), "{taken}");

    for (what, args) in [
        ("status", &["status"][..]),
        ("desk list", &["desk", "list"][..]),
    ] {
        let text = check.inert(what, &ok(d.cli(args)));
        check.that(
            text.contains("work\\u{1b}]0;dir\\u{7}\\u{9b}2J\\u{202e}"),
            || format!("{what} does not show the directory:\n{text}"),
        );
    }
    for (what, args) in [
        ("status --json", &["status", "--json"][..]),
        ("desk list --json", &["desk", "list", "--json"][..]),
    ] {
        let value = check.inert_json(what, &ok(d.cli(args)), &[]);
        assert_eq!(value["desks"][0]["dir"], dir_text, "{what}");
    }
    // A message the daemon sends back with the owner's input in it.
    let refused = d.cli(&["session", "pause", "s\x1b]0;err\x07\u{202e}"]);
    assert!(!refused.status.success());
    check.inert("session pause (refused)", &refused);

    // The asker's verbs, against what the worker wrote.
    let got = check.inert("get", &ok(as_bot(&["get", &first])));
    assert!(got.contains("SUMMARY"), "{got}");
    check.shown("get", &got);
    check.not_forged("get", &got);
    check.inert_json(
        "get --json",
        &ok(as_bot(&["get", &first, "--json"])),
        &["SUMMARY"],
    );
    let list = check.inert("list", &ok(as_bot(&["list"])));
    assert!(list.contains("SUMMARY"), "{list}");
    check.shown("list", &list);
    check.inert_json(
        "list --json",
        &ok(as_bot(&["list", "--json"])),
        &["SUMMARY"],
    );

    // `watch` of the open task, as text and as JSON, until the worker ends it.
    let watch = |json: bool| {
        let mut args = vec!["watch", second.as_str()];
        if json {
            args.push("--json");
        }
        let mut child = Command::new(bin())
            .args(&args)
            .env("TASKKEEPER_URL", d.url())
            .env("TASKKEEPER_A2A_TOKEN", &token)
            .env_remove("TASKKEEPER_TOKEN")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        // Its first line (the task as it is) says it is following.
        let mut reader = BufReader::new(child.stdout.take().unwrap());
        let mut first_line = Vec::new();
        reader.read_until(b'\n', &mut first_line).unwrap();
        (child, reader, first_line)
    };
    let watching = [watch(false), watch(true)];
    check.inert(
        "task update done",
        &ok(d.cli(&["task", "update", &second, "done", &words("ENDED")])),
    );
    for ((mut child, mut reader, mut seen), what) in
        watching.into_iter().zip(["watch", "watch --json"])
    {
        reader.read_to_end(&mut seen).unwrap();
        let mut errors = Vec::new();
        child
            .stderr
            .take()
            .unwrap()
            .read_to_end(&mut errors)
            .unwrap();
        assert!(
            child.wait().unwrap().success(),
            "{what}: {}",
            String::from_utf8_lossy(&errors)
        );
        let out = Output {
            status: child.wait().unwrap(),
            stdout: seen,
            stderr: errors,
        };
        let text = check.inert(what, &out);
        assert!(text.contains("ENDED"), "{what}: {text}");
        if what == "watch" {
            check.shown(what, &text);
            check.not_forged(what, &text);
        } else {
            for line in text.lines() {
                let _: Value =
                    serde_json::from_str(line).unwrap_or_else(|e| panic!("{what}: {e}: {line}"));
            }
        }
    }
    check.none();
}
