//! Who may call which route: every route the daemon serves, called with each kind of
//! credential (the owner's, the worker token, an asker's), with a wrong token and with none,
//! on both listeners (loopback, and the network listener for askers on other machines, over
//! TLS), against the table in ARCHITECTURE.md. The table, the rooms in the code and what the
//! daemon does cannot drift apart: a route added without a row, a row without a route, or a
//! room that lets the wrong caller in, on either listener, fails here.

use std::collections::BTreeSet;
use std::io::{Read as _, Write as _};
use std::net::TcpStream;

use serde_json::json;
use taskkeeper_server::http::routes::{Access, RouteDoc};

use crate::support::{Pinned, TOKEN, TestDaemon, network};

/// One row of the table: path, methods, who may call, who may call on the network listener.
type Row = (String, String, String, String);

/// The rows of ARCHITECTURE.md's route table.
fn documented() -> BTreeSet<Row> {
    let doc = std::fs::read_to_string(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../ARCHITECTURE.md"),
    )
    .unwrap();
    let start = doc
        .find("<!-- route table -->")
        .expect("ARCHITECTURE.md has the route table");
    let end = doc[start..].find("<!-- end of route table -->").unwrap() + start;
    doc[start..end]
        .lines()
        .filter(|l| l.starts_with("| `"))
        .map(|l| {
            let cells: Vec<String> = l
                .trim_matches('|')
                .split('|')
                .map(|c| c.trim().trim_matches('`').to_owned())
                .collect();
            (
                cells[0].clone(),
                cells[1].clone(),
                cells[2].clone(),
                cells[3].clone(),
            )
        })
        .collect()
}

/// The status of one request; only the status line is read, so an event stream that never
/// ends is no trouble.
fn status(d: &TestDaemon, method: &str, path: &str, token: Option<&str>) -> u16 {
    let mut s = TcpStream::connect(d.addr).unwrap();
    let auth = token.map_or(String::new(), |t| format!("Authorization: Bearer {t}\r\n"));
    let body = "{}";
    write!(
        s,
        "{method} {path} HTTP/1.1\r\nHost: {}\r\n{auth}Content-Type: application/json\r\n\
         Accept: application/json, text/event-stream\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        d.host(),
        body.len()
    )
    .unwrap();
    let mut line = Vec::new();
    let mut byte = [0u8; 1];
    while !line.ends_with(b"\r\n") && s.read(&mut byte).unwrap() == 1 {
        line.push(byte[0]);
    }
    let line = String::from_utf8_lossy(&line).to_string();
    line.split(' ')
        .nth(1)
        .and_then(|c| c.parse().ok())
        .unwrap_or_else(|| panic!("no status line for {method} {path}: {line:?}"))
}

/// A path of the table with its parameters filled in.
fn concrete(path: &str) -> String {
    path.split('/')
        .map(|seg| if seg.starts_with('{') { "x" } else { seg })
        .collect::<Vec<_>>()
        .join("/")
}

/// A daemon with the network listener on (self-signed, on loopback for the test) and an
/// injected clock, so the wait after each wrong token can be passed without sleeping.
fn with_network(conformance: bool) -> (TestDaemon, taskkeeper_core::ManualClock) {
    let clock =
        taskkeeper_core::ManualClock::new(taskkeeper_core::Timestamp::from_millis(1_000_000_000));
    let d = TestDaemon::start_configured(|c| {
        c.conformance = conformance;
        c.clock = std::sync::Arc::new(clock.clone());
        c.network = Some(network(&[("network.listen", "127.0.0.1:0")]));
    });
    d.set_setting("network.requests_per_minute", "100000");
    (d, clock)
}

#[test]
fn every_route_admits_exactly_the_callers_its_row_names() {
    // Without the flag the conformance rows are no routes of their own: `/a2a/tck` is an
    // ordinary desk route, closed to callers without a token.
    let (d, clock) = with_network(false);
    check_every_route(&d, false);
    check_every_route_on_the_network(&d, &clock);
    assert_eq!(status(&d, "POST", "/a2a/tck", None), 401);
    assert_eq!(status(&d, "POST", "/a2a/tck/", None), 401);
}

#[test]
fn every_route_admits_exactly_the_callers_its_row_names_in_conformance_mode() {
    let (d, clock) = with_network(true);
    check_every_route(&d, true);
    check_every_route_on_the_network(&d, &clock);
}

/// Whether the table's `pattern` (with `{name}` and `{*rest}`) matches `path`.
fn matches(pattern: &str, path: &str) -> bool {
    let (p, q): (Vec<&str>, Vec<&str>) = (pattern.split('/').collect(), path.split('/').collect());
    if p.last().is_some_and(|s| s.starts_with("{*")) {
        return q.len() >= p.len() && p.iter().zip(&q).all(|(a, b)| a.starts_with('{') || a == b);
    }
    p.len() == q.len() && p.iter().zip(&q).all(|(a, b)| a.starts_with('{') || a == b)
}

/// Every route on the network listener: only what its row's last column says answers there
/// (the rest is not found, unless its path is also one of a network route's, as `/a2a/tck`
/// is a desk's), and there only askers' tokens are taken: the owner's and the sessions' are
/// refused on every route, a wrong token too (and its source waits, which the clock skips).
fn check_every_route_on_the_network(d: &TestDaemon, clock: &taskkeeper_core::ManualClock) {
    let (code, body) = d.call("POST", "/api/askers", Some(&json!({"name": "far"})));
    assert_eq!(code, 201, "{body}");
    let asker = body["token"].as_str().unwrap().to_owned();
    let worker = d.daemon().worker_token().as_str().to_owned();
    let client = Pinned::new(&[&d.self_signed_pem()]);
    let addr = d.network_addr();
    let on_network: Vec<&RouteDoc> = d.daemon().routes().iter().filter(|r| r.network).collect();
    assert!(
        on_network
            .iter()
            .all(|r| matches!(r.access, Access::Open | Access::Askers)),
        "only the cards and the askers' rooms are on the network: {on_network:?}"
    );
    let call = |method: &str, path: &str, token: Option<&str>| {
        let auth = token.map(|t| format!("Bearer {t}"));
        let mut headers = vec![
            ("Content-Type", "application/json"),
            ("Accept", "application/json, text/event-stream"),
        ];
        if let Some(a) = &auth {
            headers.push(("Authorization", a.as_str()));
        }
        client.exchange(addr, "127.0.0.1", method, path, &headers, "{}")
    };
    for route in d.daemon().routes() {
        let path = concrete(route.path);
        for method in route.methods.split(' ') {
            // What answers this path on the network: its own row, or a network row whose
            // pattern it also matches.
            let there = on_network
                .iter()
                .find(|r| matches(r.path, &path) && r.methods.split(' ').any(|m| m == method));
            for (who, token) in [("owner", TOKEN), ("worker", worker.as_str())] {
                let got = call(method, &path, Some(token));
                assert_eq!(
                    got.status, 403,
                    "{who} on the network: {method} {path}: {}",
                    got.body
                );
            }
            let wrong = call(method, &path, Some("not-a-token"));
            assert_eq!(
                wrong.status, 401,
                "a wrong token on the network: {method} {path}"
            );
            clock.advance(std::time::Duration::from_secs(301));
            let callers = [("asker", Some(asker.as_str())), ("nobody", None)];
            for (who, token) in callers {
                let got = call(method, &path, token);
                let not_here = got.status == 404 && got.body.contains("network listener");
                match there {
                    None => assert!(
                        not_here,
                        "{method} {path} must not be on the network listener ({who}): {} {}",
                        got.status, got.body
                    ),
                    Some(r) if token.is_some() || r.access == Access::Open => assert!(
                        !not_here && got.status != 401 && got.status != 403,
                        "{who} should reach {method} {path} on the network ({}), got {} {}",
                        r.on_network(),
                        got.status,
                        got.body
                    ),
                    Some(_) => assert_eq!(got.status, 401, "{who} on the network: {method} {path}"),
                }
            }
        }
    }
}

/// Compare the served routes with the table (its conformance rows only when `conformance`),
/// then call each with every kind of credential and with none.
fn check_every_route(d: &TestDaemon, conformance: bool) {
    d.with_desk("web");
    let (code, body) = d.call("POST", "/api/askers", Some(&json!({"name": "bob"})));
    assert_eq!(code, 201, "{body}");
    let asker = body["token"].as_str().unwrap().to_owned();
    let worker = d.daemon().worker_token().as_str().to_owned();

    let served: BTreeSet<Row> = d
        .daemon()
        .routes()
        .iter()
        .map(|r| {
            (
                r.path.to_owned(),
                r.methods.to_owned(),
                r.access.who().to_owned(),
                r.on_network().to_owned(),
            )
        })
        .collect();
    let table: String = served
        .iter()
        .map(|(p, m, w, n)| format!("| `{p}` | {m} | {w} | {n} |\n"))
        .collect();
    // Under --conformance a path with a conformance row of its own (gRPC's, one path for
    // every desk) is served by that row alone; without the flag, by its other row.
    let all = documented();
    let conformance_paths: BTreeSet<&String> = all
        .iter()
        .filter(|(_, _, who, _)| who == Access::Conformance.who())
        .map(|(path, ..)| path)
        .collect();
    let documented: BTreeSet<_> = all
        .iter()
        .filter(|(path, _, who, _)| {
            if who == Access::Conformance.who() {
                conformance
            } else {
                !conformance || !conformance_paths.contains(path)
            }
        })
        .cloned()
        .collect();
    assert_eq!(
        documented, served,
        "ARCHITECTURE.md's route table differs from the routes served (conformance mode: \
         {conformance}); the served table is:\n{table}"
    );

    for route in d.daemon().routes() {
        let path = concrete(route.path);
        for method in route.methods.split(' ') {
            let callers = [
                ("owner", Some(TOKEN), true),
                (
                    "worker",
                    Some(worker.as_str()),
                    matches!(route.access, Access::Open | Access::Workers),
                ),
                (
                    "asker",
                    Some(asker.as_str()),
                    matches!(
                        route.access,
                        Access::Open | Access::Askers | Access::Conformance
                    ),
                ),
                (
                    "nobody",
                    None,
                    matches!(route.access, Access::Open | Access::Conformance),
                ),
            ];
            for (who, token, admitted) in callers {
                let got = status(d, method, &path, token);
                if admitted {
                    assert!(
                        got != 401 && got != 403,
                        "{who} should reach {method} {path} ({}), got {got}",
                        route.access.who()
                    );
                } else {
                    let refused = if token.is_some() { 403 } else { 401 };
                    assert_eq!(got, refused, "{who} must not reach {method} {path}");
                }
            }
            if route.access != Access::Open {
                assert_eq!(
                    status(d, method, &path, Some("not-a-token")),
                    401,
                    "a wrong token on {method} {path}"
                );
            }
        }
        // A method the row does not name is no route, for the owner too.
        for method in ["GET", "POST", "PUT", "PATCH", "DELETE"] {
            if route.methods.split(' ').any(|m| m == method) || route.path == "/mcp" {
                continue;
            }
            assert_eq!(
                status(d, method, &path, Some(TOKEN)),
                405,
                "{method} {path} is not in the table"
            );
        }
    }
}
