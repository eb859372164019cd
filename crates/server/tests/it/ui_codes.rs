//! The web UI's sign-in codes over real HTTP: the owner mints one at `POST /api/ui/codes`, a
//! page without a token trades it once at `POST /ui/session`; a spent, unknown or lapsed code
//! is refused in the daemon's error shape and changes nothing, and the exchange passes the
//! same `Host` and `Origin` checks as every route. A code asked for in a sign-in page is in a
//! 0600 file of a 0700 directory, which goes once the code is used, refused or lapsed, and
//! when the daemon stops or starts.

#[cfg(unix)]
use std::os::unix::fs::PermissionsExt as _;
#[cfg(unix)]
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use serde_json::{Value, json};
use taskkeeper_core::{Clock as _, ManualClock, SystemClock, Timestamp};
#[cfg(unix)]
use taskkeeper_server::http::ui_codes::PAGES_DIR;
use taskkeeper_server::http::ui_codes::{CODE_LIFETIME, MAX_OUTSTANDING};

use crate::support::{TOKEN, TestDaemon};

impl TestDaemon {
    /// A new code, minted with the owner token.
    fn mint(&self) -> String {
        let (status, body) = self.call("POST", "/api/ui/codes", Some(&json!({})));
        assert_eq!(status, 201, "{body}");
        body["code"].as_str().unwrap().to_owned()
    }

    /// `POST /ui/session` as the page sends it: JSON, no token, with `headers` besides.
    fn exchange_with(&self, host: &str, headers: &[(&str, &str)], code: &str) -> (u16, Value) {
        let mut all = vec![("Content-Type".to_owned(), "application/json".to_owned())];
        all.extend(
            headers
                .iter()
                .map(|(k, v)| ((*k).to_owned(), (*v).to_owned())),
        );
        let body = json!({ "code": code }).to_string();
        let (status, text) = self.raw("POST", "/ui/session", host, &all, &body);
        (
            status,
            serde_json::from_str(&text).unwrap_or(Value::String(text)),
        )
    }

    fn exchange(&self, code: &str) -> (u16, Value) {
        let origin = format!("http://{}", self.host());
        self.exchange_with(&self.host(), &[("Origin", &origin)], code)
    }
}

/// A refusal of a code: 401 in the daemon's error shape, saying what to do, and no token.
fn assert_refused(answer: &(u16, Value), why: &str) {
    let (status, body) = answer;
    assert_eq!(*status, 401, "{body}");
    assert_eq!(body["error"]["kind"], "unauthorized", "{body}");
    let message = body["error"]["message"].as_str().unwrap();
    assert!(message.contains(why), "{message}");
    assert!(message.contains("run `taskkeeper open` again"), "{message}");
    assert!(!body.to_string().contains(TOKEN), "{body}");
}

#[test]
fn a_code_signs_a_page_in_exactly_once() {
    let d = TestDaemon::start();
    let (status, minted) = d.call("POST", "/api/ui/codes", Some(&json!({})));
    assert_eq!(status, 201, "{minted}");
    let code = minted["code"].as_str().unwrap().to_owned();
    // At least 128 bits of randomness, and no trace of the token.
    assert!(
        code.len() >= 32 && code.bytes().all(|b| b.is_ascii_hexdigit()),
        "{code}"
    );
    assert!(!minted.to_string().contains(TOKEN));
    let expires = Timestamp::parse_rfc3339(minted["expiresAt"].as_str().unwrap()).unwrap();
    assert!(expires > SystemClock.now(), "{minted}");

    let other = d.mint();
    let (status, session) = d.exchange(&code);
    assert_eq!(status, 200, "{session}");
    assert_eq!(session, json!({ "token": TOKEN }));

    assert_refused(&d.exchange(&code), "already used");
    // The refusal spent nothing else: the other code still signs a page in.
    assert_eq!(d.exchange(&other), (200, json!({ "token": TOKEN })));
}

#[test]
fn an_unknown_code_is_refused_and_spends_nothing() {
    let d = TestDaemon::start();
    let code = d.mint();
    for guess in ["", "nope", &"0".repeat(64), &code.to_uppercase(), TOKEN] {
        assert_refused(&d.exchange(guess), "never issued");
    }
    assert_eq!(d.exchange(&code).0, 200);
}

#[test]
fn a_code_lapses_on_the_daemons_clock() {
    let clock = ManualClock::new(SystemClock.now());
    let d = TestDaemon::start_with_clock(Arc::new(clock.clone()));
    let (_, minted) = d.call("POST", "/api/ui/codes", Some(&json!({})));
    assert_eq!(
        minted["expiresAt"].as_str().unwrap(),
        clock.now().plus(CODE_LIFETIME).to_rfc3339(),
    );
    let (lapsing, last_moment) = (minted["code"].as_str().unwrap().to_owned(), d.mint());

    clock.advance(CODE_LIFETIME - Duration::from_millis(1));
    assert_eq!(d.exchange(&last_moment).0, 200);
    clock.advance(Duration::from_millis(1));
    assert_refused(&d.exchange(&lapsing), "expired");
    // Still worth nothing, whatever the clock does next.
    clock.set(Timestamp::from_millis(0));
    assert_refused(&d.exchange(&lapsing), "never issued");
}

#[test]
fn too_many_waiting_codes_are_refused_until_one_is_used_or_lapses() {
    let clock = ManualClock::new(SystemClock.now());
    let d = TestDaemon::start_with_clock(Arc::new(clock.clone()));
    let codes: Vec<String> = (0..MAX_OUTSTANDING).map(|_| d.mint()).collect();
    let (status, body) = d.call("POST", "/api/ui/codes", Some(&json!({})));
    assert_eq!(status, 409, "{body}");
    assert_eq!(body["error"]["kind"], "conflict", "{body}");
    let message = body["error"]["message"].as_str().unwrap();
    assert!(
        message.contains(&format!(
            "{MAX_OUTSTANDING} sign-in codes are already waiting"
        )),
        "{message}"
    );
    // The refusal took no place: one used code frees exactly one.
    assert_eq!(d.exchange(&codes[0]).0, 200);
    d.mint();
    assert_eq!(d.call("POST", "/api/ui/codes", Some(&json!({}))).0, 409);
    clock.advance(CODE_LIFETIME);
    for _ in 0..MAX_OUTSTANDING {
        d.mint();
    }
}

#[test]
fn the_exchange_passes_the_host_and_origin_checks_and_takes_only_json() {
    let d = TestDaemon::start();
    let code = d.mint();
    let own = d.host();
    for (host, origin) in [
        ("evil.example:80", None),
        (own.as_str(), Some("http://evil.example")),
        (own.as_str(), Some("null")),
    ] {
        let headers: Vec<(&str, &str)> = origin.iter().map(|o| ("Origin", *o)).collect();
        let (status, body) = d.exchange_with(host, &headers, &code);
        assert_eq!(status, 403, "{host} {origin:?}: {body}");
        assert_eq!(body["error"]["kind"], "forbidden", "{body}");
    }
    // A form a foreign page could post without a preflight is refused before any code is read.
    let form = d.raw(
        "POST",
        "/ui/session",
        &own,
        &[(
            "Content-Type".to_owned(),
            "application/x-www-form-urlencoded".to_owned(),
        )],
        &format!("code={code}"),
    );
    assert_eq!(form.0, 415, "{}", form.1);
    // None of the refusals spent the code.
    assert_eq!(d.exchange(&code), (200, json!({ "token": TOKEN })));
}

#[test]
fn minting_needs_the_owner_token_and_a_refusal_mints_nothing() {
    let d = TestDaemon::start();
    let (_, asker) = d.call("POST", "/api/askers", Some(&json!({"name": "planner"})));
    let asker = asker["token"].as_str().unwrap().to_owned();
    let json_type = ("Content-Type".to_owned(), "application/json".to_owned());
    for (auth, status) in [
        (None, 401),
        (Some("Bearer wrong".to_owned()), 401),
        (Some(format!("Bearer {asker}")), 403),
    ] {
        let mut headers = vec![json_type.clone()];
        headers.extend(auth.map(|a| ("Authorization".to_owned(), a)));
        for _ in 0..=MAX_OUTSTANDING {
            let (got, body) = d.raw("POST", "/api/ui/codes", &d.host(), &headers, "{}");
            assert_eq!(got, status, "{body}");
            assert!(!body.contains("\"code\""), "{body}");
        }
    }
    // Had any refusal made a code, the owner could not mint the full number now.
    for _ in 0..MAX_OUTSTANDING {
        d.mint();
    }
}

/// A minted page: its path, checked to be a private file in a private directory of the data
/// directory, and the address it sends the browser to.
#[cfg(unix)]
fn minted_page(d: &TestDaemon) -> (PathBuf, String) {
    let (status, minted) = d.call("POST", "/api/ui/codes", Some(&json!({"page": true})));
    assert_eq!(status, 201, "{minted}");
    let page = PathBuf::from(minted["page"].as_str().unwrap());
    assert_eq!(page.parent().unwrap(), d.data_dir.join(PAGES_DIR));
    let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode(&page), 0o600, "{}", page.display());
    assert_eq!(mode(page.parent().unwrap()), 0o700);
    let html = std::fs::read_to_string(&page).unwrap();
    let address = html
        .split("url=")
        .nth(1)
        .and_then(|rest| rest.split('"').next())
        .unwrap_or_else(|| panic!("no refresh address in {html}"))
        .to_owned();
    assert_eq!(
        address,
        format!(
            "http://{}/ui/#code={}",
            d.host(),
            minted["code"].as_str().unwrap()
        )
    );
    assert!(!html.contains(TOKEN));
    (page, address)
}

#[cfg(unix)]
fn code_of(address: &str) -> &str {
    address.split("#code=").nth(1).unwrap()
}

#[cfg(unix)]
#[test]
fn a_sign_in_page_is_private_and_gone_once_its_code_is_used_or_lapses() {
    let clock = ManualClock::new(SystemClock.now());
    let mut d = TestDaemon::start_with_clock(Arc::new(clock.clone()));
    let (used, address) = minted_page(&d);
    assert_eq!(d.exchange(code_of(&address)).0, 200);
    assert!(
        !used.exists(),
        "a used code's page stays: {}",
        used.display()
    );

    // A lapsed code's page goes when the code is refused, or at the next mint.
    let (refused, address) = minted_page(&d);
    clock.advance(CODE_LIFETIME);
    assert_refused(&d.exchange(code_of(&address)), "expired");
    assert!(!refused.exists(), "a refused code's page stays");
    let (lapsing, _) = minted_page(&d);
    clock.advance(CODE_LIFETIME);
    assert!(lapsing.exists());
    d.mint();
    assert!(!lapsing.exists(), "a lapsed code's page stays");

    // The daemon's stop removes what is left, and its start what a killed daemon left.
    let (left, _) = minted_page(&d);
    d.restart();
    assert!(!left.exists());
    let stray = d.data_dir.join(PAGES_DIR).join("open-stray.html");
    std::fs::write(&stray, "<!doctype html>").unwrap();
    d.restart();
    assert!(!stray.exists());
    let (_, address) = minted_page(&d);
    assert_eq!(d.exchange(code_of(&address)).0, 200);
}

/// A sign-in page that cannot be written is refused with what to do instead, and no code is
/// left waiting for it; so is a request with a field the daemon does not know.
#[cfg(unix)]
#[test]
fn a_page_that_cannot_be_written_or_a_request_that_cannot_be_read_mints_nothing() {
    let d = TestDaemon::start();
    let dir = d.data_dir.join(PAGES_DIR);
    std::fs::remove_dir(&dir).unwrap();
    std::fs::write(&dir, "in the way").unwrap();
    for _ in 0..=MAX_OUTSTANDING {
        // A request the daemon cannot read is refused before anything is minted, too.
        let (status, body) = d.call("POST", "/api/ui/codes", Some(&json!({"pages": true})));
        assert_eq!(status, 400, "{body}");
        assert!(
            body["error"]["message"].as_str().unwrap().contains("pages"),
            "{body}"
        );
        let (status, body) = d.call("POST", "/api/ui/codes", Some(&json!({"page": true})));
        assert_eq!(status, 500, "{body}");
        let message = body["error"]["message"].as_str().unwrap();
        assert!(
            message.contains("cannot write the sign-in page")
                && message.contains("taskkeeper open --print"),
            "{message}"
        );
        assert!(body.get("code").is_none(), "{body}");
    }
    for _ in 0..MAX_OUTSTANDING {
        d.mint();
    }
}
