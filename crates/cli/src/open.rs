//! `taskkeeper open`: the web UI of a daemon started with `taskkeeper serve --ui`, in the
//! default browser, signed in as the owner.
//!
//! The token goes in the address's fragment (`/ui/#token=...`). Browsers never send a
//! fragment to the server, so the token appears in no request line, log or `Referer`; the
//! page moves it to the tab's session storage and takes it out of the address bar. Before
//! opening anything, both halves are checked here, where a mistake is easiest to read: that
//! the daemon serves the UI and that the token is the owner's.

use std::process::Command;
use std::time::Duration;

use anyhow::{Context as _, anyhow, bail};

use crate::client::{Client, base_url, token_from_env};

pub fn open(print: bool) -> anyhow::Result<()> {
    let base = base_url();
    let token = token_from_env()?;
    check_serves_ui(&base)?;
    // Any owner call proves the token; the desk list is the smallest.
    Client::from_env()?
        .get::<serde_json::Value>("/api/desks")
        .context("the owner token was refused, so the page could not load anything")?;
    let url = format!("{base}/ui/#token={}", encode_fragment_value(&token));
    if print {
        println!("{url}");
        return Ok(());
    }
    launch(&url)?;
    println!("opened {base}/ui/ in your browser");
    Ok(())
}

/// `GET /ui/` needs no token; a daemon without `--ui` answers 404.
fn check_serves_ui(base: &str) -> anyhow::Result<()> {
    let agent = ureq::Agent::config_builder()
        .http_status_as_error(false)
        .timeout_global(Some(Duration::from_secs(10)))
        .build()
        .new_agent();
    let resp = agent.get(format!("{base}/ui/")).call().map_err(|e| {
        anyhow!(
            "no Taskkeeper daemon answers at {base} ({e}); start one with `taskkeeper serve --ui` (or set TASKKEEPER_URL)"
        )
    })?;
    match resp.status().as_u16() {
        200 => Ok(()),
        404 => bail!(
            "the daemon at {base} does not serve the web UI; restart it with `taskkeeper serve --ui`"
        ),
        status => bail!("the daemon at {base} answered HTTP {status} for /ui/"),
    }
}

/// Percent-encodes everything but RFC 3986's unreserved characters, so any token survives
/// `URLSearchParams` in the page unchanged (the generated ones are hex and pass as they are).
fn encode_fragment_value(value: &str) -> String {
    let mut out = String::with_capacity(value.len());
    for b in value.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~') {
            out.push(char::from(b));
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// Hands the address to the desktop's opener and waits for it (they return at once).
fn launch(url: &str) -> anyhow::Result<()> {
    let (program, mut command) = opener(url);
    let status = command.status().with_context(|| {
        format!(
            "cannot run {program} to open the browser; run `taskkeeper open --print` and open the address yourself"
        )
    })?;
    if !status.success() {
        bail!(
            "{program} could not open the browser ({status}); run `taskkeeper open --print` and open the address yourself"
        );
    }
    Ok(())
}

#[cfg(target_os = "macos")]
fn opener(url: &str) -> (&'static str, Command) {
    let mut c = Command::new("open");
    c.arg(url);
    ("open", c)
}

#[cfg(windows)]
fn opener(url: &str) -> (&'static str, Command) {
    // `start`'s first quoted argument is the window title; the empty one keeps the URL an URL.
    let mut c = Command::new("cmd");
    c.args(["/C", "start", "", url]);
    ("start", c)
}

#[cfg(not(any(target_os = "macos", windows)))]
fn opener(url: &str) -> (&'static str, Command) {
    let mut c = Command::new("xdg-open");
    c.arg(url);
    ("xdg-open", c)
}

#[cfg(test)]
mod tests {
    use super::encode_fragment_value;

    #[test]
    fn tokens_are_fragment_safe() {
        assert_eq!(encode_fragment_value("0a1b2c"), "0a1b2c");
        assert_eq!(encode_fragment_value("a b&c#d+é"), "a%20b%26c%23d%2B%C3%A9");
    }
}
