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
        let mut res = self
            .agent
            .post(format!("{}{path}", self.base))
            .header("Authorization", format!("Bearer {}", self.token))
            .send_json(body)
            .unwrap();
        let status = res.status().as_u16();
        (status, res.body_mut().read_json().unwrap_or(Value::Null))
    }
}
