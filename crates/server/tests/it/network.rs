//! The listener for askers on other machines (ARCHITECTURE.md, "Who may call which route" and
//! the network listener's invariants): off until the owner turns it on (flags, or the
//! settings, which it follows); TLS three ways (a self-signed certificate made once, 0600,
//! whose fingerprint the card and `asker add` name; the owner's files, read again when they
//! change; a proxy in front, whose `X-Forwarded-*` is believed only from the listed
//! addresses); plain HTTP beyond loopback only with the owner's word; cards that name the
//! public URL; and each refusal of the front for strangers: a foreign Host or Origin, the
//! owner's and the sessions' tokens, a wrong token and the wait after it, the requests and
//! streams per minute, and the client too slow with its handshake, headers or body. The
//! policy runs on the daemon's injected clock; the socket timeouts are real I/O.

use std::io::{Read as _, Write as _};
use std::net::{SocketAddr, TcpStream};
use std::sync::Arc;
use std::time::Duration;

use serde_json::{Value, json};
use taskkeeper_core::{ManualClock, Timestamp};
use taskkeeper_server::{Daemon, DaemonConfig, NetworkState, NetworkTimeouts};

use crate::support::{Answer, Pinned, TOKEN, TestDaemon, network, until};

const LISTEN: (&str, &str) = ("network.listen", "127.0.0.1:0");

fn self_signed(change: impl FnOnce(&mut DaemonConfig)) -> TestDaemon {
    TestDaemon::start_configured(|c| {
        c.network = Some(network(&[LISTEN]));
        change(c);
    })
}

/// The asker's side of a self-signed listener: a client that pinned its certificate.
fn asker_client(d: &TestDaemon) -> Pinned {
    Pinned::new(&[&d.self_signed_pem()])
}

fn get(d: &TestDaemon, path: &str, headers: &[(&str, &str)]) -> Answer {
    asker_client(d).exchange(d.network_addr(), "127.0.0.1", "GET", path, headers, "")
}

fn rpc(d: &TestDaemon, path: &str, token: &str, body: &Value) -> Answer {
    let auth = format!("Bearer {token}");
    asker_client(d).exchange(
        d.network_addr(),
        "127.0.0.1",
        "POST",
        path,
        &[
            ("Authorization", &auth),
            ("Content-Type", "application/json"),
            ("A2A-Version", "1.0"),
        ],
        &body.to_string(),
    )
}

fn send(text: &str) -> Value {
    json!({"jsonrpc": "2.0", "id": 1, "method": "SendMessage", "params": {
        "message": {"messageId": format!("m-{text}"), "role": "ROLE_USER", "parts": [{"text": text}]},
        "configuration": {"returnImmediately": true}}})
}

#[cfg(unix)]
fn mode(path: &std::path::Path) -> u32 {
    use std::os::unix::fs::PermissionsExt as _;
    std::fs::metadata(path).unwrap().permissions().mode() & 0o777
}

#[test]
fn the_network_listener_is_off_until_the_owner_turns_it_on_and_follows_the_settings() {
    let d = TestDaemon::start();
    d.with_desk("web");
    assert_eq!(d.daemon().network().state, NetworkState::Off);
    let (code, body) = d.call("GET", "/api/network", None);
    assert_eq!((code, body["state"].as_str()), (200, Some("off")), "{body}");
    assert!(!d.data_dir.join("network-cert.pem").exists());

    // The window's Settings: turned on, it listens; the card names its URL.
    let (code, body) = d.call(
        "PUT",
        "/api/settings",
        Some(&json!({"network.listen": "127.0.0.1:0"})),
    );
    assert_eq!(code, 200, "{body}");
    until("the listener to start", || {
        (d.daemon().network().state == NetworkState::Listening).then_some(())
    });
    let addr = d.network_addr();
    let card = get(&d, "/a2a/web/.well-known/agent-card.json", &[]);
    assert_eq!(card.status, 200, "{}", card.body);
    let (code, body) = d.call("GET", "/api/network", None);
    assert_eq!(code, 200);
    assert_eq!(body["url"], format!("https://{addr}"), "{body}");
    assert_eq!(body["tls"], "self-signed");

    // A setting it cannot run with: it stops and says why.
    let (code, _) = d.call(
        "PUT",
        "/api/settings",
        Some(&json!({"network.tls": "files"})),
    );
    assert_eq!(code, 200);
    until("the listener to fail", || {
        (d.daemon().network().state == NetworkState::Failed).then_some(())
    });
    let (_, body) = d.call("GET", "/api/network", None);
    assert!(
        body["error"]
            .as_str()
            .unwrap()
            .contains("network.cert_file"),
        "{body}"
    );
    assert!(
        TcpStream::connect(addr).is_err(),
        "nothing listens any more"
    );

    // Off again.
    d.call(
        "PUT",
        "/api/settings",
        Some(&json!({"network.tls": "self-signed", "network.listen": "off"})),
    );
    until("the listener to be off", || {
        (d.daemon().network().state == NetworkState::Off).then_some(())
    });
}

#[test]
fn a_self_signed_certificate_is_made_once_kept_private_and_named_by_the_card_and_asker_add() {
    let mut d = self_signed(|_| {});
    d.with_desk("web");
    let status = d.daemon().network();
    let fingerprint = status.certificate_sha256().unwrap();
    let addr = d.network_addr();
    #[cfg(unix)]
    for file in ["network-cert.pem", "network-key.pem", "network-cert.names"] {
        assert_eq!(mode(&d.data_dir.join(file)), 0o600, "{file}");
    }

    // The asker pinned it: the same certificate is served, and the card names it.
    let card = get(&d, "/a2a/web/.well-known/agent-card.json", &[]);
    assert_eq!(card.status, 200, "{}", card.body);
    assert_eq!(card.fingerprint, fingerprint);
    let card = card.json();
    for interface in card["supportedInterfaces"].as_array().unwrap() {
        // gRPC's target is `host:port`, over the same TLS (grpc.rs).
        let want = match interface["protocolBinding"].as_str() {
            Some("GRPC") => addr.to_string(),
            _ => format!("https://{addr}/a2a/web"),
        };
        assert_eq!(interface["url"], want, "{card}");
    }
    assert_eq!(card["url"], format!("https://{addr}/a2a/web"));
    assert!(card["securitySchemes"]["bearer"].is_object(), "{card}");
    let params = &card["capabilities"]["extensions"][0]["params"];
    assert_eq!(params["tlsCertificateSha256"], fingerprint, "{card}");
    let machine = get(&d, "/.well-known/agent-card.json", &[]).json();
    assert_eq!(
        machine["supportedInterfaces"][0]["url"],
        format!("https://{addr}/a2a")
    );

    // On loopback the card still names loopback, and no certificate.
    let (code, local) = d.call("GET", "/a2a/web/.well-known/agent-card.json", None);
    assert_eq!(code, 200);
    assert_eq!(
        local["supportedInterfaces"][0]["url"],
        format!("http://{}/a2a/web", d.host())
    );
    assert!(
        local["capabilities"]["extensions"][0]["params"]
            .get("tlsCertificateSha256")
            .is_none()
    );

    // What `asker add` prints beside the token.
    let (code, added) = d.call("POST", "/api/askers", Some(&json!({"name": "far"})));
    assert_eq!(code, 201, "{added}");
    assert_eq!(added["network"]["certificateSha256"], fingerprint);
    assert_eq!(added["network"]["url"], format!("https://{addr}"));
    let token = added["token"].as_str().unwrap().to_owned();

    // The extended card needs the asker's token, as on loopback.
    let extended = json!({"jsonrpc": "2.0", "id": 1, "method": "GetExtendedAgentCard"});
    let refused = asker_client(&d).exchange(
        addr,
        "127.0.0.1",
        "POST",
        "/a2a/web",
        &[("Content-Type", "application/json"), ("A2A-Version", "1.0")],
        &extended.to_string(),
    );
    assert_eq!(refused.status, 401, "{}", refused.body);
    let answer = rpc(&d, "/a2a/web", &token, &extended).json();
    assert_eq!(
        answer["result"]["supportedInterfaces"][0]["url"],
        format!("https://{addr}/a2a/web"),
        "{answer}"
    );
    assert!(answer["result"].to_string().contains("working in /tmp"));

    // Made once: a restart serves the same certificate.
    d.restart_configured(|c| c.network = Some(network(&[LISTEN])));
    assert_eq!(
        d.daemon().network().certificate_sha256(),
        Some(fingerprint.clone())
    );
    assert_eq!(
        get(&d, "/.well-known/agent-card.json", &[]).fingerprint,
        fingerprint
    );
}

/// A certificate and key for 127.0.0.1, as PEM, signed by nobody (the test trusts it).
fn certificate() -> (String, String) {
    let made = rcgen::generate_simple_self_signed(vec!["127.0.0.1".to_owned()]).unwrap();
    (made.cert.pem(), made.signing_key.serialize_pem())
}

#[test]
fn the_owners_certificate_is_served_and_read_again_when_its_files_change() {
    let dir = tempfile::tempdir().unwrap();
    let (cert, key) = (dir.path().join("cert.pem"), dir.path().join("key.pem"));
    let (first, first_key) = certificate();
    let (renewed, renewed_key) = certificate();
    std::fs::write(&cert, &first).unwrap();
    std::fs::write(&key, &first_key).unwrap();
    let files = network(&[
        LISTEN,
        ("network.tls", "files"),
        ("network.cert_file", cert.to_str().unwrap()),
        ("network.key_file", key.to_str().unwrap()),
    ]);
    let d = TestDaemon::start_configured(|c| c.network = Some(files.clone()));
    let client = Pinned::new(&[first.as_bytes(), renewed.as_bytes()]);
    let fingerprint_of = |pem: &str| {
        use rustls::pki_types::CertificateDer;
        use rustls::pki_types::pem::PemObject as _;
        let der = CertificateDer::from_pem_slice(pem.as_bytes()).unwrap();
        taskkeeper_server::http::tls::fingerprint(&der)
    };
    let served = || {
        client
            .exchange(
                d.network_addr(),
                "127.0.0.1",
                "GET",
                "/.well-known/agent-card.json",
                &[],
                "",
            )
            .fingerprint
    };
    assert_eq!(served(), fingerprint_of(&first));
    assert!(!d.data_dir.join("network-cert.pem").exists());

    // A renewal (certbot, Caddy) writes new files: served from the next connection on.
    std::fs::write(&cert, &renewed).unwrap();
    std::fs::write(&key, &renewed_key).unwrap();
    until("the renewed certificate", || {
        (served() == fingerprint_of(&renewed)).then_some(())
    });
    // What the owner hands askers names the renewed one too: the status, `/api/network`
    // (which `asker add` prints from).
    assert_eq!(
        d.daemon().network().certificate_sha256(),
        Some(fingerprint_of(&renewed))
    );
    let (code, view) = d.call("GET", "/api/network", None);
    assert_eq!(code, 200, "{view}");
    assert_eq!(
        view["certificateSha256"],
        fingerprint_of(&renewed),
        "{view}"
    );
    // A broken renewal keeps the last good one.
    std::fs::write(&cert, "not a certificate").unwrap();
    assert_eq!(served(), fingerprint_of(&renewed));
    drop(d);

    // Files that do not load: `serve --listen` says which and does not start.
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let data = tempfile::tempdir().unwrap();
    let mut config = DaemonConfig::new(0, data.path().to_owned());
    config.network = Some(files);
    let e = runtime.block_on(Daemon::start(config)).unwrap_err();
    assert!(e.to_string().contains("cert.pem"), "{e}");
}

#[test]
fn plain_http_beyond_loopback_is_refused_without_the_owners_word_and_warned_with_it() {
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let data = tempfile::tempdir().unwrap();
    let plain = [
        ("network.listen", "0.0.0.0:0"),
        ("network.tls", "off"),
        ("network.public_url", "http://box.example.net"),
    ];
    let mut config = DaemonConfig::new(0, data.path().to_owned());
    config.network = Some(network(&plain));
    let e = runtime.block_on(Daemon::start(config)).unwrap_err();
    assert!(e.to_string().contains("--insecure-http"), "{e}");

    let mut word = plain.to_vec();
    word.push(("network.insecure_http", "true"));
    let d = TestDaemon::start_configured(|c| c.network = Some(network(&word)));
    let status = d.daemon().network();
    assert_eq!(status.state, NetworkState::Listening);
    assert!(status.warning.unwrap().contains("plain HTTP"));
    let (_, body) = d.call("GET", "/api/network", None);
    assert!(body["warning"].as_str().unwrap().contains("unencrypted"));
}

/// One plain HTTP exchange with the listener at `addr` (behind a proxy, or without TLS).
fn plain(addr: SocketAddr, method: &str, path: &str, headers: &[(&str, &str)]) -> Answer {
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
    let mut request = format!("{method} {path} HTTP/1.1\r\nConnection: close\r\n");
    for (k, v) in headers {
        request.push_str(&format!("{k}: {v}\r\n"));
    }
    request.push_str("Content-Length: 0\r\n\r\n");
    s.write_all(request.as_bytes()).unwrap();
    let mut text = String::new();
    let _ = s.read_to_string(&mut text);
    let (head, body) = text.split_once("\r\n\r\n").unwrap_or((&text, ""));
    let mut lines = head.lines();
    let status = lines
        .next()
        .and_then(|l| l.split(' ').nth(1))
        .and_then(|c| c.parse().ok())
        .unwrap_or(0);
    Answer {
        status,
        headers: lines
            .filter_map(|l| l.split_once(':'))
            .map(|(k, v)| (k.trim().to_ascii_lowercase(), v.trim().to_owned()))
            .collect(),
        body: body.to_owned(),
        fingerprint: String::new(),
    }
}

fn proxied(trusted: &str, clock: ManualClock) -> TestDaemon {
    TestDaemon::start_configured(|c| {
        c.clock = Arc::new(clock);
        c.network = Some(network(&[
            LISTEN,
            ("network.tls", "proxy"),
            ("network.public_url", "https://box.example.net"),
            ("network.trusted_proxies", trusted),
        ]));
    })
}

#[test]
fn behind_a_proxy_forwarded_headers_are_believed_only_from_the_listed_addresses() {
    let clock = ManualClock::new(Timestamp::from_millis(1_000_000_000));
    let d = proxied("127.0.0.1", clock.clone());
    d.with_desk("web");
    let addr = d.network_addr();
    let host = addr.to_string();
    // The card names the proxy's public URL; the proxy's Host (the upstream) is taken, and
    // the public one it forwards.
    let card = plain(
        addr,
        "GET",
        "/a2a/web/.well-known/agent-card.json",
        &[("Host", &host)],
    );
    assert_eq!(card.status, 200, "{}", card.body);
    assert_eq!(
        card.json()["supportedInterfaces"][0]["url"],
        "https://box.example.net/a2a/web"
    );
    let forwarded = plain(
        addr,
        "GET",
        "/.well-known/agent-card.json",
        &[
            ("Host", "elsewhere:1"),
            ("X-Forwarded-Host", "box.example.net"),
        ],
    );
    assert_eq!(forwarded.status, 200, "{}", forwarded.body);

    // A wrong token from the address the proxy names makes that address wait, not others.
    let wrong = [("Host", host.as_str()), ("Authorization", "Bearer nope")];
    let mallory = ("X-Forwarded-For", "198.51.100.7");
    let first = plain(addr, "POST", "/a2a/web", &[wrong[0], wrong[1], mallory]);
    assert_eq!(first.status, 401, "{}", first.body);
    let again = plain(
        addr,
        "GET",
        "/.well-known/agent-card.json",
        &[wrong[0], mallory],
    );
    assert_eq!(again.status, 429, "{}", again.body);
    let other = plain(
        addr,
        "GET",
        "/.well-known/agent-card.json",
        &[wrong[0], ("X-Forwarded-For", "198.51.100.8")],
    );
    assert_eq!(other.status, 200, "{}", other.body);
    drop(d);

    // From an address not listed, the headers are the caller's own words: ignored.
    let d = proxied("10.9.9.9", clock.clone());
    let addr = d.network_addr();
    let host = addr.to_string();
    let foreign = plain(
        addr,
        "GET",
        "/.well-known/agent-card.json",
        &[
            ("Host", "elsewhere:1"),
            ("X-Forwarded-Host", "box.example.net"),
        ],
    );
    assert_eq!(foreign.status, 403, "{}", foreign.body);
    let first = plain(
        addr,
        "POST",
        "/a2a/web",
        &[
            ("Host", &host),
            ("Authorization", "Bearer nope"),
            ("X-Forwarded-For", "198.51.100.7"),
        ],
    );
    assert_eq!(first.status, 401);
    let other = plain(
        addr,
        "GET",
        "/.well-known/agent-card.json",
        &[("Host", &host), ("X-Forwarded-For", "198.51.100.8")],
    );
    assert_eq!(
        other.status, 429,
        "the source is the peer, whatever it claims"
    );
}

#[test]
fn the_front_refuses_foreign_hosts_and_origins_and_every_token_but_an_askers() {
    let d = self_signed(|_| {});
    d.with_desk("web");
    let asker = d.add_asker("far");
    let addr = d.network_addr();
    let card = "/.well-known/agent-card.json";
    let foreign = get(&d, card, &[("Host", "evil.example")]);
    assert_eq!(foreign.status, 403, "{}", foreign.body);
    let loopback_name = get(&d, card, &[("Host", &format!("localhost:{}", addr.port()))]);
    assert_eq!(loopback_name.status, 403, "only the listener's own names");
    for origin in ["https://evil.example", "null", "http://127.0.0.1"] {
        let refused = get(&d, card, &[("Origin", origin)]);
        assert_eq!(refused.status, 403, "Origin {origin}: {}", refused.body);
    }
    let own = format!("https://{addr}");
    assert_eq!(get(&d, card, &[("Origin", &own)]).status, 200);

    // Only askers' tokens: the owner's and the sessions' stay on this machine.
    let worker = d.daemon().worker_token().as_str().to_owned();
    for token in [TOKEN, worker.as_str()] {
        let answer = rpc(&d, "/a2a/web", token, &send("hello"));
        assert_eq!(answer.status, 403, "{}", answer.body);
        assert!(
            answer.body.contains("askers' tokens only"),
            "{}",
            answer.body
        );
    }
    let answer = rpc(&d, "/a2a/web", &asker, &send("hello"));
    assert_eq!(answer.status, 200, "{}", answer.body);
    // The body limit holds as on loopback.
    let auth = format!("Bearer {asker}");
    let huge = "x".repeat(taskkeeper_server::http::MAX_BODY + 1);
    let too_large = asker_client(&d).exchange(
        addr,
        "127.0.0.1",
        "POST",
        "/a2a/web",
        &[
            ("Authorization", &auth),
            ("Content-Type", "application/json"),
        ],
        &huge,
    );
    assert_eq!(too_large.status, 413, "{}", too_large.body);

    // What is not on the network is not there, for an asker either.
    for path in [
        "/api/tasks",
        "/hooks/claude-code",
        "/mcp",
        "/ui/",
        "/healthz",
    ] {
        let auth = format!("Bearer {asker}");
        let answer = get(&d, path, &[("Authorization", &auth)]);
        assert_eq!(answer.status, 404, "{path}: {}", answer.body);
        assert!(answer.body.contains("network listener"), "{}", answer.body);
    }
}

/// The quotas and size limits an asker has on loopback hold the same on the network listener.
#[test]
fn an_askers_quota_and_message_limit_hold_on_the_network_listener() {
    let d = self_signed(|_| {});
    d.with_desk("web");
    let asker = d.add_asker("far");
    d.set_setting("limits.open_tasks_per_asker", "1");
    d.set_setting("limits.message_bytes", "1KiB");
    let first = rpc(&d, "/a2a/web", &asker, &send("the one open task"));
    assert_eq!(first.status, 200, "{}", first.body);
    let body = |a: &Answer| serde_json::from_str::<Value>(&a.body).unwrap();
    assert!(
        body(&first)["result"]["task"]["id"].is_string(),
        "{}",
        first.body
    );
    let before = d.task_count();
    let second = body(&rpc(&d, "/a2a/web", &asker, &send("one more")));
    assert_eq!(
        second["error"]["data"][0]["reason"], "OPEN_TASKS_PER_ASKER_LIMIT",
        "{second}"
    );
    let big = body(&rpc(&d, "/a2a/web", &asker, &send(&"x".repeat(2000))));
    assert!(
        big["error"]["message"]
            .as_str()
            .is_some_and(|m| m.contains("limits.message_bytes")),
        "{big}"
    );
    assert_eq!(d.task_count(), before, "the refusals changed nothing");
}

#[test]
fn a_wrong_token_makes_its_source_wait_longer_each_time_on_the_injected_clock() {
    let clock = ManualClock::new(Timestamp::from_millis(1_000_000_000));
    let d = self_signed(|c| c.clock = Arc::new(clock.clone()));
    d.with_desk("web");
    let asker = d.add_asker("far");
    let card = "/.well-known/agent-card.json";
    let wrong = || rpc(&d, "/a2a/web", "not-a-token", &send("guess"));
    let first = wrong();
    assert_eq!(first.status, 401, "{}", first.body);
    assert_eq!(first.header("retry-after"), Some("1"));
    // Until the wait is over, nothing from that address is looked at, a right token neither.
    let waiting = rpc(&d, "/a2a/web", &asker, &send("right"));
    assert_eq!(waiting.status, 429, "{}", waiting.body);
    assert_eq!(waiting.header("retry-after"), Some("1"));
    assert_eq!(get(&d, card, &[]).status, 429);
    clock.advance(Duration::from_secs(1));
    assert_eq!(wrong().header("retry-after"), Some("2"));
    clock.advance(Duration::from_secs(2));
    assert_eq!(wrong().header("retry-after"), Some("4"));
    clock.advance(Duration::from_secs(3));
    assert_eq!(get(&d, card, &[]).status, 429, "a second short");
    clock.advance(Duration::from_secs(1));
    // A right token starts the address afresh.
    assert_eq!(rpc(&d, "/a2a/web", &asker, &send("right")).status, 200);
    assert_eq!(wrong().header("retry-after"), Some("1"));
}

#[test]
fn each_asker_gets_its_requests_and_streams_per_minute_on_the_injected_clock() {
    let clock = ManualClock::new(Timestamp::from_millis(1_000_000_000));
    let d = self_signed(|c| c.clock = Arc::new(clock.clone()));
    d.with_desk("web");
    d.set_setting("network.requests_per_minute", "3");
    d.set_setting("network.streams_per_minute", "1");
    let (alice, bob) = (d.add_asker("alice"), d.add_asker("bob"));
    let list = json!({"jsonrpc": "2.0", "id": 1, "method": "ListTasks", "params": {}});
    for _ in 0..3 {
        assert_eq!(rpc(&d, "/a2a/web", &alice, &list).status, 200);
    }
    let over = rpc(&d, "/a2a/web", &alice, &list);
    assert_eq!(over.status, 429, "{}", over.body);
    assert_eq!(over.header("retry-after"), Some("60"));
    assert!(over.body.contains("network.requests_per_minute"));
    // Bob has his own minute; without a token, the address has its own.
    assert_eq!(rpc(&d, "/a2a/web", &bob, &list).status, 200);
    assert_eq!(get(&d, "/.well-known/agent-card.json", &[]).status, 200);
    clock.advance(Duration::from_secs(60));
    assert_eq!(rpc(&d, "/a2a/web", &alice, &list).status, 200);

    // Streams (and blocking waits) opened per minute: the second is refused before anything
    // is created. (The requests' number is read as it is at each request.)
    d.set_setting("network.requests_per_minute", "1000");
    let open = |text: &str| {
        let task = rpc(&d, "/a2a/web", &bob, &send(text)).json();
        task["result"]["task"]["id"].as_str().unwrap().to_owned()
    };
    let (first, second) = (open("follow me"), open("and me"));
    let subscribe = |id: &str| json!({"jsonrpc": "2.0", "id": 2, "method": "SubscribeToTask", "params": {"id": id}});
    let cancel =
        |id: &str| json!({"jsonrpc": "2.0", "id": 3, "method": "CancelTask", "params": {"id": id}});
    // A stream, followed until its task ends (cancelled here).
    let follow = |id: &str| {
        std::thread::scope(|s| {
            let stream = s.spawn(|| rpc(&d, "/a2a/web", &bob, &subscribe(id)));
            until("the stream to be open", || {
                (d.daemon()
                    .tasks()
                    .watchers(&taskkeeper_core::TaskId::from(id))
                    > 0)
                .then_some(())
            });
            assert_eq!(rpc(&d, "/a2a/web", &bob, &cancel(id)).status, 200);
            stream.join().unwrap()
        })
    };
    let followed = follow(&first);
    assert_eq!(followed.status, 200, "{}", followed.body);
    assert!(
        followed.body.contains("TASK_STATE_CANCELED"),
        "{}",
        followed.body
    );
    // Refused, or (were it not) a stream that the task's cancel ends, so the test fails
    // instead of waiting on it.
    let refused = std::thread::scope(|s| {
        let attempt = s.spawn(|| rpc(&d, "/a2a/web", &bob, &subscribe(&second)));
        until("the second stream to be refused or opened", || {
            let opened = d
                .daemon()
                .tasks()
                .watchers(&taskkeeper_core::TaskId::from(second.as_str()))
                > 0;
            (attempt.is_finished() || opened).then_some(())
        });
        if !attempt.is_finished() {
            rpc(&d, "/a2a/web", &bob, &cancel(&second));
        }
        attempt.join().unwrap()
    });
    assert!(
        refused.body.contains("STREAMS_PER_MINUTE_LIMIT"),
        "{}",
        refused.body
    );
    assert!(refused.body.contains("network.streams_per_minute"));
    clock.advance(Duration::from_secs(60));
    let followed = follow(&second);
    assert!(
        followed.body.contains("TASK_STATE_CANCELED"),
        "{}",
        followed.body
    );
}

fn slow(change: impl FnOnce(&mut DaemonConfig)) -> TestDaemon {
    TestDaemon::start_configured(|c| {
        c.network_timeouts = NetworkTimeouts {
            handshake: Duration::from_secs(1),
            headers: Duration::from_secs(1),
            body: Duration::from_secs(1),
        };
        change(c);
    })
}

/// Write `bytes` one at a time, `gap` apart, on a new connection; how many went out before
/// the server answered or closed the connection (all of them when it never did), and what it
/// answered.
fn dribble(addr: SocketAddr, bytes: &[u8], gap: Duration) -> (usize, String) {
    dribble_on(TcpStream::connect(addr).unwrap(), bytes, gap)
}

#[test]
fn a_client_too_slow_with_its_handshake_headers_or_body_is_cut_off() {
    // TLS: a connection that never says hello is closed.
    let d = slow(|c| c.network = Some(network(&[LISTEN])));
    let mut s = TcpStream::connect(d.network_addr()).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
    let mut buf = [0u8; 16];
    assert!(
        matches!(s.read(&mut buf), Ok(0) | Err(_)),
        "the handshake timeout closes it"
    );
    drop(d);

    // Plain HTTP behind a proxy, headers sent a byte at a time: cut off before they end.
    let d = slow(|c| {
        c.network = Some(network(&[
            LISTEN,
            ("network.tls", "proxy"),
            ("network.public_url", "https://box.example.net"),
            ("network.trusted_proxies", "127.0.0.1"),
        ]))
    });
    let addr = d.network_addr();
    let headers = format!(
        "GET /.well-known/agent-card.json HTTP/1.1\r\nHost: {addr}\r\nUser-Agent: slow-loris/1.0 \
         (one byte at a time, for as long as the server lets it)\r\nAccept: application/json\r\n\r\n"
    );
    let (sent, _) = dribble(addr, headers.as_bytes(), Duration::from_millis(100));
    assert!(
        sent < headers.len(),
        "the server waited for all {} bytes of headers",
        headers.len()
    );

    // A body that comes too slowly: 408, before it is all there.
    d.with_desk("web");
    let asker = d.add_asker("far");
    let body = send("slowly").to_string();
    let request = format!(
        "POST /a2a/web HTTP/1.1\r\nHost: {addr}\r\nAuthorization: Bearer {asker}\r\n\
         Content-Type: application/json\r\nContent-Length: {}\r\n\r\n",
        body.len()
    );
    let mut s = TcpStream::connect(addr).unwrap();
    s.write_all(request.as_bytes()).unwrap();
    let (sent, answer) = dribble_on(s, body.as_bytes(), Duration::from_millis(100));
    assert!(sent < body.len(), "the server waited for the whole body");
    assert!(answer.starts_with("HTTP/1.1 408"), "{answer}");
}

/// [`dribble`] on a connection already open.
fn dribble_on(mut s: TcpStream, bytes: &[u8], gap: Duration) -> (usize, String) {
    s.set_read_timeout(Some(Duration::from_millis(5))).unwrap();
    let mut answer = Vec::new();
    for (i, b) in bytes.iter().enumerate() {
        let mut buf = [0u8; 4096];
        match s.read(&mut buf) {
            Ok(0) => return (i, String::from_utf8_lossy(&answer).into_owned()),
            Ok(n) => {
                answer.extend_from_slice(&buf[..n]);
                return (i, String::from_utf8_lossy(&answer).into_owned());
            }
            Err(e)
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                ) => {}
            Err(_) => return (i, String::from_utf8_lossy(&answer).into_owned()),
        }
        if s.write_all(&[*b]).is_err() {
            return (i, String::from_utf8_lossy(&answer).into_owned());
        }
        std::thread::sleep(gap);
    }
    (bytes.len(), String::from_utf8_lossy(&answer).into_owned())
}

#[test]
fn a_workers_file_is_linked_and_fetched_at_the_public_url() {
    let d = self_signed(|_| {});
    d.with_desk("web");
    let asker = d.add_asker("far");
    let task = rpc(&d, "/a2a/web", &asker, &send("write a report")).json();
    let id = task["result"]["task"]["id"].as_str().unwrap().to_owned();
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("report.md");
    std::fs::write(&file, "# all green\n").unwrap();
    let (code, body) = d.call(
        "POST",
        &format!("/api/tasks/{id}/update"),
        Some(&json!({"status": "done", "text": "written", "files": [file]})),
    );
    assert_eq!(code, 200, "{body}");
    let get_task = json!({"jsonrpc": "2.0", "id": 2, "method": "GetTask", "params": {"id": id}});
    let got = rpc(&d, "/a2a/web", &asker, &get_task).json();
    let url = got["result"]["artifacts"][0]["parts"][0]["url"]
        .as_str()
        .unwrap()
        .to_owned();
    let base = format!("https://{}/", d.network_addr());
    assert!(url.starts_with(&base), "{url}");
    let auth = format!("Bearer {asker}");
    let fetched = get(&d, &url[base.len() - 1..], &[("Authorization", &auth)]);
    assert_eq!(fetched.status, 200, "{}", fetched.body);
    assert_eq!(fetched.body, "# all green\n");
    // On loopback the same task names loopback.
    let local = d.rpc("/a2a/web", &asker, Some("1.0"), &get_task);
    assert!(
        local["result"]["artifacts"][0]["parts"][0]["url"]
            .as_str()
            .unwrap()
            .starts_with("http://127.0.0.1:")
    );
}

/// A refusal over HTTP/2 reaches a client still sending its body: the front takes the body
/// before it answers (as for a request it lets in), since ending the stream first resets it
/// under the client, which then reports a framing error instead of the refusal. curl, the
/// HTTP/2 client here, uploads slowly on purpose.
#[test]
fn an_http2_client_reads_the_refusal_of_a_request_it_is_still_sending() {
    let d = self_signed(|_| {});
    d.with_desk("web");
    let dir = tempfile::tempdir().unwrap();
    let (body, pem) = (dir.path().join("body"), dir.path().join("cert.pem"));
    std::fs::write(&body, "a".repeat(3000)).unwrap();
    std::fs::write(&pem, d.self_signed_pem()).unwrap();
    let out = std::process::Command::new("curl")
        .args(["-sS", "--http2", "--limit-rate", "1k", "-o", "/dev/null"])
        .args(["-w", "%{http_code} %{http_version}", "--cacert"])
        .arg(&pem)
        .args(["-H", &format!("Authorization: Bearer {TOKEN}")])
        .args(["-H", "Content-Type: application/json", "--data-binary"])
        .arg(format!("@{}", body.display()))
        .arg(format!("https://{}/a2a/web", d.network_addr()))
        .output()
        .expect("curl runs (this test needs it)");
    assert_eq!(
        (
            String::from_utf8_lossy(&out.stdout).as_ref(),
            out.status.code()
        ),
        ("403 2", Some(0)),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}
