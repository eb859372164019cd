//! An asker on another machine (issue 26): the daemon (`taskkeeper serve --listen`) in one
//! network namespace and the asker in another, joined by a veth pair on 10.200.26.0/30 (a
//! range that exists only inside the two namespaces this test makes, and removes in `Drop`).
//! The asker has what the owner hands it, the desk's URL, its token and the certificate's
//! fingerprint, all printed by `taskkeeper asker add`, and reaches the desk over TLS, pinning
//! the self-signed certificate, through the official SDK clients: the Python `a2a-sdk` (the
//! reference client's checks, v1.0 over JSON-RPC and HTTP+JSON: card, extended card, send,
//! get, list, cancel, stream, subscribe, blocking sends, file parts and artifacts fetched at
//! the public URL, and a webhook) and the JavaScript `@a2a-js/sdk` (card, send, get, cancel, a
//! stream to COMPLETED, a subscription, ListTasks with and without filters, and a webhook, over
//! JSON-RPC, HTTP+JSON and gRPC, which is HTTP/2 over the same TLS). Each SDK's webhook is an `https://`
//! receiver in the asker's namespace, with a certificate from a CA the test makes, which the
//! owner trusts (`push.extra_roots`) and whose range the owner allows
//! (`push.allow_private_targets`): the pushes cross the link over TLS. From the same namespace the owner API, `/hooks`, `/mcp` and
//! `/ui` do not answer on the network listener, and the loopback listener is not reached at
//! all; a client that pinned another certificate refuses this one.
//!
//! The test plays the worker through the owner API on the daemon's loopback, inside the
//! daemon's namespace: the test runs itself again in there (`ip netns exec`), after making
//! the namespaces and installing the SDKs (PyPI, npm) from outside, where the network is.
//! Needs root (`ip netns`), as CI runs; no `ip`, no namespace, no Node or no registry is a
//! failure that says so, never a pass.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use serde_json::{Value, json};

use crate::interop::{Worker, run_client, sdk_python, wait_deadline};
use crate::support::{Served, request, stdout};

/// Set in the copy of the test that runs inside the daemon's namespace: the asker's
/// namespace's name.
const INSIDE: &str = "TASKKEEPER_TEST_ASKER_NETNS";
/// The daemon's and the asker's ends of the link.
const DAEMON_IP: &str = "10.200.26.1";
const ASKER_IP: &str = "10.200.26.2";
/// The network listener's port inside the daemon's namespace (nothing else is there).
const PORT: u16 = 7718;

/// The checks `a2a_js_client.mjs` runs, in order, with a webhook receiver (`all` last).
pub(crate) const JS_CHECKS: [&str; 9] = [
    "card",
    "send",
    "get",
    "cancel",
    "stream",
    "resubscribe",
    "list",
    "push",
    "all",
];

fn js_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/interop/js")
}

/// `tests/interop/js` with its locked packages, installed when missing or older than the
/// lock file (`make test`'s npm step does the same first).
pub(crate) fn js_client() -> PathBuf {
    let dir = js_dir();
    let installed = dir.join("node_modules/.package-lock.json");
    let stale = match (
        std::fs::metadata(&installed).and_then(|m| m.modified()),
        std::fs::metadata(dir.join("package-lock.json")).and_then(|m| m.modified()),
    ) {
        (Ok(have), Ok(lock)) => have < lock,
        _ => true,
    };
    if stale {
        let mut npm = Command::new("npm")
            .args(["ci", "--no-audit", "--no-fund", "--loglevel=error"])
            .current_dir(&dir)
            .stdin(Stdio::null())
            .spawn()
            .unwrap_or_else(|e| panic!("cannot run npm ({e}); this test needs Node and npm"));
        let status = wait_deadline(&mut npm, Duration::from_secs(600), "npm ci");
        assert!(
            status.success(),
            "npm ci in {} failed ({status}): the JS SDK's test needs the npm registry",
            dir.display()
        );
    }
    dir.join("a2a_js_client.mjs")
}

fn ip(args: &[&str]) {
    let out = Command::new("ip")
        .args(args)
        .output()
        .unwrap_or_else(|e| panic!("cannot run ip ({e}); this test needs iproute2"));
    assert!(
        out.status.success(),
        "ip {}: {} (making network namespaces needs root)",
        args.join(" "),
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Two network namespaces joined by a veth pair, removed (with the pair) when dropped.
struct Namespaces {
    daemon: String,
    asker: String,
}

impl Namespaces {
    fn make() -> Self {
        let id = std::process::id();
        let made = Namespaces {
            daemon: format!("tk-daemon-{id}"),
            asker: format!("tk-asker-{id}"),
        };
        let (d, a) = (format!("tkd{id}"), format!("tka{id}"));
        ip(&["netns", "add", &made.daemon]);
        ip(&["netns", "add", &made.asker]);
        ip(&["link", "add", &d, "type", "veth", "peer", "name", &a]);
        ip(&["link", "set", &d, "netns", &made.daemon]);
        ip(&["link", "set", &a, "netns", &made.asker]);
        for (ns, dev, addr) in [(&made.daemon, &d, DAEMON_IP), (&made.asker, &a, ASKER_IP)] {
            ip(&["-n", ns, "addr", "add", &format!("{addr}/30"), "dev", dev]);
            ip(&["-n", ns, "link", "set", dev, "up"]);
            ip(&["-n", ns, "link", "set", "lo", "up"]);
        }
        made
    }
}

impl Drop for Namespaces {
    fn drop(&mut self) {
        // Deleting a namespace deletes the veth end inside it, and with it the pair.
        for ns in [&self.daemon, &self.asker] {
            let _ = Command::new("ip").args(["netns", "del", ns]).output();
        }
    }
}

#[test]
fn an_asker_on_another_machine_reaches_a_desk_over_tls_through_the_official_sdks() {
    let Ok(asker_ns) = std::env::var(INSIDE) else {
        // Outside: install the SDKs while the network is there, make the namespaces, and run
        // this test again inside the daemon's.
        sdk_python();
        js_client();
        let namespaces = Namespaces::make();
        let me = std::env::current_exe().unwrap();
        let name = "network_asker::an_asker_on_another_machine_reaches_a_desk_over_tls_through_the_official_sdks";
        let out = Command::new("ip")
            .args(["netns", "exec", &namespaces.daemon])
            .arg(me)
            .args(["--exact", name, "--nocapture", "--test-threads=1"])
            .env(INSIDE, &namespaces.asker)
            .stdin(Stdio::null())
            .output()
            .unwrap();
        let (o, e) = (stdout(&out), String::from_utf8_lossy(&out.stderr));
        eprintln!("{e}");
        assert!(
            out.status.success() && o.contains("1 passed"),
            "the run inside the namespaces failed:\n{o}\n{e}"
        );
        return;
    };
    let in_asker = |program: &Path| {
        let mut c = Command::new("ip");
        c.args(["netns", "exec", &asker_ns]).arg(program);
        c
    };

    let data = tempfile::tempdir().unwrap();
    let listen = format!("{DAEMON_IP}:{PORT}");
    let served = Served::start_with(
        data.path(),
        &[
            std::ffi::OsStr::new("--listen"),
            std::ffi::OsStr::new(&listen),
        ],
    );
    let desk_dir = tempfile::tempdir().unwrap();
    let desk = json!({"name": "web", "dir": desk_dir.path(), "agent": "generic"}).to_string();
    let (code, body) = request(served.port, "POST", "/api/desks", &desk).unwrap();
    assert_eq!(code, 201, "{body}");

    // What the owner hands the asker: `asker add` prints the token, the URL and the
    // certificate's fingerprint.
    let added = served.cli(&["asker", "add", "far"]);
    assert!(added.status.success(), "{added:?}");
    let token = stdout(&added).trim().to_owned();
    let said = String::from_utf8_lossy(&added.stderr).into_owned();
    let url = format!("https://{listen}/a2a/web");
    assert!(
        said.contains(&format!("https://{listen}/a2a/<desk>")),
        "{said}"
    );
    let pin = said
        .lines()
        .find_map(|l| l.split("(the asker pins it): ").nth(1))
        .unwrap_or_else(|| panic!("asker add printed no fingerprint: {said}"))
        .trim()
        .to_owned();
    let worker = Worker {
        desk_dir: desk_dir.path(),
        data_dir: data.path(),
    };

    // The asker's webhook: https:// on its own address, with a certificate from its CA, which
    // the owner trusts; the asker's address is in 10.0.0.0/8, which the owner allows.
    let webhook = tempfile::tempdir().unwrap();
    let (ca, cert, key) = webhook_certificate(webhook.path());
    for (setting, value) in [
        ("push.extra_roots", ca.to_str().unwrap()),
        ("push.allow_private_targets", "true"),
    ] {
        let set = served.cli(&["settings", "set", setting, value]);
        assert!(set.status.success(), "{set:?}");
    }
    let webhook_args = [
        "--webhook-host",
        ASKER_IP,
        "--webhook-cert",
        cert.to_str().unwrap(),
        "--webhook-key",
        key.to_str().unwrap(),
    ];

    // The reference Python SDK, in the asker's namespace.
    for binding in ["jsonrpc", "http+json"] {
        let mut python = in_asker(&sdk_python());
        python
            .arg(crate::interop::script())
            .args(["--url", &url, "--token", &token, "--version", "1.0"])
            .args(["--binding", binding, "--pin", &pin])
            .args(webhook_args);
        let lines = run_client(
            python,
            served.port,
            &worker,
            "web",
            &format!("the Python SDK's {binding} client over TLS"),
        );
        let checks: Vec<&str> = lines.iter().filter_map(|l| l["check"].as_str()).collect();
        for must in [
            "card",
            "extended-card",
            "send-nonblocking",
            "get-task",
            "cancel",
            "stream",
            "subscribe-cancel",
            "blocking-completed",
            "file-parts-artifacts",
            "push-config",
        ] {
            assert!(
                checks.contains(&must),
                "{binding}: {must} did not run: {checks:?}"
            );
        }
        let pushed = lines.iter().find(|l| l["check"] == "push-config").unwrap();
        assert_eq!(pushed["scheme"], "https", "{pushed}");
    }

    // The JavaScript SDK, in the asker's namespace.
    let node = which("node");
    for binding in ["JSONRPC", "HTTP+JSON", "GRPC"] {
        let mut js = in_asker(&node);
        js.arg(js_dir().join("a2a_js_client.mjs"))
            .args(["--url", &url, "--token", &token, "--pin", &pin])
            .args(["--binding", binding])
            .args(webhook_args);
        let lines = run_client(
            js,
            served.port,
            &worker,
            "web",
            &format!("the JS SDK's {binding} client over TLS"),
        );
        let checks: Vec<&str> = lines.iter().filter_map(|l| l["check"].as_str()).collect();
        assert_eq!(checks, JS_CHECKS, "{binding}");
    }

    // A client that pinned another certificate refuses this one.
    let wrong = format!("00{}", &pin[2..]);
    let refused = in_asker(&node)
        .arg(js_dir().join("a2a_js_client.mjs"))
        .args(["--url", &url, "--token", &token, "--pin", &wrong])
        .output()
        .unwrap();
    assert!(!refused.status.success());
    let why = String::from_utf8_lossy(&refused.stderr);
    assert!(why.contains("not the pinned"), "{why}");

    // From the asker's machine: nothing of the owner's, the sessions' or the browser's answers
    // on the network listener, with any token; the loopback listener is not there at all.
    let curl = which("curl");
    let owner = format!("Authorization: Bearer {}", crate::support::TOKEN);
    let asker = format!("Authorization: Bearer {token}");
    for path in [
        "/api/tasks",
        "/api/askers",
        "/hooks/claude-code",
        "/mcp",
        "/ui/",
        "/healthz",
    ] {
        for auth in [&owner, &asker] {
            let out = in_asker(&curl)
                .args(["-sk", "-o", "/dev/null", "-w", "%{http_code}", "-H", auth])
                .args([
                    "-X",
                    "POST",
                    "-H",
                    "Content-Type: application/json",
                    "-d",
                    "{}",
                ])
                .arg(format!("https://{listen}{path}"))
                .output()
                .unwrap();
            let code = stdout(&out);
            assert!(
                code == "404" || code == "403",
                "{path} answered {code} on the network listener"
            );
        }
    }
    let loopback = in_asker(&curl)
        .args([
            "-s",
            "-o",
            "/dev/null",
            "-w",
            "%{http_code}",
            "--max-time",
            "5",
        ])
        .arg(format!("http://{DAEMON_IP}:{}/healthz", served.port))
        .output()
        .unwrap();
    assert!(
        !loopback.status.success(),
        "the loopback listener answered from the asker's namespace: {}",
        stdout(&loopback)
    );
    let card: Value = serde_json::from_str(&stdout(
        &in_asker(&curl)
            .args([
                "-sk",
                &format!("https://{listen}/.well-known/agent-card.json"),
            ])
            .output()
            .unwrap(),
    ))
    .unwrap();
    assert_eq!(
        card["supportedInterfaces"][0]["url"],
        format!("https://{listen}/a2a")
    );
    drop(served);
}

/// A CA (`ca.pem`) and, signed by it, the asker's webhook certificate for its address
/// (`webhook.pem`, `webhook-key.pem`), written in `dir`: the paths, in that order.
fn webhook_certificate(dir: &Path) -> (PathBuf, PathBuf, PathBuf) {
    use rcgen::{BasicConstraints, CertificateParams, IsCa, Issuer, KeyPair};
    let ca_key = KeyPair::generate().unwrap();
    let mut ca_params = CertificateParams::new(Vec::<String>::new()).unwrap();
    ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    let ca = ca_params.self_signed(&ca_key).unwrap();
    let issuer = Issuer::new(ca_params, ca_key);
    let key = KeyPair::generate().unwrap();
    let cert = CertificateParams::new(vec![ASKER_IP.to_owned()])
        .unwrap()
        .signed_by(&key, &issuer)
        .unwrap();
    let paths = (
        dir.join("ca.pem"),
        dir.join("webhook.pem"),
        dir.join("webhook-key.pem"),
    );
    std::fs::write(&paths.0, ca.pem()).unwrap();
    std::fs::write(&paths.1, cert.pem()).unwrap();
    std::fs::write(&paths.2, key.serialize_pem()).unwrap();
    paths
}

/// A program on the PATH, by name.
pub(crate) fn which(name: &str) -> PathBuf {
    std::env::var_os("PATH")
        .and_then(|paths| {
            std::env::split_paths(&paths)
                .map(|p| p.join(name))
                .find(|p| p.is_file())
        })
        .unwrap_or_else(|| panic!("{name} is not on the PATH; this test needs it"))
}
