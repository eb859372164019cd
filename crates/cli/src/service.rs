//! `taskkeeper service install|uninstall|status`: the daemon as a per-user service, for a
//! machine with no desktop to run the tray app: a systemd user unit on Linux, a launchd
//! agent on macOS, each running `taskkeeper serve` from the installed binary and restarting
//! it if it fails. The unit files are plain text made by pure functions, so their contents are
//! tested on any machine; `systemctl --user` / `launchctl` only start and stop them.
//!
//! The tray app and the service may both be installed but never run on one data directory
//! at once: the second to start is refused by the store's lock and says so.

use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{Context as _, bail};
use taskkeeper_server::agents::connect;

use crate::out::{say, tell};

/// The unit's name (systemd) and the agent's label (launchd).
pub const UNIT: &str = "taskkeeper.service";
pub const LABEL: &str = "dev.taskkeeper.daemon";

/// What `service install` puts after `serve`.
#[derive(Debug, Clone, Default)]
pub struct ServeArgs {
    pub port: Option<u16>,
    pub data_dir: Option<PathBuf>,
    pub ui: bool,
}

impl ServeArgs {
    fn argv(&self, exe: &Path) -> anyhow::Result<Vec<String>> {
        let mut argv = vec![exe.to_string_lossy().into_owned(), "serve".to_owned()];
        if let Some(port) = self.port {
            argv.extend(["--port".to_owned(), port.to_string()]);
        }
        if let Some(dir) = &self.data_dir {
            let dir =
                std::path::absolute(dir).with_context(|| format!("resolving {}", dir.display()))?;
            argv.extend(["--data-dir".to_owned(), dir.to_string_lossy().into_owned()]);
        }
        if self.ui {
            argv.push("--ui".to_owned());
        }
        Ok(argv)
    }
}

/// One word of an `ExecStart=` line: systemd splits on spaces and reads `"…"` and `\`
/// escapes, and expands `%` specifiers and `$` variables, so those are escaped.
fn systemd_word(word: &str) -> String {
    let escaped = word
        .replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('%', "%%")
        .replace('$', "$$");
    if escaped.contains(char::is_whitespace) || escaped != word || escaped.is_empty() {
        format!("\"{escaped}\"")
    } else {
        escaped
    }
}

/// The systemd user unit for `argv` (`[taskkeeper, serve, …]`).
pub fn systemd_unit(argv: &[String]) -> String {
    let exec: Vec<String> = argv.iter().map(|w| systemd_word(w)).collect();
    format!(
        "# Written by `taskkeeper service install`; removed by `taskkeeper service uninstall`.\n\
         [Unit]\n\
         Description=Taskkeeper daemon (keeps the tasks agents give your AI coding sessions open)\n\
         \n\
         [Service]\n\
         Type=exec\n\
         ExecStart={}\n\
         Restart=on-failure\n\
         RestartSec=5s\n\
         \n\
         [Install]\n\
         WantedBy=default.target\n",
        exec.join(" ")
    )
}

fn xml(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// The launchd agent for `argv`; its log goes to `log`.
pub fn launchd_plist(argv: &[String], log: &Path) -> String {
    let args: String = argv
        .iter()
        .map(|a| format!("\t\t<string>{}</string>\n", xml(a)))
        .collect();
    let log = xml(&log.to_string_lossy());
    format!(
        "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n\
         <!DOCTYPE plist PUBLIC \"-//Apple//DTD PLIST 1.0//EN\" \"http://www.apple.com/DTDs/PropertyList-1.0.dtd\">\n\
         <!-- Written by `taskkeeper service install`; removed by `taskkeeper service uninstall`. -->\n\
         <plist version=\"1.0\">\n\
         <dict>\n\
         \t<key>Label</key>\n\
         \t<string>{LABEL}</string>\n\
         \t<key>ProgramArguments</key>\n\
         \t<array>\n\
         {args}\
         \t</array>\n\
         \t<key>RunAtLoad</key>\n\
         \t<true/>\n\
         \t<key>KeepAlive</key>\n\
         \t<dict>\n\
         \t\t<key>SuccessfulExit</key>\n\
         \t\t<false/>\n\
         \t</dict>\n\
         \t<key>StandardErrorPath</key>\n\
         \t<string>{log}</string>\n\
         </dict>\n\
         </plist>\n"
    )
}

/// Where the service file goes for this user.
pub fn unit_path() -> anyhow::Result<PathBuf> {
    let home = connect::home()?;
    if cfg!(target_os = "macos") {
        return Ok(home
            .join("Library/LaunchAgents")
            .join(format!("{LABEL}.plist")));
    }
    let config = match std::env::var_os("XDG_CONFIG_HOME") {
        Some(d) if !d.is_empty() && Path::new(&d).is_absolute() => PathBuf::from(d),
        _ => home.join(".config"),
    };
    Ok(config.join("systemd/user").join(UNIT))
}

fn contents(argv: &[String]) -> anyhow::Result<String> {
    if cfg!(target_os = "macos") {
        let log = connect::home()?.join("Library/Logs/taskkeeper.log");
        Ok(launchd_plist(argv, &log))
    } else if cfg!(unix) {
        Ok(systemd_unit(argv))
    } else {
        bail!(
            "`taskkeeper service` knows systemd (Linux) and launchd (macOS); on Windows, start \
             the tray app at login (its Settings) or run `taskkeeper serve` from the Task Scheduler"
        )
    }
}

/// Run a service manager command; `Err` says what it answered.
fn manager(program: &str, args: &[&str]) -> Result<String, String> {
    match Command::new(program).args(args).output() {
        Ok(out) if out.status.success() => {
            Ok(String::from_utf8_lossy(&out.stdout).trim().to_owned())
        }
        Ok(out) => Err(format!(
            "`{program} {}` failed: {}{}",
            args.join(" "),
            String::from_utf8_lossy(&out.stderr).trim(),
            String::from_utf8_lossy(&out.stdout).trim()
        )),
        Err(e) => Err(format!("cannot run `{program}`: {e}")),
    }
}

fn uid() -> String {
    manager("id", &["-u"]).unwrap_or_default()
}

fn start_commands(path: &Path) -> Vec<(String, Vec<String>)> {
    let p = path.to_string_lossy().into_owned();
    if cfg!(target_os = "macos") {
        vec![(
            "launchctl".into(),
            vec!["bootstrap".into(), format!("gui/{}", uid()), p],
        )]
    } else {
        vec![
            (
                "systemctl".into(),
                vec!["--user".into(), "daemon-reload".into()],
            ),
            (
                "systemctl".into(),
                vec![
                    "--user".into(),
                    "enable".into(),
                    "--now".into(),
                    UNIT.into(),
                ],
            ),
        ]
    }
}

fn run_all(commands: &[(String, Vec<String>)]) -> Result<(), String> {
    for (program, args) in commands {
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        manager(program, &args)?;
    }
    Ok(())
}

fn shown(commands: &[(String, Vec<String>)]) -> String {
    commands
        .iter()
        .map(|(p, a)| format!("{p} {}", a.join(" ")))
        .collect::<Vec<_>>()
        .join(" && ")
}

pub fn install(args: &ServeArgs, start: bool, force: bool) -> anyhow::Result<()> {
    let exe = std::env::current_exe().context("finding the taskkeeper binary")?;
    // The same rule as `connect`: a unit naming a build's binary breaks at `cargo clean`.
    if !force && connect::in_build_dir(&exe) {
        bail!(
            "{} is inside a Cargo build directory: the service would stop starting at the next \
             `cargo clean`. Install it first (the package, or `cargo install --path crates/cli \
             --locked`) and run the installed `taskkeeper service install`, or pass --force \
             (nothing was changed)",
            exe.display()
        );
    }
    let text = contents(&args.argv(&exe)?)?;
    let path = unit_path()?;
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent)
            .with_context(|| format!("creating {}", parent.display()))?;
    }
    std::fs::write(&path, text).with_context(|| format!("writing {}", path.display()))?;
    say!("wrote {}", path.display());
    let commands = start_commands(&path);
    if !start {
        say!("start it with: {}", shown(&commands));
        return Ok(());
    }
    match run_all(&commands) {
        Ok(()) => say!("started; it starts again at every login (`taskkeeper service status`)"),
        Err(e) => bail!(
            "{e}; the file is written, start it with: {}",
            shown(&commands)
        ),
    }
    if cfg!(target_os = "linux") {
        say!(
            "to keep it running with nobody logged in (a headless machine, after a reboot): \
             loginctl enable-linger $USER"
        );
    }
    say!("the tray app and the service share the data directory: only one of them runs at a time");
    Ok(())
}

pub fn uninstall() -> anyhow::Result<()> {
    let path = unit_path()?;
    if !path.exists() {
        say!("no service installed ({} is absent)", path.display());
        return Ok(());
    }
    let stop = if cfg!(target_os = "macos") {
        manager("launchctl", &["bootout", &format!("gui/{}/{LABEL}", uid())])
    } else {
        manager("systemctl", &["--user", "disable", "--now", UNIT])
    };
    let stopped = match stop {
        Ok(_) => "stopped and removed",
        Err(e) => {
            tell!("taskkeeper: warning: {} (removing the file anyway)", e);
            "removed"
        }
    };
    std::fs::remove_file(&path).with_context(|| format!("removing {}", path.display()))?;
    if cfg!(target_os = "linux") {
        let _ = manager("systemctl", &["--user", "daemon-reload"]);
    }
    say!("{} {}", stopped, path.display());
    Ok(())
}

pub fn status() -> anyhow::Result<()> {
    let path = unit_path()?;
    if !path.exists() {
        say!(
            "not installed ({} is absent); `taskkeeper service install` installs it",
            path.display()
        );
        return Ok(());
    }
    say!("installed: {}", path.display());
    let state = if cfg!(target_os = "macos") {
        manager("launchctl", &["print", &format!("gui/{}/{LABEL}", uid())]).map(|out| {
            out.lines()
                .find(|l| l.trim_start().starts_with("state ="))
                .map_or("loaded".to_owned(), |l| l.trim().to_owned())
        })
    } else {
        // `is-active` exits non-zero for inactive; its answer is what we want either way.
        Command::new("systemctl")
            .args(["--user", "is-active", UNIT])
            .output()
            .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_owned())
            .map_err(|e| format!("cannot run `systemctl`: {e}"))
    };
    match state {
        Ok(state) if !state.is_empty() => say!("state: {}", state),
        Ok(_) => say!("state: unknown (no answer from the service manager)"),
        Err(e) => say!("state: unknown ({})", e),
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn argv(words: &[&str]) -> Vec<String> {
        words.iter().map(|w| (*w).to_owned()).collect()
    }

    #[test]
    fn the_systemd_unit_runs_serve_from_the_installed_binary_and_restarts_it() {
        let unit = systemd_unit(&argv(&["/usr/bin/taskkeeper", "serve", "--port", "7800"]));
        assert!(
            unit.contains("\nExecStart=/usr/bin/taskkeeper serve --port 7800\n"),
            "{unit}"
        );
        for line in [
            "[Service]",
            "Type=exec",
            "Restart=on-failure",
            "[Install]",
            "WantedBy=default.target",
        ] {
            assert!(unit.lines().any(|l| l == line), "{line} in {unit}");
        }
    }

    #[test]
    fn unit_words_with_spaces_percent_or_dollar_are_escaped() {
        let unit = systemd_unit(&argv(&[
            "/opt/my apps/taskkeeper",
            "serve",
            "--data-dir",
            "/srv/100%/$HOME",
        ]));
        assert!(
            unit.contains(
                "ExecStart=\"/opt/my apps/taskkeeper\" serve --data-dir \"/srv/100%%/$$HOME\"\n"
            ),
            "{unit}"
        );
    }

    #[test]
    fn the_launchd_agent_runs_serve_at_load_and_again_after_a_failure() {
        let plist = launchd_plist(
            &argv(&[
                "/Applications/Taskkeeper.app/Contents/MacOS/taskkeeper",
                "serve",
            ]),
            Path::new("/Users/a&b/Library/Logs/taskkeeper.log"),
        );
        assert!(plist.contains("<string>dev.taskkeeper.daemon</string>"));
        assert!(plist.contains(
            "\t\t<string>/Applications/Taskkeeper.app/Contents/MacOS/taskkeeper</string>\n\t\t<string>serve</string>\n"
        ));
        assert!(plist.contains("<key>RunAtLoad</key>\n\t<true/>"));
        assert!(plist.contains("<key>SuccessfulExit</key>\n\t\t<false/>"));
        assert!(plist.contains("/Users/a&amp;b/Library/Logs/taskkeeper.log"));
    }
}
