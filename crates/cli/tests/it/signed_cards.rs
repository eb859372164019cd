//! Signed Agent Cards as an asker checks them, with the reference SDKs' own verifiers: the
//! Python `a2a-sdk`'s `create_signature_verifier` (`tests/interop/a2a_sdk_verify_card.py`) and
//! `@a2a-js/sdk`'s `verifyAgentCardSignature` (`tests/interop/js/a2a_js_verify_card.mjs`), each
//! fetching the cards and the JWK Set from a live `taskkeeper serve` on loopback and pinning
//! the thumbprint `taskkeeper asker add` printed. Each SDK verifies the machine's, the desk's
//! and the extended card, and refuses one changed by a character, a changed signature, an
//! unsigned card and another pin; after `taskkeeper card rotate-key` the old pin refuses every
//! card, and the new thumbprint (the one the command printed) verifies them.

use std::path::Path;
use std::process::Command;

use serde_json::json;

use crate::interop::{Worker, run_client, sdk_python};
use crate::network_asker::js_client;
use crate::support::{Served, TOKEN, ok, request, stderr, stdout};

fn python_script() -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/interop/a2a_sdk_verify_card.py")
}

/// Run both SDKs' verifiers against `served`, pinning `thumbprint`; `refused`: the cards must
/// not verify.
fn both_sdks(served: &Served, worker: &Worker<'_>, thumbprint: &str, refused: bool) {
    let python = sdk_python();
    let js = js_client().with_file_name("a2a_js_verify_card.mjs");
    let base = served.url();
    let args = [
        "--base",
        base.as_str(),
        "--desk",
        "web",
        "--token",
        TOKEN,
        "--thumbprint",
        thumbprint,
    ];
    for (what, mut command) in [
        ("the Python SDK's verifier", {
            let mut c = Command::new(&python);
            c.arg(python_script());
            c
        }),
        ("the JS SDK's verifier", {
            let mut c = Command::new("node");
            c.arg(&js);
            c
        }),
    ] {
        command.args(args);
        if refused {
            command.arg("--expect-fail");
        }
        let lines = run_client(command, served.port, worker, "web", what);
        let checks: Vec<&str> = lines.iter().filter_map(|l| l["check"].as_str()).collect();
        let must: &[&str] = if refused {
            &[
                "machine card is refused",
                "desk card is refused",
                "extended card is refused",
            ]
        } else {
            &[
                "machine card verifies",
                "desk card verifies",
                "extended card verifies",
                "a card changed by one character is refused",
                "a changed signature is refused",
                "an unsigned card is refused",
                "another pinned key refuses the card",
            ]
        };
        for m in must {
            assert!(
                checks.contains(m),
                "{what}: check {m:?} did not run: {checks:?}"
            );
        }
    }
}

/// The thumbprint after `label` on one of `text`'s lines.
fn after<'a>(text: &'a str, label: &str) -> &'a str {
    text.lines()
        .find_map(|l| l.split_once(label).map(|(_, rest)| rest.trim()))
        .unwrap_or_else(|| panic!("no {label:?} in: {text}"))
}

#[test]
fn both_sdks_verify_the_signed_cards_and_refuse_them_after_a_rotation() {
    let dir = tempfile::tempdir().unwrap();
    let served = Served::start(dir.path());
    let desk_dir = tempfile::tempdir().unwrap();
    let worker = Worker {
        desk_dir: desk_dir.path(),
        data_dir: dir.path(),
    };
    let desk = json!({"name": "web", "dir": desk_dir.path(), "agent": "generic"}).to_string();
    let (code, body) = request(served.port, "POST", "/api/desks", &desk).unwrap();
    assert_eq!(code, 201, "{body}");

    // The owner adds an asker: beside its token, the thumbprint to pin.
    let added = ok(served.cli(&["asker", "add", "planner"]));
    let pin = after(&stderr(&added), "(RFC 7638; the asker pins it):").to_owned();
    let shown = ok(served.cli(&["card", "key"]));
    assert_eq!(stdout(&shown).trim(), pin);
    both_sdks(&served, &worker, &pin, false);

    // One command makes a new key; the old pin takes nothing from then on.
    let rotated = ok(served.cli(&["card", "rotate-key"]));
    let new_pin = stdout(&rotated).trim().to_owned();
    assert!(
        !new_pin.is_empty() && new_pin != pin,
        "{new_pin} after {pin}"
    );
    both_sdks(&served, &worker, &pin, true);
    both_sdks(&served, &worker, &new_pin, false);
    let added = ok(served.cli(&["asker", "add", "reviewer"]));
    assert_eq!(
        after(&stderr(&added), "(RFC 7638; the asker pins it):"),
        new_pin
    );
}

#[test]
fn rotating_the_key_needs_the_running_daemon_and_says_so() {
    let dir = tempfile::tempdir().unwrap();
    // Nothing listens on this port: the daemon is not running.
    let out = Command::new(crate::support::bin())
        .args(["card", "rotate-key"])
        .env("TASKKEEPER_URL", "http://127.0.0.1:9")
        .env("TASKKEEPER_TOKEN", TOKEN)
        .env("TASKKEEPER_DATA_DIR", dir.path())
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = stderr(&out);
    assert!(err.contains("cannot reach the daemon"), "{err}");
    assert!(
        !dir.path().join("card-signing-key.pem").exists(),
        "no key was made behind the daemon's back"
    );
}
