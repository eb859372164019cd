//! Push notifications to `https://` webhooks (issue 26): a real TLS webhook in the test with a
//! certificate from a CA the test makes (an owner's own CA, as `push.extra_roots` takes it).
//! The push arrives when that CA is trusted, and not when nothing trusts it, or when the roots
//! file is missing (each failure says why and the push is retried, to arrive once the owner
//! fixes the setting); the target rules hold for `https://` as for `http://`, on the address
//! each push connects to; and a name that does not resolve when the webhook is set is taken
//! and judged when a push connects, as the conformance kit's `https://example.com/…` webhooks
//! need on a machine that resolves nothing.

use std::path::Path;
use std::sync::Arc;

use serde_json::json;

use crate::push::{Webhook, call, send, task_id, worker};
use crate::push_targets::{assert_refused, create};
use crate::support::{TOKEN, TestDaemon, until};

const V1: Option<&str> = Some("1.0");

/// A CA and, signed by it, a certificate for `localhost` and 127.0.0.1.
struct Pki {
    ca_pem: String,
    server: Arc<rustls::ServerConfig>,
}

impl Pki {
    fn new() -> Self {
        use rcgen::{BasicConstraints, CertificateParams, IsCa, Issuer, KeyPair};
        let ca_key = KeyPair::generate().unwrap();
        let mut ca_params = CertificateParams::new(Vec::<String>::new()).unwrap();
        ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        let ca = ca_params.self_signed(&ca_key).unwrap();
        let issuer = Issuer::new(ca_params, ca_key);
        let leaf_key = KeyPair::generate().unwrap();
        let leaf = CertificateParams::new(vec!["localhost".to_owned(), "127.0.0.1".to_owned()])
            .unwrap()
            .signed_by(&leaf_key, &issuer)
            .unwrap();
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let server = rustls::ServerConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .unwrap()
            .with_no_client_auth()
            .with_single_cert(
                vec![leaf.der().clone(), ca.der().clone()],
                rustls::pki_types::PrivateKeyDer::Pkcs8(leaf_key.serialize_der().into()),
            )
            .unwrap();
        Self {
            ca_pem: ca.pem(),
            server: Arc::new(server),
        }
    }

    /// The CA written where the owner keeps it.
    fn ca_file(&self, dir: &Path) -> String {
        let path = dir.join("my-ca.pem");
        std::fs::write(&path, &self.ca_pem).unwrap();
        path.to_str().unwrap().to_owned()
    }
}

/// A daemon with a desk `web` whose pushes are retried every second, and this machine allowed
/// as a target (the webhook runs here).
fn daemon() -> TestDaemon {
    let d = TestDaemon::start();
    d.with_desk("web");
    d.set_setting("push.retry_first", "1s");
    d.set_setting("push.retry_max", "1s");
    d.set_setting("push.allow_loopback_targets", "true");
    d
}

/// An https:// webhook whose CA the owner of `d` trusts (`push.extra_roots`, in the folder
/// returned, which must live as long as the webhook is used).
fn trusted_webhook(d: &TestDaemon) -> (Webhook, tempfile::TempDir) {
    let pki = Pki::new();
    let dir = tempfile::tempdir().unwrap();
    d.set_setting("push.extra_roots", &pki.ca_file(dir.path()));
    (Webhook::start_tls(Arc::clone(&pki.server)), dir)
}

/// The errors of the pushes tried so far, once one holds `says`.
fn push_error(d: &TestDaemon, says: &str) -> String {
    until(&format!("a push error saying {says:?}"), || {
        d.daemon()
            .store()
            .push_errors()
            .unwrap()
            .into_iter()
            .find(|e| e.contains(says))
    })
}

#[test]
fn an_https_webhook_signed_by_the_owners_own_ca_gets_every_push_with_its_credentials() {
    let d = daemon();
    let (hook, _roots) = trusted_webhook(&d);
    let url = format!("https://localhost:{}/tls", hook.port);
    let id = task_id(&d.rpc(
        "/a2a/web",
        TOKEN,
        V1,
        &send(
            "m-1",
            Some(json!({"url": url, "token": "tok-1",
                        "authentication": {"scheme": "Bearer", "credentials": "s3cret"}})),
        ),
    ));
    let first = hook.delivered("/tls", 1);
    assert_eq!(first[0].body["task"]["id"], id.as_str(), "{:?}", first[0]);
    assert_eq!(
        first[0].headers.get("authorization").map(String::as_str),
        Some("Bearer s3cret")
    );
    assert_eq!(
        first[0]
            .headers
            .get("x-a2a-notification-token")
            .map(String::as_str),
        Some("tok-1")
    );
    worker(&d, &id, "blocked", "Which flag name?");
    let hits = hook.delivered("/tls", 2);
    assert_eq!(
        hits[1].body["statusUpdate"]["status"]["state"],
        "TASK_STATE_INPUT_REQUIRED"
    );
}

#[test]
fn an_https_webhook_nothing_trusts_gets_nothing_until_the_owner_names_its_ca() {
    let d = daemon();
    let pki = Pki::new();
    let hook = Webhook::start_tls(Arc::clone(&pki.server));
    let id = task_id(&d.rpc(
        "/a2a/web",
        TOKEN,
        V1,
        &send(
            "m-1",
            Some(json!({"url": format!("https://127.0.0.1:{}/untrusted", hook.port)})),
        ),
    ));
    // The system's roots do not know the test's CA: the handshake fails, nothing is posted.
    let error = push_error(&d, "certificate");
    assert!(error.contains("UnknownIssuer"), "{error}");
    assert!(hook.hits("/untrusted").is_empty());

    // A roots file that is not there says so, names the setting, and keeps the push queued.
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("gone.pem");
    d.set_setting("push.extra_roots", missing.to_str().unwrap());
    let error = push_error(&d, "push.extra_roots");
    assert!(
        error.contains("gone.pem") && error.contains("give a PEM file of CA certificates"),
        "{error}"
    );
    // A file with no certificate in it likewise.
    std::fs::write(&missing, "not a certificate\n").unwrap();
    push_error(&d, "it holds no certificate");
    assert!(hook.hits("/untrusted").is_empty());

    // The owner puts the CA there: the file is read again, and the queued push arrives.
    std::fs::write(&missing, &pki.ca_pem).unwrap();
    let hits = hook.delivered("/untrusted", 1);
    assert_eq!(hits[0].body["task"]["id"], id.as_str());
}

#[test]
fn an_https_webhook_is_held_to_the_same_targets_as_http() {
    let d = daemon();
    let (hook, _roots) = trusted_webhook(&d);
    let id = task_id(&d.rpc("/a2a/web", TOKEN, V1, &send("m-1", None)));
    for (url, says) in [
        ("https://10.1.2.3/hook", "private (10.0.0.0/8)"),
        (
            "https://[::ffff:192.168.0.9]:8443/",
            "private (192.168.0.0/16)",
        ),
        ("https://169.254.169.254/latest", "link-local"),
    ] {
        assert_refused(&d, &id, url, &[says, "push.allow_private_targets"]);
    }
    // Taken while this machine is allowed; refused when the push connects once it is not,
    // on the address `localhost` resolves to then.
    let v = create(&d, &id, &format!("https://localhost:{}/named", hook.port));
    assert!(v["result"].is_object(), "{v}");
    hook.delivered("/named", 1);
    d.set_setting("push.allow_loopback_targets", "false");
    worker(&d, &id, "blocked", "Which flag name?");
    let error = push_error(&d, "localhost resolves to");
    assert!(error.contains("push.allow_loopback_targets"), "{error}");
    assert_eq!(
        hook.hits("/named").len(),
        1,
        "only the push before the refusal"
    );
}

#[test]
fn a_webhook_whose_name_does_not_resolve_yet_is_taken_and_judged_when_a_push_connects() {
    let d = daemon();
    // `.invalid` never resolves (RFC 6761), here or anywhere.
    let url = "https://hooks.example.invalid/a2a?task=1";
    let id = task_id(&d.rpc("/a2a/web", TOKEN, V1, &send("m-1", None)));
    let v = d.rpc(
        "/a2a/web",
        TOKEN,
        V1,
        &call(
            "CreateTaskPushNotificationConfig",
            json!({"taskId": id, "url": url}),
        ),
    );
    assert_eq!(v["result"]["url"], url, "{v}");
    let got = d.rpc(
        "/a2a/web",
        TOKEN,
        V1,
        &call(
            "GetTaskPushNotificationConfig",
            json!({"taskId": id, "id": v["result"]["id"]}),
        ),
    );
    assert_eq!(got["result"]["url"], url, "{got}");
    // Its push is tried, fails on the name, and stays queued for the next try.
    let error = push_error(&d, "hooks.example.invalid");
    assert!(
        error.contains("dns error") || error.contains("resolve"),
        "{error}"
    );
    assert!(d.daemon().store().push_queued().unwrap() >= 1);
}
