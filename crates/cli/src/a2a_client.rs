//! A small A2A v1.0 JSON-RPC client for askers and scripts: `send`, `get`, `list`, `cancel`,
//! `ack` and `watch`. It speaks plain A2A (plus the AckTask extension method), so it works
//! against any A2A server: `--url` names the endpoint, else it is the local daemon's
//! `/a2a/{desk}` (or `/a2a` when no desk is given).

use std::io::BufRead as _;
use std::time::Duration;

use anyhow::{Context as _, anyhow, bail};
use serde_json::{Value, json};

pub struct A2aClient {
    endpoint: String,
    token: Option<String>,
    agent: ureq::Agent,
}

impl A2aClient {
    /// `url` wins; else the daemon at `TASKKEEPER_URL`, desk endpoint or machine endpoint.
    pub fn new(
        url: Option<String>,
        desk: Option<&str>,
        token: Option<String>,
    ) -> anyhow::Result<Self> {
        let endpoint = match url {
            Some(u) => u,
            None => {
                let base = crate::client::base_url();
                match desk {
                    Some(d) => format!("{base}/a2a/{d}"),
                    None => format!("{base}/a2a"),
                }
            }
        };
        let token = match token {
            Some(t) => Some(t),
            None => crate::client::token_from_env().ok(),
        };
        let agent = ureq::Agent::config_builder()
            .http_status_as_error(false)
            // A blocking SendMessage may wait up to the server's cap (10 minutes by default).
            .timeout_global(Some(Duration::from_secs(15 * 60)))
            .build()
            .new_agent();
        Ok(Self {
            endpoint,
            token,
            agent,
        })
    }

    fn post(
        &self,
        method: &str,
        params: Value,
    ) -> Result<ureq::http::Response<ureq::Body>, ureq::Error> {
        let mut req = self
            .agent
            .post(&self.endpoint)
            .header("A2A-Version", "1.0")
            .header("Content-Type", "application/json");
        if let Some(t) = &self.token {
            req = req.header("Authorization", format!("Bearer {t}"));
        }
        req.send(json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params}).to_string())
    }

    /// Call `method` and return its `result`, or the server's error as one line.
    pub fn call(&self, method: &str, params: Value) -> anyhow::Result<Value> {
        let mut resp = self.post(method, params).map_err(|e| self.unreachable(e))?;
        let status = resp.status();
        let text = resp
            .body_mut()
            .read_to_string()
            .context("reading the answer")?;
        let v: Value = serde_json::from_str(&text).map_err(|_| {
            anyhow!(
                "{} answered {status} without JSON-RPC: {text}",
                self.endpoint
            )
        })?;
        result_of(v)
    }

    /// Call a streaming method and hand each result to `each` until the server closes the
    /// stream (or `each` says stop).
    pub fn stream(
        &self,
        method: &str,
        params: Value,
        mut each: impl FnMut(&Value) -> bool,
    ) -> anyhow::Result<()> {
        let mut resp = self.post(method, params).map_err(|e| self.unreachable(e))?;
        let is_sse = resp
            .headers()
            .get("content-type")
            .and_then(|v| v.to_str().ok())
            .is_some_and(|v| v.starts_with("text/event-stream"));
        if !is_sse {
            let text = resp.body_mut().read_to_string()?;
            let v: Value =
                serde_json::from_str(&text).map_err(|_| anyhow!("unexpected answer: {text}"))?;
            return result_of(v).map(drop);
        }
        let reader = std::io::BufReader::new(resp.into_body().into_reader());
        for line in reader.lines() {
            let line = line.context("reading the event stream")?;
            let Some(data) = line.strip_prefix("data:") else {
                continue;
            };
            let v: Value =
                serde_json::from_str(data.trim()).context("an event that is not JSON")?;
            if !each(&result_of(v)?) {
                break;
            }
        }
        Ok(())
    }

    fn unreachable(&self, e: ureq::Error) -> anyhow::Error {
        anyhow!(
            "cannot reach {} ({e}); is the daemon running (`taskkeeper serve` or the app)?",
            self.endpoint
        )
    }
}

fn result_of(v: Value) -> anyhow::Result<Value> {
    if let Some(e) = v.get("error") {
        let code = e.get("code").and_then(Value::as_i64).unwrap_or(0);
        let message = e.get("message").and_then(Value::as_str).unwrap_or("error");
        bail!("{message} (A2A error {code})");
    }
    v.get("result")
        .cloned()
        .ok_or_else(|| anyhow!("an answer with neither result nor error: {v}"))
}

/// `TASK_STATE_INPUT_REQUIRED` → `input-required`.
pub fn state_name(v1: &str) -> String {
    v1.trim_start_matches("TASK_STATE_")
        .to_ascii_lowercase()
        .replace('_', "-")
}

/// What a line about a v1.0 Task shows: its id, its state, and its status text (the text
/// parts joined), each to be shown as the words from outside they are.
pub fn describe(task: &Value) -> (String, String, String) {
    let id = task["id"].as_str().unwrap_or("?").to_owned();
    let state = state_name(task["status"]["state"].as_str().unwrap_or("?"));
    let text: Vec<&str> = task["status"]["message"]["parts"]
        .as_array()
        .map(|parts| parts.iter().filter_map(|p| p["text"].as_str()).collect())
        .unwrap_or_default();
    (id, state, text.join(" "))
}
