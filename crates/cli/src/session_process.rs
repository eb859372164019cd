//! Which process is a Codex or Gemini session, for `taskkeeper hook codex|gemini` to name it.
//!
//! Claude Code puts its own pid in its hooks' environment (`CLAUDE_PID`); Codex CLI 0.171.0
//! and Gemini CLI 0.61.0 put none there (their hooks get `CODEX_HOME`, or `GEMINI_SESSION_ID`
//! and the project's directories). The daemon needs the session's process twice: a pane is
//! pasted into only when its process is that one or an ancestor of it (`delivery/tmux.rs`),
//! and the process being gone ends the session (`sessions::level_of`). So the pid must be the
//! agent's own long-lived process, never the hook's shell (it exits at once, and the session
//! would look gone), and none at all when the hook runs in a process that is not the
//! session's.
//!
//! What the real binaries run a hook under, read from `/proc` in a loopback-only namespace:
//! - Codex's TUI with `--no-daemon` (and `codex exec`): the hook is a child of the `codex`
//!   binary that runs the thread, which is the pane's process or under it.
//! - Codex's shared app server (`codex app-server`, what the TUI's default daemon mode runs,
//!   and what `--remote` joins): the hook is a child of that server, which runs the threads
//!   of every TUI joined to it and is under none of their panes. Its pid would say nothing of
//!   one session, so none is sent (the app server itself is that session's way in).
//! - Gemini's TUI: `node …/gemini.js` (the pane's process) starts itself again as a child
//!   with a larger heap (`GEMINI_CLI_NO_RELAUNCH`), and that child runs the hooks.
//!
//! So the helper walks its own ancestors, nearest first, to the first process that is the
//! agent's: the `codex` binary, or a `node` running Gemini. A wrapper in between (a shell,
//! `timeout`, a script of the user's) is passed over. Only Linux has `/proc` to read; elsewhere
//! no pid is sent, and the daemon pastes into no pane of such a session (TESTING.md's manual
//! checklist).

/// One ancestor of the hook helper, as `/proc` shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Process {
    pub pid: u32,
    /// The kernel's name for it (`comm`: the executable's file name, at most 15 bytes).
    pub name: String,
    /// Its command line.
    pub args: Vec<String>,
}

/// How far up the helper looks: the agent is its parent, or a few wrappers above it.
const MAX_ANCESTORS: usize = 16;

/// The pid of a Codex session among `line`, the helper's ancestors nearest first: the
/// nearest `codex` binary, unless it is the app server, which runs other sessions too. `None`
/// when no ancestor is one.
pub fn codex_pid(line: &[Process]) -> Option<u32> {
    line.iter()
        .find(|p| p.name == "codex")
        .filter(|p| !p.args.iter().any(|a| a == "app-server"))
        .map(|p| p.pid)
}

/// The pid of a Gemini session among `line`, the helper's ancestors nearest first: the
/// nearest `node` running Gemini. `None` when no ancestor is one.
pub fn gemini_pid(line: &[Process]) -> Option<u32> {
    line.iter()
        .find(|p| {
            matches!(p.name.as_str(), "node" | "nodejs")
                && p.args.iter().skip(1).any(|a| a.contains("gemini"))
        })
        .map(|p| p.pid)
}

/// The hook helper's ancestors, nearest (its parent) first, as far as [`MAX_ANCESTORS`] or the
/// first process; one that cannot be read ends the line there.
#[cfg(target_os = "linux")]
pub fn ancestors() -> Vec<Process> {
    let mut line = Vec::new();
    let mut at = std::os::unix::process::parent_id();
    while at > 1 && line.len() < MAX_ANCESTORS {
        let Some((process, parent)) = read(at) else {
            break;
        };
        line.push(process);
        at = parent;
    }
    line
}

/// Elsewhere there is no `/proc`: no ancestor is known, so no pid is sent.
#[cfg(not(target_os = "linux"))]
pub fn ancestors() -> Vec<Process> {
    Vec::new()
}

/// One process and its parent's pid, from `/proc/<pid>/stat` and `cmdline`.
#[cfg(target_os = "linux")]
fn read(pid: u32) -> Option<(Process, u32)> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // `pid (name) state ppid …`: the name may hold spaces and parentheses, so it is what lies
    // between the first '(' and the last ')', and the fields are counted after that.
    let (head, rest) = stat.rsplit_once(')')?;
    let name = head.split_once('(')?.1.to_owned();
    let parent = rest.split_whitespace().nth(1)?.parse().ok()?;
    let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
    let args = cmdline
        .split(|b| *b == 0)
        .filter(|a| !a.is_empty())
        .map(|a| String::from_utf8_lossy(a).into_owned())
        .collect();
    Some((Process { pid, name, args }, parent))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(pid: u32, name: &str, args: &[&str]) -> Process {
        Process {
            pid,
            name: name.into(),
            args: args.iter().map(|a| (*a).to_owned()).collect(),
        }
    }

    const CODEX: &str = "/opt/codex/vendor/x86_64-unknown-linux-musl/bin/codex";
    const GEMINI: &str = "/opt/gemini-cli/bundle/gemini.js";

    /// As Codex 0.171.0 ran it: the hook's parent is the TUI (`--no-daemon`), the pane's
    /// process; a shell Codex or the user put in between is passed over.
    #[test]
    fn a_codex_hook_names_the_codex_that_runs_its_thread() {
        let tmux = p(10, "tmux: server", &["tmux", "-S", "/tmp/s"]);
        let tui = p(11, "codex", &[CODEX, "--no-daemon"]);
        assert_eq!(codex_pid(&[tui.clone(), tmux.clone()]), Some(11));
        let shell = p(12, "sh", &["sh", "-c", "taskkeeper hook codex"]);
        let timeout = p(
            13,
            "timeout",
            &["timeout", "5", "taskkeeper", "hook", "codex"],
        );
        assert_eq!(codex_pid(&[timeout, shell, tui.clone(), tmux]), Some(11));
        // Under a login shell in the pane, and npm's node wrapper above the binary.
        let wrapper = p(
            14,
            "node",
            &["node", "/usr/lib/node_modules/@openai/codex/bin/codex.js"],
        );
        let bash = p(15, "bash", &["-bash"]);
        assert_eq!(codex_pid(&[tui, wrapper, bash]), Some(11));
        let exec = p(16, "codex", &[CODEX, "exec", "fix it"]);
        assert_eq!(codex_pid(&[exec]), Some(16));
    }

    /// A hook Codex's shared app server runs is for one of the threads it runs for several
    /// TUIs, and the server is under none of their panes: no pid, so no pane is pasted into
    /// on its word (and the session's end is not tied to the server's).
    #[test]
    fn a_codex_hook_in_the_shared_app_server_names_no_process() {
        for server in [
            p(20, "codex", &[CODEX, "app-server", "--listen", "unix://"]),
            p(
                20,
                "codex",
                &[
                    CODEX,
                    "app-server",
                    "--listen",
                    "unix://",
                    "--managed-daemon",
                ],
            ),
        ] {
            let tui = p(21, "codex", &[CODEX, "--no-daemon"]);
            assert_eq!(codex_pid(&[server, tui]), None);
        }
    }

    /// As Gemini 0.61.0 ran it: the pane's `node gemini.js` starts itself again as a child
    /// with a larger heap, and that child runs the hooks; a node of the user's in between
    /// (a hook wrapper) names no Gemini and is passed over.
    #[test]
    fn a_gemini_hook_names_the_node_that_runs_gemini() {
        let relaunched = p(
            31,
            "node",
            &["/usr/bin/node", "--max-old-space-size=12052", GEMINI],
        );
        let first = p(30, "node", &["node", GEMINI]);
        let tmux = p(29, "tmux: server", &["tmux"]);
        assert_eq!(
            gemini_pid(&[relaunched.clone(), first.clone(), tmux.clone()]),
            Some(31)
        );
        let wrapper = p(32, "node", &["node", "/home/u/hooks/wrap.js"]);
        let shell = p(33, "sh", &["sh", "-c", "taskkeeper hook gemini"]);
        assert_eq!(gemini_pid(&[shell, wrapper, relaunched, first]), Some(31));
        let global = p(34, "node", &["node", "/usr/local/bin/gemini"]);
        assert_eq!(gemini_pid(&[global]), Some(34));
    }

    /// No ancestor is the agent's (the hook run by hand from a shell, an agent of another
    /// kind, a line that could not be read): no pid. The shell or the helper naming the agent
    /// in its own arguments is not the agent.
    #[test]
    fn a_hook_with_no_agent_above_it_names_no_process() {
        let shell = p(40, "bash", &["bash", "-c", "taskkeeper hook gemini codex"]);
        let claude = p(41, "claude", &["claude"]);
        for (agent, pid_of) in [
            ("codex", codex_pid as fn(&[Process]) -> _),
            ("gemini", gemini_pid),
        ] {
            assert_eq!(pid_of(&[]), None, "{agent}");
            assert_eq!(pid_of(&[shell.clone(), claude.clone()]), None, "{agent}");
        }
        let tui = p(43, "codex", &[CODEX]);
        assert_eq!(gemini_pid(std::slice::from_ref(&tui)), None);
        let gemini = p(44, "node", &["node", GEMINI]);
        assert_eq!(codex_pid(&[gemini]), None);
    }

    /// The helper's own line, read from `/proc`: its parent is this test's process.
    #[cfg(target_os = "linux")]
    #[test]
    fn the_line_read_from_proc_starts_at_the_parent() {
        let line = ancestors();
        let first = line.first().expect("the test's parent can be read");
        assert_eq!(first.pid, std::os::unix::process::parent_id());
        assert!(!first.name.is_empty(), "{first:?}");
        assert!(line.len() <= MAX_ANCESTORS);
    }
}
