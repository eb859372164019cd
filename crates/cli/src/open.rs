//! `taskkeeper open`: the web UI of a daemon started with `taskkeeper serve --ui`, in the
//! default browser, signed in as the owner.
//!
//! The browser is started with what it opens as an argument, which every local user can read
//! (`/proc/PID/cmdline`, `ps`), so that argument holds no secret at all. This asks the daemon,
//! with the token, for a one-time sign-in code written into a sign-in page (`POST
//! /api/ui/codes` with `page`; the code works once, for 60 s): a small HTML file in the data
//! directory that only the owner can read, which sends the browser on to `/ui/#code=...`. The
//! browser is given the file's path; the page trades the code for the token at once (`POST
//! /ui/session`), keeps the token in the tab's session storage and takes the code out of the
//! address bar, and the daemon removes the file as the code is used (or lapses). The code is
//! in the fragment, which browsers never send, so it is in no request line, log or `Referer`.
//! `--print` prints the address itself instead, for pasting into a browser that is already
//! running (pasting puts nothing on a command line). Before anything, both halves are checked
//! here, where a mistake is easiest to read: that the daemon serves the UI and that the token
//! is the owner's.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use anyhow::{Context as _, anyhow, bail};
use taskkeeper_server::http::ui::{UiCodeRequest, UiCodeView};

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
        .post("/api/ui/codes", &UiCodeRequest { page: !print })
        .context("the daemon gave no sign-in code for the page")?;
    if print {
        say!("{}/ui/#code={}", base, encode_fragment_value(&minted.code));
        return Ok(());
    }
    let page = minted
        .page
        .map(PathBuf::from)
        .ok_or_else(|| anyhow!("the daemon wrote no sign-in page; run `taskkeeper open --print` and paste the address into your browser"))?;
    if !page.is_file() {
        bail!(
            "the daemon's sign-in page {} is not on this machine's disk as this user sees it (is the daemon another user's?); run `taskkeeper open --print` and paste the address into your browser",
            page.display()
        );
    }
    launch(&page)?;
    say!(
        "opened {}/ui/ in your browser through a sign-in page only you can read ({}); it works once, within a minute, and is removed then",
        base,
        page.display()
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

/// Hands the sign-in page to the desktop's opener and waits for it (they return at once).
fn launch(page: &Path) -> anyhow::Result<()> {
    let (program, mut command) = opener(page);
    let status = command.status().with_context(|| {
        format!(
            "cannot run {program} to open the browser; run `taskkeeper open --print` and paste the address into your browser"
        )
    })?;
    if !status.success() {
        bail!(
            "{program} could not open the browser ({status}); run `taskkeeper open --print` and paste the address into your browser"
        );
    }
    Ok(())
}

#[cfg(target_os = "macos")]
fn opener(page: &Path) -> (&'static str, Command) {
    let mut c = Command::new("open");
    c.arg(page);
    ("open", c)
}

#[cfg(windows)]
fn opener(page: &Path) -> (&'static str, Command) {
    // `start`'s first quoted argument is the window title; the empty one keeps the path a path.
    let mut c = Command::new("cmd");
    c.args(["/C", "start", ""]).arg(page);
    ("start", c)
}

#[cfg(not(any(target_os = "macos", windows)))]
fn opener(page: &Path) -> (&'static str, Command) {
    let mut c = Command::new("xdg-open");
    c.arg(page);
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
