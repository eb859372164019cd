//! A small blocking client of the owner API: where the daemon is (`TASKKEEPER_URL`), which
//! token to send (the owner's: `TASKKEEPER_TOKEN`, else the token file in the data
//! directory; the hook helper's: the worker token), and error bodies turned into one
//! readable line.

use std::path::PathBuf;
use std::time::Duration;

use anyhow::{Context as _, anyhow};
use serde::Serialize;
use serde::de::DeserializeOwned;
use taskkeeper_server::owner::api::ErrorBody;

/// The daemon's address: `TASKKEEPER_URL`, default `http://127.0.0.1:7717`.
pub fn base_url() -> String {
    std::env::var("TASKKEEPER_URL")
        .unwrap_or_else(|_| "http://127.0.0.1:7717".to_owned())
        .trim_end_matches('/')
        .to_owned()
}

/// The owner's token: `TASKKEEPER_TOKEN`, else the owner's token file in the data directory.
pub fn token_from_env() -> anyhow::Result<String> {
    token_of(
        "TASKKEEPER_TOKEN",
        taskkeeper_server::OWNER_TOKEN_FILE,
        "owner",
    )
}

/// The sessions' token (what the hook helper and `mcp-headers` send):
/// `TASKKEEPER_WORKER_TOKEN`, else the worker token file in the data directory. Never the
/// owner's: a session reaches the hook intake and MCP, not the owner API.
pub fn worker_token_from_env() -> anyhow::Result<String> {
    token_of(
        "TASKKEEPER_WORKER_TOKEN",
        taskkeeper_server::WORKER_TOKEN_FILE,
        "worker",
    )
}

fn token_of(var: &str, file: &str, whose: &str) -> anyhow::Result<String> {
    if let Ok(t) = std::env::var(var)
        && !t.is_empty()
    {
        return Ok(t);
    }
    let dir = match std::env::var_os("TASKKEEPER_DATA_DIR") {
        Some(d) if !d.is_empty() => PathBuf::from(d),
        _ => taskkeeper_server::default_data_dir()?,
    };
    let path = dir.join(file);
    Ok(std::fs::read_to_string(&path)
        .with_context(|| {
            format!(
                "cannot read the {whose} token from {}; is the daemon set up (taskkeeper serve)? or set {var}",
                path.display()
            )
        })?
        .trim()
        .to_owned())
}

pub struct Client {
    base: String,
    token: String,
    agent: ureq::Agent,
}

impl Client {
    pub fn from_env() -> anyhow::Result<Client> {
        let base =
            std::env::var("TASKKEEPER_URL").unwrap_or_else(|_| "http://127.0.0.1:7717".to_owned());
        let token = token_from_env()?;
        let agent = ureq::Agent::config_builder()
            .http_status_as_error(false)
            .timeout_global(Some(Duration::from_secs(30)))
            .build()
            .new_agent();
        Ok(Client {
            base: base.trim_end_matches('/').to_owned(),
            token,
            agent,
        })
    }

    pub fn get<T: DeserializeOwned>(&self, path: &str) -> anyhow::Result<T> {
        let resp = self
            .agent
            .get(format!("{}{path}", self.base))
            .header("Authorization", format!("Bearer {}", self.token))
            .call();
        self.finish(resp)
    }

    pub fn post<B: Serialize, T: DeserializeOwned>(
        &self,
        path: &str,
        body: &B,
    ) -> anyhow::Result<T> {
        self.send_json(ureq::http::Method::POST, path, body)
    }

    pub fn put<B: Serialize, T: DeserializeOwned>(
        &self,
        path: &str,
        body: &B,
    ) -> anyhow::Result<T> {
        self.send_json(ureq::http::Method::PUT, path, body)
    }

    pub fn patch<B: Serialize, T: DeserializeOwned>(
        &self,
        path: &str,
        body: &B,
    ) -> anyhow::Result<T> {
        self.send_json(ureq::http::Method::PATCH, path, body)
    }

    fn send_json<B: Serialize, T: DeserializeOwned>(
        &self,
        method: ureq::http::Method,
        path: &str,
        body: &B,
    ) -> anyhow::Result<T> {
        let request = ureq::http::Request::builder()
            .method(method)
            .uri(format!("{}{path}", self.base))
            .header("Authorization", format!("Bearer {}", self.token))
            .header("Content-Type", "application/json")
            .body(serde_json::to_vec(body)?)?;
        self.finish(self.agent.run(request))
    }

    pub fn delete(&self, path: &str) -> anyhow::Result<()> {
        let resp = self
            .agent
            .delete(format!("{}{path}", self.base))
            .header("Authorization", format!("Bearer {}", self.token))
            .call();
        self.text(resp).map(drop)
    }

    fn finish<T: DeserializeOwned>(
        &self,
        resp: Result<ureq::http::Response<ureq::Body>, ureq::Error>,
    ) -> anyhow::Result<T> {
        let text = self.text(resp)?;
        serde_json::from_str(&text)
            .with_context(|| format!("unexpected answer from the daemon: {text}"))
    }

    /// The body of a successful answer, or the daemon's error message.
    fn text(
        &self,
        resp: Result<ureq::http::Response<ureq::Body>, ureq::Error>,
    ) -> anyhow::Result<String> {
        let mut resp = resp.map_err(|e| match e {
            ureq::Error::ConnectionFailed | ureq::Error::Io(_) => {
                anyhow!("cannot reach the daemon at {} ({e}); start it with `taskkeeper serve` or the app", self.base)
            }
            other => anyhow!("request to {} failed: {other}", self.base),
        })?;
        let status = resp.status();
        let text = resp
            .body_mut()
            .read_to_string()
            .context("reading the daemon's answer")?;
        if status.is_success() {
            return Ok(text);
        }
        match serde_json::from_str::<ErrorBody>(&text) {
            Ok(body) => Err(anyhow!("{}", body.error.message)),
            Err(_) => Err(anyhow!("the daemon answered {status}: {text}")),
        }
    }
}
