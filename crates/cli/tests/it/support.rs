//! Running `taskkeeper serve` as a child process and talking to it.

use std::io::{BufRead as _, BufReader, Read as _, Write as _};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::sync::mpsc;
use std::time::Duration;

pub const TOKEN: &str = "cli-test-token-0123456789abcdef0123456789ab";

pub fn bin() -> &'static str {
    env!("CARGO_BIN_EXE_taskkeeper")
}

/// A daemon child process; killed on drop if still running.
pub struct Served {
    pub child: Child,
    pub port: u16,
    pub data_dir: PathBuf,
}

impl Served {
    /// Start `taskkeeper serve --port 0` on `data_dir` and wait for its `listening on` line.
    pub fn start(data_dir: &Path) -> Served {
        Self::try_start(data_dir, 0)
            .unwrap_or_else(|(_, stderr)| panic!("daemon did not start: {stderr}"))
    }

    /// Start with exactly the environment `env` (plus the token): the sessions it launches
    /// inherit it.
    pub fn start_in(data_dir: &Path, env: &[(String, String)]) -> Served {
        Self::try_start_in(data_dir, 0, Some(env), &[])
            .unwrap_or_else(|(_, stderr)| panic!("daemon did not start: {stderr}"))
    }

    /// [`Served::start_in`] on a given port (one the sessions' hooks find by default).
    pub fn start_in_on(data_dir: &Path, port: u16, env: &[(String, String)]) -> Served {
        Self::try_start_in(data_dir, port, Some(env), &[])
            .unwrap_or_else(|(_, stderr)| panic!("daemon did not start: {stderr}"))
    }

    /// Start with these flags after `serve` (`--ui DIR`).
    pub fn start_with(data_dir: &Path, flags: &[&std::ffi::OsStr]) -> Served {
        Self::try_start_in(data_dir, 0, None, flags)
            .unwrap_or_else(|(_, stderr)| panic!("daemon did not start: {stderr}"))
    }

    /// [`Served::start_with`], or the exit status and stderr of a daemon that refused to start.
    pub fn try_start_with(
        data_dir: &Path,
        flags: &[&std::ffi::OsStr],
    ) -> Result<Served, (Option<i32>, String)> {
        Self::try_start_in(data_dir, 0, None, flags)
    }

    /// Start, or return the exit status and stderr of a daemon that refused to start.
    pub fn try_start(data_dir: &Path, port: u16) -> Result<Served, (Option<i32>, String)> {
        Self::try_start_in(data_dir, port, None, &[])
    }

    fn try_start_in(
        data_dir: &Path,
        port: u16,
        env: Option<&[(String, String)]>,
        flags: &[&std::ffi::OsStr],
    ) -> Result<Served, (Option<i32>, String)> {
        let mut command = Command::new(bin());
        if let Some(env) = env {
            command.env_clear().envs(env.iter().map(|(k, v)| (k, v)));
            if let Ok(level) = std::env::var("TASKKEEPER_LOG") {
                command.env("TASKKEEPER_LOG", level);
            }
        }
        let mut child = command
            .args(["serve", "--port", &port.to_string(), "--data-dir"])
            .arg(data_dir)
            .args(flags)
            .env("TASKKEEPER_TOKEN", TOKEN)
            .env_remove("TASKKEEPER_PORT")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let stdout = child.stdout.take().unwrap();
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            let mut line = String::new();
            let _ = BufReader::new(stdout).read_line(&mut line);
            let _ = tx.send(line);
        });
        let line = rx.recv_timeout(Duration::from_secs(20)).unwrap_or_default();
        match line.trim().strip_prefix("listening on http://127.0.0.1:") {
            Some(port) => Ok(Served {
                child,
                port: port.parse().unwrap(),
                data_dir: data_dir.to_owned(),
            }),
            None => {
                let status = child.wait().unwrap();
                let mut stderr = String::new();
                child
                    .stderr
                    .take()
                    .unwrap()
                    .read_to_string(&mut stderr)
                    .unwrap();
                Err((status.code(), stderr))
            }
        }
    }

    pub fn url(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    /// Run the CLI against this daemon.
    pub fn cli(&self, args: &[&str]) -> Output {
        Command::new(bin())
            .args(args)
            .env("TASKKEEPER_URL", self.url())
            .env("TASKKEEPER_TOKEN", TOKEN)
            .env("TASKKEEPER_DATA_DIR", &self.data_dir)
            .stdin(Stdio::null())
            .output()
            .unwrap()
    }

    pub fn kill9(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }

    pub fn sigterm(&mut self) -> std::process::ExitStatus {
        let pid = self.child.id().to_string();
        let ok = Command::new("kill").args(["-TERM", &pid]).status().unwrap();
        assert!(ok.success());
        self.child.wait().unwrap()
    }
}

impl Drop for Served {
    fn drop(&mut self) {
        self.kill9();
    }
}

/// One HTTP/1.1 request on a fresh connection: (status, body). `None` when the connection
/// broke before a full answer came back (the daemon died).
pub fn request(port: u16, method: &str, path: &str, body: &str) -> Option<(u16, String)> {
    let mut s = TcpStream::connect(("127.0.0.1", port)).ok()?;
    s.set_read_timeout(Some(Duration::from_secs(10))).ok()?;
    let req = format!(
        "{method} {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nAuthorization: Bearer {TOKEN}\r\n\
         Content-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    s.write_all(req.as_bytes()).ok()?;
    let mut out = Vec::new();
    s.read_to_end(&mut out).ok()?;
    let text = String::from_utf8(out).ok()?;
    let (head, body) = text.split_once("\r\n\r\n")?;
    let status: u16 = head.split(' ').nth(1)?.parse().ok()?;
    let len: usize = head.lines().find_map(|l| {
        l.to_ascii_lowercase()
            .strip_prefix("content-length:")
            .map(|v| v.trim().parse().ok())
    })??;
    (body.len() == len).then(|| (status, body.to_owned()))
}

/// A run that must succeed: its output, or a failure that shows what it printed.
pub fn ok(out: Output) -> Output {
    assert!(out.status.success(), "{}{}", stdout(&out), stderr(&out));
    out
}

pub fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

pub fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// Wait for `what`, up to a bound that only a broken build reaches.
pub fn until<T>(what: &str, f: impl FnMut() -> Option<T>) -> T {
    until_reported(what, std::time::Duration::from_secs(30), &String::new, f)
}

/// Wait for `what` up to `bound`; `report` says what was seen when it never comes (a real
/// agent's screen, the daemon's log).
pub fn until_reported<T>(
    what: &str,
    bound: std::time::Duration,
    report: &dyn Fn() -> String,
    mut f: impl FnMut() -> Option<T>,
) -> T {
    let deadline = std::time::Instant::now() + bound;
    loop {
        if let Some(v) = f() {
            return v;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "timed out waiting for {what}{}",
            report()
        );
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
}
