//! The real Codex CLI (0.171.0) and Gemini CLI (0.61.0), offline: each pinned npm package,
//! cached under the Cargo target directory, runs one turn against `tests/agents/fake_model.py`
//! (a scripted fake of the model API it speaks), connected by `taskkeeper connect codex` /
//! `connect gemini` to a real daemon, all inside a network namespace with only loopback
//! (`unshare -rn`: the test runs itself again in there), so nothing can leave the machine.
//!
//! One scenario per agent, the worker's side of the product:
//! - an asker's blocking SendMessage gives the desk a task while no session is there;
//! - the session is started with a prompt that makes the model end *another* desk's task
//!   over MCP: refused, and that task stays open;
//! - the turn's end (Codex's Stop, Gemini's AfterAgent) hands the waiting task over;
//! - the model ends it with `task_update` over MCP, through the session proof the agent's
//!   PreToolUse / BeforeTool hook filled in, and the asker's SendMessage returns COMPLETED.
//!
//! Codex runs without `--dangerously-bypass-hook-trust`: `connect codex` trusted its hooks
//! through Codex's own app server, and `--undo` takes that out again with the rest.
//!
//! No npm, no registry, or no `unshare` is a failure that says so, never a pass.

use std::fs;
use std::io::{BufRead as _, BufReader, Read as _, Write as _};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::support::{Served, bin, ok, request, stderr, stdout};

/// Set in the copy of the test that runs inside the namespace.
const INSIDE: &str = "TASKKEEPER_TEST_NETNS";
/// The longest one agent run may take (it takes about 5-10 s on two busy cores).
pub(crate) const RUN: Duration = Duration::from_secs(120);

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    Codex,
    Gemini,
}

impl Kind {
    pub(crate) fn name(self) -> &'static str {
        match self {
            Self::Codex => "codex",
            Self::Gemini => "gemini",
        }
    }

    /// The pinned npm package, and the cache directory's name.
    fn package(self) -> (&'static str, &'static str) {
        match self {
            Self::Codex => ("@openai/codex@0.171.0", "codex-0.171.0"),
            Self::Gemini => ("@google/gemini-cli@0.61.0", "gemini-cli-0.61.0"),
        }
    }

    /// The program to run, from the installed package: Codex's native binary, Gemini's bundle.
    fn program(self, dir: &Path) -> Option<PathBuf> {
        let p = match self {
            Self::Codex => dir.join(
                "node_modules/@openai/codex-linux-x64/vendor/x86_64-unknown-linux-musl/bin/codex",
            ),
            Self::Gemini => dir.join("node_modules/@google/gemini-cli/bundle/gemini.js"),
        };
        p.is_file().then_some(p)
    }
}

fn target_dir() -> PathBuf {
    let exe = Path::new(bin());
    exe.parent()
        .and_then(Path::parent)
        .map(Path::to_owned)
        .unwrap_or_else(std::env::temp_dir)
}

/// `npm install` of the pinned package into `<target>/<name>`, built under a temporary name
/// and renamed into place, one installer at a time across processes.
pub(crate) fn install(kind: Kind) -> PathBuf {
    let (package, name) = kind.package();
    let root = target_dir();
    let dir = root.join(name);
    let ready = |d: &Path| {
        d.join(".installed")
            .exists()
            .then(|| kind.program(d))
            .flatten()
    };
    if let Some(p) = ready(&dir) {
        return p;
    }
    fs::create_dir_all(&root).unwrap();
    let lock = fs::File::create(root.join(format!("{name}.lock"))).unwrap();
    lock.lock().unwrap();
    if let Some(p) = ready(&dir) {
        return p;
    }
    let building = root.join(format!("{name}.building-{}", std::process::id()));
    let _ = fs::remove_dir_all(&building);
    fs::create_dir_all(&building).unwrap();
    fs::write(
        building.join("package.json"),
        "{\"name\": \"taskkeeper-agent-cache\", \"private\": true}\n",
    )
    .unwrap();
    let out = Command::new("npm")
        .args([
            "install",
            "--no-audit",
            "--no-fund",
            "--ignore-scripts",
            "--loglevel=error",
            package,
        ])
        .current_dir(&building)
        .env("npm_config_update_notifier", "false")
        .stdin(Stdio::null())
        .output()
        .unwrap_or_else(|e| {
            panic!("cannot run npm ({e}): these tests install the real {package}; install npm")
        });
    assert!(
        out.status.success(),
        "npm install {package} failed (the registry must be reachable once; the package is \
         cached after that): {}",
        stderr(&out)
    );
    assert!(
        kind.program(&building).is_some(),
        "{package} has no program where expected"
    );
    fs::write(building.join(".installed"), "").unwrap();
    let _ = fs::remove_dir_all(&dir);
    fs::rename(&building, &dir).unwrap();
    kind.program(&dir).unwrap()
}

/// Run the test `name` again inside a network namespace with only loopback; true inside.
pub(crate) fn in_a_loopback_namespace(name: &str) -> bool {
    if std::env::var_os(INSIDE).is_some() {
        let up = Command::new("ip")
            .args(["link", "set", "lo", "up"])
            .status()
            .expect("ip (iproute2) brings loopback up inside the namespace");
        assert!(up.success(), "ip link set lo up failed");
        return true;
    }
    let me = std::env::current_exe().unwrap();
    let out = Command::new("unshare")
        .args(["-rn", "--"])
        .arg(me)
        .args(["--exact", name, "--nocapture", "--test-threads=1"])
        .env(INSIDE, "1")
        .stdin(Stdio::null())
        .output()
        .unwrap_or_else(|e| panic!("cannot run unshare ({e}); these tests need util-linux"));
    let (o, e) = (stdout(&out), stderr(&out));
    eprintln!("{e}");
    assert!(
        out.status.success() && o.contains("1 passed"),
        "the run inside the namespace failed (a namespace needs unprivileged user namespaces):\n{o}\n{e}"
    );
    false
}

/// The fake model, as a child process killed on drop.
pub(crate) struct FakeModel {
    child: Child,
    pub(crate) port: u16,
    log: PathBuf,
}

impl FakeModel {
    pub(crate) fn start(dir: &Path) -> Self {
        let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/agents/fake_model.py");
        let log = dir.join("model.jsonl");
        let mut child = Command::new("python3")
            .arg(script)
            .arg(&log)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("python3 runs the fake model");
        let mut line = String::new();
        BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut line)
            .unwrap();
        let port = line.trim().parse().expect("the fake prints its port");
        Self { child, port, log }
    }

    pub(crate) fn requests(&self) -> Vec<Value> {
        fs::read_to_string(&self.log)
            .unwrap_or_default()
            .lines()
            .filter_map(|l| serde_json::from_str(l).ok())
            .collect()
    }
}

impl Drop for FakeModel {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// One POST with a bearer token and a long read timeout: (status, body).
pub(crate) fn post(
    port: u16,
    path: &str,
    token: &str,
    body: &str,
    wait: Duration,
) -> (u16, String) {
    let mut s = TcpStream::connect(("127.0.0.1", port)).unwrap();
    s.set_read_timeout(Some(wait)).unwrap();
    write!(
        s,
        "POST {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nAuthorization: Bearer {token}\r\n\
         A2A-Version: 1.0\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\
         Connection: close\r\n\r\n{body}",
        body.len()
    )
    .unwrap();
    let mut out = String::new();
    s.read_to_string(&mut out).unwrap();
    let (head, body) = out.split_once("\r\n\r\n").unwrap();
    (
        head.split(' ').nth(1).unwrap().parse().unwrap(),
        body.to_owned(),
    )
}

pub(crate) fn task_id(out: &std::process::Output) -> String {
    let text = stdout(out);
    let id = text
        .split(|c: char| !(c.is_ascii_hexdigit() || c == '-'))
        .find(|w| w.len() == 36)
        .unwrap_or_else(|| panic!("no task id in {text}"));
    id.to_owned()
}

/// The task `id` reached the model as a turn's input (the user's words), and the task's
/// timeline counts that turn as Taskkeeper's.
pub(crate) fn the_task_was_a_taskkeeper_turn(d: &Served, model: &FakeModel, id: &str) {
    let requests = model.requests();
    assert!(
        requests.iter().any(|r| r["last"] == "user"
            && r["text"]
                .as_str()
                .is_some_and(|t| t.contains(&format!("«Taskkeeper» Task {id} from ci-bot")))),
        "the task was a turn's input: {requests:?}"
    );
    let (_, t) = request(d.port, "GET", &format!("/api/tasks/{id}"), "").unwrap();
    let t: Value = serde_json::from_str(&t).unwrap();
    assert!(
        t["timeline"]["turns"]
            .as_array()
            .is_some_and(|turns| turns.iter().any(|u| u["origin"] == "taskkeeper")),
        "the turn that took it is Taskkeeper's: {t}"
    );
}

/// A desk `name` at `dir` for this kind of agent.
pub(crate) fn agent_desk(d: &Served, name: &str, dir: &Path, kind: Kind) {
    ok(d.cli(&[
        "desk",
        "add",
        name,
        "--dir",
        &dir.to_string_lossy(),
        "--agent",
        kind.name(),
    ]));
}

/// `PATH` with the agent's own directory first: `connect` finds `codex` there, to trust the
/// hooks through its app server.
pub(crate) fn path_with(program: &Path) -> std::ffi::OsString {
    std::env::join_paths(program.parent().into_iter().map(Path::to_owned).chain(
        std::env::split_paths(&std::env::var_os("PATH").unwrap_or_default()),
    ))
    .unwrap()
}

/// What the agent needs to run offline against the fake, before `connect` adds ours.
pub(crate) fn offline_config(kind: Kind, home: &Path, work: &Path, model: u16) {
    match kind {
        Kind::Codex => {
            let codex = home.join(".codex");
            fs::create_dir_all(&codex).unwrap();
            fs::write(
                codex.join("config.toml"),
                format!(
                    "model = \"fake-model\"\nmodel_provider = \"fake\"\napproval_policy = \"never\"\n\
                     sandbox_mode = \"danger-full-access\"\ncheck_for_update_on_startup = false\n\n\
                     [analytics]\nenabled = false\n\n[features]\nplugins = false\n\n\
                     [model_providers.fake]\nname = \"fake\"\nbase_url = \"http://127.0.0.1:{model}/v1\"\n\
                     env_key = \"FAKE_API_KEY\"\nwire_api = \"responses\"\nrequest_max_retries = 0\n\
                     stream_max_retries = 0\n\n[projects.\"{}\"]\ntrust_level = \"trusted\"\n",
                    work.display()
                ),
            )
            .unwrap();
        }
        Kind::Gemini => {
            let gemini = home.join(".gemini");
            fs::create_dir_all(&gemini).unwrap();
            let settings = json!({
                "general": {"enableAutoUpdate": false, "enableAutoUpdateNotification": false},
                "privacy": {"usageStatisticsEnabled": false},
                "telemetry": {"enabled": false},
                "ide": {"enabled": false},
                "security": {"auth": {"selectedType": "gemini-api-key"}, "folderTrust": {"enabled": false}},
                "model": {"name": "gemini-2.5-flash"},
                "hooksConfig": {"enabled": true},
            });
            fs::write(gemini.join("settings.json"), settings.to_string()).unwrap();
        }
    }
}

fn run_agent(kind: Kind, program: &Path, env: &[(&str, String)], cwd: &Path, prompt: &str) {
    let mut cmd = match kind {
        Kind::Codex => {
            // No --dangerously-bypass-hook-trust: `connect` trusted the hooks as Codex does.
            let mut c = Command::new(program);
            c.args(["exec", "--skip-git-repo-check", prompt]);
            c
        }
        Kind::Gemini => {
            let mut c = Command::new("node");
            c.arg(program).args(["-p", prompt]);
            c
        }
    };
    cmd.current_dir(cwd)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    for (k, v) in env {
        cmd.env(k, v);
    }
    let started = Instant::now();
    let mut child = cmd.spawn().unwrap();
    let (tx, rx) = mpsc::channel();
    let mut out = child.stdout.take().unwrap();
    let mut err = child.stderr.take().unwrap();
    std::thread::spawn(move || {
        let (mut o, mut e) = (String::new(), String::new());
        let _ = out.read_to_string(&mut o);
        let _ = err.read_to_string(&mut e);
        let _ = tx.send((o, e));
    });
    let (o, e) = rx.recv_timeout(RUN).unwrap_or_else(|_| {
        let _ = child.kill();
        panic!("{} did not finish its turn within {RUN:?}", kind.name())
    });
    let status = child.wait().unwrap();
    eprintln!("{} ran its turn in {:.1?}", kind.name(), started.elapsed());
    assert!(status.success(), "{} failed:\n{o}\n{e}", kind.name());
}

fn scenario(kind: Kind, program: &Path) {
    let dir = tempfile::tempdir().unwrap();
    let (home, work, api) = (
        dir.path().join("home"),
        dir.path().join("web"),
        dir.path().join("api"),
    );
    for d in [&home, &work, &api] {
        fs::create_dir_all(d).unwrap();
    }
    let model = FakeModel::start(dir.path());
    let d = Served::start(&dir.path().join("data"));
    agent_desk(&d, "web", &work, kind);
    ok(d.cli(&["desk", "add", "api", "--dir", &api.to_string_lossy()]));
    offline_config(kind, &home, &work, model.port);
    let env: Vec<(&str, String)> = vec![
        ("HOME", home.to_string_lossy().into_owned()),
        (
            "CODEX_HOME",
            home.join(".codex").to_string_lossy().into_owned(),
        ),
        ("TASKKEEPER_URL", d.url()),
        (
            "TASKKEEPER_DATA_DIR",
            d.data_dir.to_string_lossy().into_owned(),
        ),
        ("FAKE_API_KEY", "offline".into()),
        ("GEMINI_API_KEY", "offline".into()),
        (
            "GOOGLE_GEMINI_BASE_URL",
            format!("http://127.0.0.1:{}", model.port),
        ),
        ("GEMINI_CLI_TRUST_WORKSPACE", "true".into()),
        ("NO_BROWSER", "1".into()),
    ];
    // `connect` finds `codex` on the PATH, to trust the hooks through its app server.
    let path = path_with(program);
    let connect = |args: &[&str]| {
        let mut c = Command::new(bin());
        c.args(["connect", kind.name()])
            .args(args)
            .env("PATH", &path);
        for (k, v) in &env {
            c.env(k, v);
        }
        ok(c.output().unwrap())
    };
    let config_file = match kind {
        Kind::Codex => home.join(".codex/config.toml"),
        Kind::Gemini => home.join(".gemini/settings.json"),
    };
    let offline = fs::read_to_string(&config_file).unwrap();
    let connected = stdout(&connect(&["--force"]));
    if kind == Kind::Codex {
        assert!(
            connected.contains("trusted Taskkeeper's 7 hooks as Codex records it"),
            "{connected}"
        );
        let again = stdout(&connect(&["--force"]));
        assert!(!again.contains("trusted"), "trusted once: {again}");
    }

    let other = task_id(&ok(d.cli(&["task", "add", "api", "Someone else's work"])));
    let (code, body) = request(d.port, "POST", "/api/askers", r#"{"name":"ci-bot"}"#).unwrap();
    assert_eq!(code, 201, "{body}");
    let asker: Value = serde_json::from_str(&body).unwrap();
    let token = asker["token"].as_str().unwrap().to_owned();
    let send = json!({"jsonrpc": "2.0", "id": 1, "method": "SendMessage", "params": {
        "message": {"messageId": "m-1", "role": "ROLE_USER", "parts": [{"text": "Add a --json flag"}]},
        "configuration": {"returnImmediately": false}}})
    .to_string();
    let (tx, rx) = mpsc::channel();
    let port = d.port;
    std::thread::spawn(move || {
        let _ = tx.send(post(port, "/a2a/web", &token, &send, RUN));
    });
    // The task is there before the session is.
    let deadline = Instant::now() + Duration::from_secs(30);
    let mine = loop {
        let (_, list) = request(d.port, "GET", "/api/tasks?desk=web", "").unwrap();
        let list: Value = serde_json::from_str(&list).unwrap();
        if let Some(id) = list["tasks"][0]["id"].as_str() {
            break id.to_owned();
        }
        assert!(
            Instant::now() < deadline,
            "the asker's task never arrived: {list}"
        );
        std::thread::sleep(Duration::from_millis(50));
    };

    run_agent(kind, program, &env, &work, &format!("END OTHER {other}"));

    let (code, answer) = rx
        .recv_timeout(RUN)
        .expect("the blocking SendMessage returns");
    assert_eq!(code, 200, "{answer}");
    let answer: Value = serde_json::from_str(&answer).unwrap();
    let task = &answer["result"]["task"];
    assert_eq!(task["id"], mine.as_str(), "{answer}");
    assert_eq!(task["status"]["state"], "TASK_STATE_COMPLETED", "{answer}");
    assert!(
        answer.to_string().contains("Finished it offline."),
        "{answer}"
    );

    let (_, other_task) = request(d.port, "GET", &format!("/api/tasks/{other}"), "").unwrap();
    let other_task: Value = serde_json::from_str(&other_task).unwrap();
    assert_eq!(
        other_task["state"], "working",
        "another desk's task stays open"
    );

    let requests = model.requests();
    let turns: Vec<&Value> = requests
        .iter()
        .filter(|r| r["kind"] == "codex" || r["kind"] == "gemini")
        .collect();
    let refused = turns
        .iter()
        .find(|r| r["last"] == "tool" && r["text"].as_str().is_some_and(|t| t.contains(&other)))
        .unwrap_or_else(|| panic!("no tool result for {other}: {requests:?}"));
    let refusal = refused["text"].as_str().unwrap();
    assert!(
        refusal.contains("held by desk api, not by this session's desk web"),
        "refused as another desk's task, from a proven session: {refusal}"
    );
    assert!(
        turns.iter().any(|r| r["last"] == "user"
            && r["text"]
                .as_str()
                .is_some_and(|t| t.contains(&format!("«Taskkeeper» Task {mine} from ci-bot")))),
        "the turn's end handed the task over as the next prompt: {requests:?}"
    );
    let (_, sessions) = request(d.port, "GET", "/api/sessions", "").unwrap();
    let sessions: Value = serde_json::from_str(&sessions).unwrap();
    assert_eq!(sessions["sessions"][0]["agent"], kind.name(), "{sessions}");

    // Undo takes everything out, the trust Codex records included.
    connect(&["--undo"]);
    assert_eq!(fs::read_to_string(&config_file).unwrap(), offline);
}

#[test]
fn codex_cli_offline_is_handed_a_task_at_stop_and_ends_it_over_mcp_as_its_own_session() {
    let program = install(Kind::Codex);
    if in_a_loopback_namespace(
        "codex_gemini::codex_cli_offline_is_handed_a_task_at_stop_and_ends_it_over_mcp_as_its_own_session",
    ) {
        scenario(Kind::Codex, &program);
    }
}

#[test]
fn gemini_cli_offline_is_handed_a_task_at_after_agent_and_ends_it_over_mcp_as_its_own_session() {
    let program = install(Kind::Gemini);
    if in_a_loopback_namespace(
        "codex_gemini::gemini_cli_offline_is_handed_a_task_at_after_agent_and_ends_it_over_mcp_as_its_own_session",
    ) {
        scenario(Kind::Gemini, &program);
    }
}

/// The environment of a daemon whose launched `kind` sessions run offline against the fake
/// model on port `model`: the sessions it launches inherit it. Their hooks find the daemon at
/// the default address (free: the namespace is the test's own) and the worker token in `data`.
pub(crate) fn launched_env(
    kind: Kind,
    program: &Path,
    home: &Path,
    data: &Path,
    model: u16,
) -> Vec<(String, String)> {
    let program_var = match kind {
        Kind::Codex => "TASKKEEPER_CODEX",
        Kind::Gemini => "TASKKEEPER_GEMINI",
    };
    // `connect` finds `codex` on the PATH, to trust the hooks through its app server.
    let path = path_with(program);
    [
        ("PATH", path.to_string_lossy().into_owned()),
        ("TASKKEEPER_DATA_DIR", data.to_string_lossy().into_owned()),
        ("HOME", home.to_string_lossy().into_owned()),
        (
            "CODEX_HOME",
            home.join(".codex").to_string_lossy().into_owned(),
        ),
        ("FAKE_API_KEY", "offline".into()),
        ("GEMINI_API_KEY", "offline".into()),
        (
            "GOOGLE_GEMINI_BASE_URL",
            format!("http://127.0.0.1:{model}"),
        ),
        ("GEMINI_CLI_TRUST_WORKSPACE", "true".into()),
        ("NO_BROWSER", "1".into()),
        (program_var, program.to_string_lossy().into_owned()),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_owned(), v))
    .collect()
}

/// A headless session Taskkeeper launches (`session launch`: `codex app-server` / `gemini
/// --acp`, driven over JSON-RPC on its stdio) takes the asker's task as a turn's input; the
/// model ends it with `task_update` over MCP, as its own session by the headers Taskkeeper
/// gave it, and the blocking SendMessage returns COMPLETED. The agent is connected too, so its
/// hooks run in the launched process: they stay silent there (the agent's own id for the
/// session is not Taskkeeper's), and the launched session is the only one. Stopping it ends
/// it cleanly.
fn launched_scenario(kind: Kind, program: &Path) {
    let dir = tempfile::tempdir().unwrap();
    let (home, work) = (dir.path().join("home"), dir.path().join("web"));
    for d in [&home, &work] {
        fs::create_dir_all(d).unwrap();
    }
    let model = FakeModel::start(dir.path());
    offline_config(kind, &home, &work, model.port);
    let data = dir.path().join("data");
    let env = launched_env(kind, program, &home, &data, model.port);
    let d = Served::start_in_on(&data, 7717, &env);
    agent_desk(&d, "web", &work, kind);
    ok(Command::new(bin())
        .args(["connect", kind.name(), "--force"])
        .env_clear()
        .envs(env.iter().map(|(k, v)| (k, v)))
        .output()
        .unwrap());
    let started = Instant::now();
    let launched = ok(d.cli(&["session", "launch", "web"]));
    let session = stdout(&launched).trim().to_owned();
    assert!(
        stderr(&launched).contains(match kind {
            Kind::Codex => "Codex CLI (`codex app-server`)",
            Kind::Gemini => "Gemini CLI (`gemini --acp`)",
        }),
        "{}",
        stderr(&launched)
    );

    let (code, body) = request(d.port, "POST", "/api/askers", r#"{"name":"ci-bot"}"#).unwrap();
    assert_eq!(code, 201, "{body}");
    let asker: Value = serde_json::from_str(&body).unwrap();
    let token = asker["token"].as_str().unwrap().to_owned();
    let send = json!({"jsonrpc": "2.0", "id": 1, "method": "SendMessage", "params": {
        "message": {"messageId": "m-1", "role": "ROLE_USER", "parts": [{"text": "Add a --json flag"}]},
        "configuration": {"returnImmediately": false}}})
    .to_string();
    let (code, answer) = post(d.port, "/a2a/web", &token, &send, RUN);
    eprintln!(
        "{}: launch to the blocking SendMessage's answer in {:.1?}",
        kind.name(),
        started.elapsed()
    );
    assert_eq!(code, 200, "{answer}");
    let answer: Value = serde_json::from_str(&answer).unwrap();
    let task = &answer["result"]["task"];
    assert_eq!(task["status"]["state"], "TASK_STATE_COMPLETED", "{answer}");
    assert!(
        answer.to_string().contains("Finished it offline."),
        "{answer}"
    );
    let mine = task["id"].as_str().unwrap();
    let requests = model.requests();
    assert!(
        requests.iter().any(|r| r["last"] == "user"
            && r["text"]
                .as_str()
                .is_some_and(|t| t.contains(&format!("«Taskkeeper» Task {mine} from ci-bot")))),
        "the task was a turn's input: {requests:?}"
    );

    let (_, sessions) = request(d.port, "GET", "/api/sessions", "").unwrap();
    let sessions: Value = serde_json::from_str(&sessions).unwrap();
    let listed = &sessions["sessions"][0];
    assert_eq!(
        (
            listed["id"].as_str(),
            listed["agent"].as_str(),
            listed["headless"].as_bool()
        ),
        (Some(session.as_str()), Some(kind.name()), Some(true)),
        "one session, the launched one (no second one from hooks): {sessions}"
    );
    assert_eq!(sessions["sessions"].as_array().map(Vec::len), Some(1));

    ok(d.cli(&["session", "stop", &session]));
    let deadline = Instant::now() + RUN;
    loop {
        let (_, s) = request(d.port, "GET", "/api/sessions", "").unwrap();
        let s: Value = serde_json::from_str(&s).unwrap();
        if s["sessions"][0]["activity"] == "ended" {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "the stopped session never ended: {s}"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn codex_app_server_launched_headless_takes_a_task_and_ends_it_over_mcp() {
    let program = install(Kind::Codex);
    if in_a_loopback_namespace(
        "codex_gemini::codex_app_server_launched_headless_takes_a_task_and_ends_it_over_mcp",
    ) {
        launched_scenario(Kind::Codex, &program);
    }
}

#[test]
fn gemini_acp_launched_headless_takes_a_task_and_ends_it_over_mcp() {
    let program = install(Kind::Gemini);
    if in_a_loopback_namespace(
        "codex_gemini::gemini_acp_launched_headless_takes_a_task_and_ends_it_over_mcp",
    ) {
        launched_scenario(Kind::Gemini, &program);
    }
}
