//! `taskkeeper open`: the web UI of a daemon started with `taskkeeper serve --ui`, in the
//! default browser, signed in as the owner.
//!
//! The browser is started with the address as an argument, which every local user can read
//! (`/proc/PID/cmdline`, `ps`), so the address never holds the owner token. Instead this asks
//! the daemon, with the token, for a one-time sign-in code (`POST /api/ui/codes`, valid for
//! 60 s) and opens `/ui/#code=...`; the page trades the code for the token at once
//! (`POST /ui/session`), keeps the token in the tab's session storage and takes the code out
//! of the address bar. A code read off the command line after that is worth nothing. The code
//! is in the fragment, which browsers never send, so it is in no request line, log or
//! `Referer`. Before opening anything, both halves are checked here, where a mistake is
//! easiest to read: that the daemon serves the UI and that the token is the owner's.

use std::process::Command;
use std::time::Duration;

use anyhow::{Context as _, anyhow, bail};
use taskkeeper_server::http::ui::UiCodeView;

use crate::client::{Client, base_url};

use crate::out::say;

pub fn open(print: bool) -> anyhow::Result<()> {
    let base = base_url();
    check_serves_ui(&base)?;
    let client = Client::from_env()?;
    // Any owner call proves the token; the desk list is the smallest. Checked on its own so
    // a refused token is not confused with a refused code below.
    client
        .get::<serde_json::Value>("/api/desks")
        .context("the owner token was refused, so the page could not load anything")?;
    let minted: UiCodeView = client
        .post("/api/ui/codes", &serde_json::json!({}))
        .context("the daemon gave no sign-in code for the page")?;
    let url = format!("{base}/ui/#code={}", encode_fragment_value(&minted.code));
    if print {
        say!("{}", url);
        return Ok(());
    }
    launch(&url)?;
    say!(
        "opened {}/ui/ in your browser (its sign-in code works once, within a minute)",
        base
    );
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

/// Percent-encodes everything but RFC 3986's unreserved characters, so whatever the daemon
/// answers survives `URLSearchParams` in the page unchanged (its codes are hex and pass as
/// they are).
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
    fn codes_are_fragment_safe() {
        assert_eq!(encode_fragment_value("0a1b2c"), "0a1b2c");
        assert_eq!(encode_fragment_value("a b&c#d+é"), "a%20b%26c%23d%2B%C3%A9");
    }
}
