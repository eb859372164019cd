//! Helpers for tests that talk to a daemon over HTTP and wait on things that happen in another
//! process.

use std::net::TcpListener;
use std::path::Path;
use std::time::{Duration, Instant};

use serde_json::Value;

/// A port that was free a moment ago. The app binds it itself, so there is a small window for
/// another process to take it; good enough for tests on one machine.
pub fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// A token nobody else uses: the test's pid and the time, hashed by the standard library's
/// randomly keyed hasher.
pub fn random_token() -> String {
    use std::hash::{BuildHasher as _, RandomState};
    let state = RandomState::new();
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos();
    format!(
        "{:016x}{:016x}",
        state.hash_one((std::process::id(), nanos)),
        state.hash_one(nanos)
    )
}

/// Calls `check` every 100 ms until it gives a value or `timeout` passes.
pub fn wait_for<T>(
    what: &str,
    timeout: Duration,
    mut check: impl FnMut() -> Option<T>,
) -> Result<T, String> {
    let start = Instant::now();
    loop {
        if let Some(value) = check() {
            return Ok(value);
        }
        if start.elapsed() > timeout {
            return Err(format!("timed out after {timeout:?} waiting for {what}"));
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// Whether a file's text contains `needle` (false while the file doesn't exist yet).
pub fn file_contains(path: &Path, needle: &str) -> bool {
    std::fs::read_to_string(path).is_ok_and(|text| text.contains(needle))
}

/// A client for the owner API of one daemon.
pub struct Owner {
    agent: ureq::Agent,
    base: String,
    token: String,
}

impl Owner {
    pub fn new(port: u16, token: &str) -> Owner {
        let agent = ureq::Agent::config_builder()
            .timeout_global(Some(Duration::from_secs(10)))
            .http_status_as_error(false)
            .build()
            .into();
        Owner {
            agent,
            base: format!("http://127.0.0.1:{port}"),
            token: token.to_owned(),
        }
    }

    /// `GET /healthz` answers "ok".
    pub fn healthy(&self) -> bool {
        match self.agent.get(format!("{}/healthz", self.base)).call() {
            Ok(mut res) => {
                res.status() == 200 && res.body_mut().read_to_string().is_ok_and(|b| b == "ok")
            }
            Err(_) => false,
        }
    }

    /// POSTs JSON with the owner token and returns (status, body).
    pub fn post(&self, path: &str, body: Value) -> (u16, Value) {
        self.send("POST", path, &self.token, &[], Some(body))
    }

    /// GETs with the owner token and returns (status, body).
    pub fn get(&self, path: &str) -> (u16, Value) {
        self.send("GET", path, &self.token, &[], None)
    }

    /// The session's waiter (`/hooks/claude-code/wait`): the text it is woken with, or `None`
    /// when nothing came within `timeout`.
    pub fn hook_wait(&self, session: &str, cwd: &Path, timeout: Duration) -> Option<String> {
        let agent: ureq::Agent = ureq::Agent::config_builder()
            .timeout_global(Some(timeout))
            .http_status_as_error(false)
            .build()
            .into();
        let body = serde_json::json!({
            "session_id": session, "hook_event_name": "Stop", "cwd": cwd.to_string_lossy(),
        });
        let mut res = agent
            .post(format!("{}/hooks/claude-code/wait", self.base))
            .header("Authorization", format!("Bearer {}", self.token))
            .send_json(&body)
            .ok()?;
        let out: Value = res.body_mut().read_json().ok()?;
        (out["action"] == "deliver").then(|| out["text"].as_str().unwrap_or("").to_owned())
    }

    /// PUTs JSON with the owner token and returns (status, body).
    pub fn put(&self, path: &str, body: Value) -> (u16, Value) {
        self.send("PUT", path, &self.token, &[], Some(body))
    }

    /// Any request with any bearer token and extra headers; returns (status, body as JSON or
    /// `Null`).
    pub fn send(
        &self,
        method: &str,
        path: &str,
        token: &str,
        headers: &[(&str, &str)],
        body: Option<Value>,
    ) -> (u16, Value) {
        let uri = format!("{}{path}", self.base);
        let auth = format!("Bearer {token}");
        let builder = ureq::http::Request::builder()
            .method(method)
            .uri(&uri)
            .header("Authorization", auth);
        let builder = headers
            .iter()
            .fold(builder, |b, (name, value)| b.header(*name, *value));
        let result = match body {
            Some(body) => {
                let request = builder
                    .header("Content-Type", "application/json")
                    .body(body.to_string())
                    .unwrap();
                self.agent.run(request)
            }
            None => self.agent.run(builder.body(()).unwrap()),
        };
        let mut res = result.unwrap_or_else(|e| panic!("{method} {path}: {e}"));
        let status = res.status().as_u16();
        (status, res.body_mut().read_json().unwrap_or(Value::Null))
    }

    /// Drives the daemon's Claude Code hook intake as a session working in `cwd` would.
    pub fn hook(&self, session: &str, cwd: &Path, event: &str, extra: Value) -> Value {
        let mut body = serde_json::json!({
            "session_id": session,
            "hook_event_name": event,
            "cwd": cwd.to_string_lossy(),
        });
        if let (Value::Object(body), Value::Object(extra)) = (&mut body, extra) {
            body.extend(extra);
        }
        let (status, out) = self.post("/hooks/claude-code", body);
        assert_eq!(status, 200, "hook {event}: {out}");
        out
    }
}
