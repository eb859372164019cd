//! What each subcommand does. Listings print a short table, or the API's JSON with `--json`.

use std::path::PathBuf;

use anyhow::Context as _;
use serde_json::json;
use taskkeeper_core::Timestamp;
use taskkeeper_server::owner::api::{
    AskerList, CardKeyView, DeskList, DeskView, NewAsker, SessionList, TaskDetail, TaskList,
    TaskView,
};
use taskkeeper_server::{Daemon, DaemonConfig};

use crate::client::Client;
use crate::{
    AskerCommand, CardCommand, DeskCommand, RemindersCommand, SessionCommand, SettingsCommand,
    TaskCommand,
};

use crate::out::{self, say, tell};

/// `serve`'s flags for the listener for askers on other machines; without `--listen`, the
/// `network.*` settings say (the listener is off unless they name an address).
#[derive(Debug, Clone, clap::Args)]
pub struct NetworkFlags {
    /// Also listen for askers on other machines at ADDR:PORT (e.g. 0.0.0.0:7718), over TLS:
    /// a self-signed certificate unless --tls-cert/--tls-key or --behind-proxy say otherwise.
    /// Only A2A and the Agent Cards are served there, and only askers' tokens are taken.
    #[arg(long, value_name = "ADDR:PORT")]
    listen: Option<String>,
    /// The certificate chain (PEM) to serve on --listen; read again whenever it changes.
    #[arg(long, value_name = "FILE", requires_all = ["listen", "tls_key"])]
    tls_cert: Option<PathBuf>,
    /// The certificate's private key (PEM).
    #[arg(long, value_name = "FILE", requires_all = ["listen", "tls_cert"])]
    tls_key: Option<PathBuf>,
    /// A TLS proxy (Tailscale serve, Caddy, nginx) terminates TLS in front of --listen, which
    /// speaks plain HTTP; give --public-url and --trusted-proxy.
    #[arg(long, requires = "listen", conflicts_with = "tls_cert")]
    behind_proxy: bool,
    /// The proxy's address (or network), whose X-Forwarded-For and X-Forwarded-Host are
    /// believed; repeat for more.
    #[arg(long, value_name = "ADDR", requires = "behind_proxy")]
    trusted_proxy: Vec<String>,
    /// The https:// URL askers reach --listen at, which the cards name (default: the listen
    /// address).
    #[arg(long, value_name = "URL", requires = "listen")]
    public_url: Option<String>,
    /// Allow plain HTTP beyond loopback (no TLS, or a proxy on another machine): askers'
    /// tokens then cross the network unencrypted.
    #[arg(long, requires = "listen")]
    insecure_http: bool,
}

impl NetworkFlags {
    /// The listener the flags describe, checked as the settings are (`None`: no --listen).
    fn network(&self) -> anyhow::Result<Option<taskkeeper_server::Network>> {
        let Some(listen) = &self.listen else {
            return Ok(None);
        };
        let tls = match (&self.tls_cert, self.behind_proxy, self.insecure_http) {
            (Some(_), _, _) => "files",
            (None, true, _) => "proxy",
            (None, false, true) => "off",
            (None, false, false) => "self-signed",
        };
        let path = |p: &Option<PathBuf>| {
            p.as_ref()
                .map(|p| p.display().to_string())
                .unwrap_or_default()
        };
        let mut settings = taskkeeper_core::settings::Settings::default();
        for (key, value) in [
            ("network.listen", listen.clone()),
            ("network.tls", tls.to_owned()),
            ("network.cert_file", path(&self.tls_cert)),
            ("network.key_file", path(&self.tls_key)),
            (
                "network.public_url",
                self.public_url.clone().unwrap_or_default(),
            ),
            ("network.trusted_proxies", self.trusted_proxy.join(",")),
            ("network.insecure_http", self.insecure_http.to_string()),
        ] {
            settings.set(key, &value)?;
        }
        // The numbers per minute are read from the settings as the listener runs.
        Ok(Some(settings.network))
    }
}

pub fn serve(
    port: u16,
    data_dir: Option<PathBuf>,
    conformance: bool,
    ui: Option<Option<PathBuf>>,
    network: &NetworkFlags,
) -> anyhow::Result<()> {
    let mut config = DaemonConfig::from_env()?;
    config.port = port;
    config.conformance = conformance;
    config.network = network.network()?;
    if let Some(dir) = data_dir {
        config.data_dir = dir;
    }
    if let Some(dir) = ui {
        let exe = std::env::current_exe().ok();
        config.ui_dir = Some(taskkeeper_server::http::ui::locate(
            dir.as_deref(),
            exe.as_deref(),
        )?);
    }
    let _log = taskkeeper_server::logging::init(&config.data_dir)
        .with_context(|| format!("cannot open the log file in {}", config.data_dir.display()))?;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    runtime.block_on(async move {
        let daemon = match Daemon::start(config).await {
            Ok(daemon) => daemon,
            // The tray app and the service share the data directory; say which to look at.
            Err(e @ taskkeeper_server::DaemonError::Store(taskkeeper_core::StoreError::Locked { .. })) => {
                anyhow::bail!(
                    "{e} (the tray app, or the service: `taskkeeper service status` says whether it runs)"
                )
            }
            Err(e) => return Err(e.into()),
        };
        say!("listening on http://{}", daemon.addr());
        // On stderr, beside the log: stdout's one line is what scripts and the service
        // manager wait for, and a reader may close it after that line.
        let network = daemon.network();
        if let Some(url) = &network.url {
            tell!("askers on other machines: {}/a2a/<desk>", url);
            if let Some(fingerprint) = &network.certificate_sha256() {
                tell!("  certificate SHA-256 (askers pin it): {}", fingerprint);
            }
        }
        if let Some(warning) = &network.warning {
            tell!("warning: {}", warning);
        }
        if let Some(error) = &network.error {
            tell!("the listener for askers on other machines is not running: {}", error);
        }
        wait_for_signal().await?;
        tracing::info!("stopping on signal");
        daemon.shutdown().await;
        Ok(())
    })
}

async fn wait_for_signal() -> anyhow::Result<()> {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{SignalKind, signal};
        let mut term = signal(SignalKind::terminate())?;
        tokio::select! {
            r = tokio::signal::ctrl_c() => r?,
            _ = term.recv() => {}
        }
    }
    #[cfg(not(unix))]
    tokio::signal::ctrl_c().await?;
    Ok(())
}

pub fn desk(cmd: DeskCommand) -> anyhow::Result<()> {
    let client = Client::from_env()?;
    match cmd {
        DeskCommand::Add {
            name,
            dir,
            agent,
            deliver_command,
        } => {
            let dir = std::path::absolute(&dir)
                .with_context(|| format!("cannot resolve {}", dir.display()))?;
            let desk: DeskView = client.post(
                "/api/desks",
                &json!({"name": name, "dir": dir.to_string_lossy(), "agent": agent,
                        "deliverCommand": deliver_command}),
            )?;
            say!("added desk {} ({}) in {}", desk.name, desk.agent, desk.dir);
            if let Some(c) = desk.deliver_command {
                say!("delivers by: {}", c);
            }
        }
        DeskCommand::Set {
            name,
            deliver_command,
            no_deliver_command,
            auto_launch,
        } => {
            let command_changes = deliver_command.is_some() || no_deliver_command;
            if !command_changes && auto_launch.is_none() {
                anyhow::bail!(
                    "nothing to change: give --deliver-command COMMAND, --no-deliver-command or --auto-launch on|off"
                );
            }
            let mut change = serde_json::Map::new();
            if command_changes {
                change.insert("deliverCommand".into(), json!(deliver_command));
            }
            if let Some(on) = &auto_launch {
                change.insert("autoLaunch".into(), json!(on == "on"));
            }
            let desk: DeskView = client.patch(&format!("/api/desks/{}", encode(&name)), &change)?;
            if command_changes {
                match desk.deliver_command {
                    Some(c) => say!("desk {}: delivers by: {}", desk.name, c),
                    None => say!("desk {}: no delivery command", desk.name),
                }
            }
            if auto_launch.is_some() {
                if desk.auto_launch {
                    say!(
                        "desk {}: launches a headless session by itself when it has work and no live session",
                        desk.name
                    );
                } else {
                    say!("desk {}: launches only when you do", desk.name);
                }
            }
        }
        DeskCommand::List { json } => {
            let list: DeskList = client.get("/api/desks")?;
            if json {
                return out::json(&list);
            }
            if list.desks.is_empty() {
                say!("no desks; add one with `taskkeeper desk add NAME --dir DIR`");
            }
            for d in list.desks {
                let command = d
                    .deliver_command
                    .as_ref()
                    .map(|c| format!("  (delivers by: {c})"))
                    .unwrap_or_default();
                let state = desk_state(&d);
                say!(
                    "{:<20} {:<12} {}{}{}",
                    d.name,
                    d.agent,
                    d.dir,
                    command,
                    state
                );
            }
        }
        DeskCommand::Remove { name } => {
            client.delete(&format!("/api/desks/{}", encode(&name)))?;
            say!("removed desk {}", name);
        }
    }
    Ok(())
}

pub fn task(cmd: TaskCommand) -> anyhow::Result<()> {
    let client = Client::from_env()?;
    match cmd {
        TaskCommand::Add { desk, text } => {
            let task: TaskView = client.post("/api/tasks", &json!({"desk": desk, "text": text}))?;
            say!("{}", task.id);
            tell!("{}", task.label);
        }
        TaskCommand::List { state, desk, json } => {
            let mut path = format!("/api/tasks?state={}", encode(&state));
            if let Some(d) = desk {
                path.push_str(&format!("&desk={}", encode(&d)));
            }
            let list: TaskList = client.get(&path)?;
            if json {
                return out::json(&list);
            }
            if list.tasks.is_empty() {
                say!("no {} tasks", state);
            }
            let now = taskkeeper_core::Clock::now(&taskkeeper_core::SystemClock);
            for t in list.tasks {
                say!(
                    "{}  {:<12} {:<16} {:>5}  {}",
                    t.id,
                    t.desk,
                    t.label,
                    age(now, t.created_at),
                    first_line(&t.request)
                );
            }
        }
        TaskCommand::Get { id, json } => {
            let task: TaskDetail = client.get(&format!("/api/tasks/{}", encode(&id)))?;
            if json {
                return out::json(&task);
            }
            let t = &task.task;
            say!(
                "task     {}\ndesk     {}\nasker    {}\nstate    {}",
                t.id,
                t.desk,
                t.asker,
                t.label
            );
            say!("created  {}\nupdated  {}", t.created_at, t.updated_at);
            if let Some(w) = &t.last_words {
                say!("last words  {}", w);
            }
            // Each message under its label, every line of it indented: none of it can pass
            // for a label or a line of the header.
            for m in &task.history {
                say!("\n[{}]\n    {}", m.from, m.text);
            }
        }
        TaskCommand::Update {
            id,
            status,
            text,
            files,
            data,
        } => {
            // The daemon reads the files: name them as this command's directory sees them.
            let files = files
                .iter()
                .map(|f| {
                    std::path::absolute(f)
                        .map(|p| p.display().to_string())
                        .with_context(|| {
                            format!("{} is not a path this command can resolve", f.display())
                        })
                })
                .collect::<anyhow::Result<Vec<_>>>()?;
            let data = data
                .iter()
                .map(|d| {
                    serde_json::from_str::<serde_json::Value>(d).with_context(|| {
                        format!("--data {d:?} is not JSON; give a JSON value, e.g. --data '{{\"tests\":12}}'")
                    })
                })
                .collect::<anyhow::Result<Vec<_>>>()?;
            let task: TaskView = client.post(
                &format!("/api/tasks/{}/update", encode(&id)),
                &json!({"status": status, "text": text, "files": files, "data": data}),
            )?;
            say!("{} is {}", task.id, task.label);
        }
        TaskCommand::Remind { id } => {
            let task: TaskView =
                client.post(&format!("/api/tasks/{}/remind", encode(&id)), &json!({}))?;
            say!(
                "reminding the session at desk {} about {}",
                task.desk,
                task.id
            );
        }
        TaskCommand::Resume { id } => {
            let task: TaskView =
                client.post(&format!("/api/tasks/{}/resume", encode(&id)), &json!({}))?;
            say!("{} is {}; its ladder starts again", task.id, task.label);
        }
        TaskCommand::Cancel { id, reason } => {
            let task: TaskView = client.post(
                &format!("/api/tasks/{}/cancel", encode(&id)),
                &json!({"reason": reason}),
            )?;
            say!("{} is {}", task.id, task.label);
        }
    }
    Ok(())
}

fn first_line(text: &str) -> &str {
    text.lines().next().unwrap_or("")
}

fn age(now: Timestamp, then: Timestamp) -> String {
    let s = now.since(then).as_secs();
    match s {
        s if s < 60 => format!("{s}s"),
        s if s < 3600 => format!("{}m", s / 60),
        s if s < 86_400 => format!("{}h", s / 3600),
        s => format!("{}d", s / 86_400),
    }
}

/// Percent-encode a path segment or query value.
fn encode(s: &str) -> String {
    s.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                (b as char).to_string()
            }
            b => format!("%{b:02X}"),
        })
        .collect()
}

pub fn asker(cmd: AskerCommand) -> anyhow::Result<()> {
    let client = Client::from_env()?;
    match cmd {
        AskerCommand::Add { name } => {
            let added: NewAsker = client.post("/api/askers", &json!({"name": name}))?;
            tell!(
                "added asker {}; its token (shown only now):",
                added.asker.name
            );
            say!("{}", added.token);
            tell!(
                "card-signing key thumbprint (RFC 7638; the asker pins it): {}",
                added.card_key.thumbprint
            );
            if let Some(network) = &added.network
                && let Some(url) = &network.url
            {
                tell!(
                    "from another machine it reaches a desk at {}/a2a/<desk>",
                    url
                );
                if let Some(fingerprint) = &network.certificate_sha256 {
                    tell!("certificate SHA-256 (the asker pins it): {}", fingerprint);
                }
            }
        }
        AskerCommand::List { json } => {
            let list: AskerList = client.get("/api/askers")?;
            if json {
                return out::json(&list);
            }
            if list.askers.is_empty() {
                say!("no askers; add one with `taskkeeper asker add NAME`");
            }
            for a in list.askers {
                say!("{:<20} since {}", a.name, a.created_at);
            }
        }
        AskerCommand::Remove { name } => {
            client.delete(&format!("/api/askers/{}", encode(&name)))?;
            say!("removed asker {}", name);
        }
    }
    Ok(())
}

pub fn card(cmd: CardCommand) -> anyhow::Result<()> {
    let client = Client::from_env()?;
    match cmd {
        CardCommand::Key { json } => {
            let key: CardKeyView = client.get("/api/card-key")?;
            if json {
                return out::json(&key);
            }
            say!("{}", key.thumbprint);
            tell!("public key (JWK): {}", key.jwk);
        }
        CardCommand::RotateKey => {
            let key: CardKeyView = client.post("/api/card-key/rotate", &json!({}))?;
            tell!("the cards are signed by a new key; askers who pinned the old one pin this:");
            say!("{}", key.thumbprint);
        }
    }
    Ok(())
}

pub fn status(json: bool) -> anyhow::Result<()> {
    let client = Client::from_env()?;
    let desks: DeskList = client.get("/api/desks")?;
    let sessions: SessionList = client.get("/api/sessions")?;
    let open: TaskList = client.get("/api/tasks?state=open")?;
    if json {
        return out::json(
            &json!({"desks": desks.desks, "sessions": sessions.sessions, "openTasks": open.tasks}),
        );
    }
    if desks.desks.is_empty() {
        say!(
            "no desks yet; `taskkeeper desk add NAME --dir DIR`, or start a connected Claude Code session"
        );
    }
    let now = taskkeeper_core::Clock::now(&taskkeeper_core::SystemClock);
    for d in &desks.desks {
        let tasks = open.tasks.iter().filter(|t| t.desk == d.name).count();
        say!(
            "{}  ({}, {})  {} open task(s){}",
            d.name,
            d.agent,
            d.dir,
            tasks,
            desk_state(d)
        );
        for s in sessions.sessions.iter().filter(|s| {
            s.desk == d.name && s.activity != taskkeeper_server::owner::api::ActivityView::Ended
        }) {
            let bg = if s.background.is_empty() {
                String::new()
            } else {
                format!(", {} background", s.background.len())
            };
            let headless = if s.headless { " (headless)" } else { "" };
            say!(
                "  session {}{}  {} for {}{}",
                s.id,
                headless,
                s.activity,
                age(now, s.since),
                bg
            );
            if let Some(p) = &s.delivery_problem {
                say!(
                    "    its task waits: the {} did not deliver {} ago: {}",
                    p.method,
                    age(now, p.at),
                    p.why
                );
            }
            if let Some(p) = &s.permission {
                say!(
                    "    asks to use {}: {}  (`taskkeeper session allow {}` or `deny`)",
                    p.tool,
                    p.description.as_deref().unwrap_or(&p.input),
                    s.id
                );
            }
        }
    }
    Ok(())
}

/// What a desk list adds after a desk: it has work and no live session (and what to do),
/// and whether it launches by itself.
fn desk_state(d: &DeskView) -> String {
    let mut out = String::new();
    if d.needs_session {
        // Taskkeeper launches these kinds headless; any other agent is started by the user.
        if ["claude-code", "codex", "gemini"].contains(&d.agent.as_str()) {
            out.push_str(&format!(
                "  NO SESSION: work waits (`taskkeeper session launch {}`)",
                d.name
            ));
        } else {
            out.push_str("  NO SESSION: work waits (start its agent in its directory)");
        }
    }
    if d.auto_launch {
        out.push_str("  [launches by itself");
        if d.auto_launch_gave_up {
            out.push_str(": gave up after repeated launches; launch once to reset");
        } else if let Some(at) = d.auto_launch_retry_at {
            out.push_str(&format!(": next try at {at}"));
        }
        out.push(']');
    }
    out
}

/// `taskkeeper digest`: the digest, taken (or only shown with --peek).
pub fn digest(peek: bool, json: bool) -> anyhow::Result<()> {
    let client = Client::from_env()?;
    let d: taskkeeper_server::owner::api::DigestView = if peek {
        client.get("/api/digest")?
    } else {
        client.post("/api/digest", &json!({}))?
    };
    if json {
        return out::json(&d);
    }
    match d.since {
        Some(since) => say!("Digest since {}", since),
        None => say!("Digest (the first: everything Taskkeeper keeps)"),
    }
    let line = |t: &taskkeeper_server::owner::api::TaskView| {
        let request = t.request.lines().next().unwrap_or("");
        format!("  {}  {}  {}  {request}", t.id, t.desk, t.label)
    };
    let sections: [(&str, &Vec<taskkeeper_server::owner::api::TaskView>); 4] = [
        ("Stalled", &d.stalled),
        ("Finished", &d.finished),
        ("Waiting on you", &d.waiting_on_owner),
        ("Acknowledgement pending", &d.ack_pending),
    ];
    for (title, tasks) in sections {
        say!("{}: {}", title, tasks.len());
        for t in tasks {
            say!("{}", line(t));
        }
    }
    say!("Reminders sent: {}", d.reminders.len());
    for r in &d.reminders {
        say!("  {}  {}  {}", r.at, r.task, r.desk);
    }
    if peek {
        say!("(not taken: `taskkeeper digest` takes it)");
    }
    Ok(())
}

pub fn settings(cmd: SettingsCommand) -> anyhow::Result<()> {
    let client = Client::from_env()?;
    if let SettingsCommand::List { json } = cmd {
        return settings_list(&client, json);
    }
    let answer: serde_json::Value = match &cmd {
        SettingsCommand::List { .. } | SettingsCommand::Get { .. } => {
            client.get("/api/settings")?
        }
        SettingsCommand::Set { key, value } => {
            client.put("/api/settings", &json!({ key: value }))?
        }
    };
    let settings = answer["settings"].as_object().cloned().unwrap_or_default();
    match cmd {
        SettingsCommand::Get { key: Some(key) } => match settings.get(&key) {
            Some(v) => say!("{}", v.as_str().unwrap_or_default()),
            None => anyhow::bail!("unknown setting {key:?}; `taskkeeper settings get` lists them"),
        },
        SettingsCommand::Set { key, .. } => {
            say!(
                "{} = {}",
                key,
                settings
                    .get(&key)
                    .and_then(|v| v.as_str())
                    .unwrap_or_default()
            );
        }
        SettingsCommand::List { .. } | SettingsCommand::Get { key: None } => {
            for (k, v) in settings {
                say!("{} = {}", k, v.as_str().unwrap_or_default());
            }
        }
    }
    Ok(())
}

/// `taskkeeper settings list`: the daemon's settings catalogue (core's settings table), by
/// group, each with its value now.
fn settings_list(client: &Client, json: bool) -> anyhow::Result<()> {
    let catalogue: taskkeeper_server::owner::api::SettingsCatalogue =
        client.get("/api/settings/catalogue")?;
    let answer: serde_json::Value = client.get("/api/settings")?;
    if json {
        return out::json(
            &json!({"catalogue": catalogue.settings, "settings": answer["settings"]}),
        );
    }
    let mut group = "";
    for s in catalogue.settings.iter().filter(|s| s.shown) {
        if s.group != group {
            group = &s.group;
            say!("{}", group);
        }
        let value = answer["settings"][&s.key].as_str().unwrap_or_default();
        say!(
            "  {} = {}  (default {}; {})\n      {}: {}",
            s.key,
            value,
            s.default,
            s.expected,
            s.label,
            s.help
        );
    }
    Ok(())
}

pub fn session(cmd: SessionCommand) -> anyhow::Result<()> {
    let client = Client::from_env()?;
    let (id, verb) = match &cmd {
        SessionCommand::Pause { id } => (id, "pause"),
        SessionCommand::Resume { id } => (id, "resume"),
        SessionCommand::Launch { desk } => {
            let session: taskkeeper_server::owner::api::SessionView =
                client.post(&format!("/api/desks/{}/launch", encode(desk)), &json!({}))?;
            say!("{}", session.id);
            tell!(
                "launched a headless {} session at desk {} (pid {}); `taskkeeper session stop {}` stops it",
                match session.agent.as_str() {
                    "codex" => "Codex CLI (`codex app-server`)",
                    "gemini" => "Gemini CLI (`gemini --acp`)",
                    _ => "Claude Code (`claude -p`)",
                },
                session.desk,
                session
                    .pid
                    .map_or_else(|| "?".to_owned(), |p| p.to_string()),
                session.id
            );
            return Ok(());
        }
        SessionCommand::Allow { id } | SessionCommand::Deny { id, .. } => {
            let (allow, message) = match &cmd {
                SessionCommand::Deny { message, .. } => (false, message.clone()),
                _ => (true, None),
            };
            let _: taskkeeper_server::owner::api::SessionView = client.post(
                &format!("/api/sessions/{}/permission", encode(id)),
                &json!({"allow": allow, "message": message}),
            )?;
            say!(
                "session {}: {}",
                id,
                if allow { "allowed" } else { "denied" }
            );
            return Ok(());
        }
        SessionCommand::Stop { id } => {
            let _: serde_json::Value =
                client.post(&format!("/api/sessions/{}/stop", encode(id)), &json!({}))?;
            say!("session {}: stopping", id);
            return Ok(());
        }
    };
    let _: serde_json::Value =
        client.post(&format!("/api/sessions/{}/{verb}", encode(id)), &json!({}))?;
    say!(
        "session {}: reminders {}",
        id,
        if verb == "pause" { "paused" } else { "resumed" }
    );
    Ok(())
}

pub fn reminders(cmd: RemindersCommand) -> anyhow::Result<()> {
    let client = Client::from_env()?;
    let verb = match cmd {
        RemindersCommand::Pause => "pause",
        RemindersCommand::Resume => "resume",
    };
    let _: serde_json::Value = client.post(&format!("/api/reminders/{verb}"), &json!({}))?;
    say!(
        "all reminders {}",
        if verb == "pause" { "paused" } else { "resumed" }
    );
    Ok(())
}
