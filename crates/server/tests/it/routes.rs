//! Who may call which route: every route the daemon serves, called with each kind of
//! credential (the owner's, the worker token, an asker's), with a wrong token and with none,
//! against the table in ARCHITECTURE.md. The table, the rooms in the code and what the
//! daemon does cannot drift apart: a route added without a row, a row without a route, or a
//! room that lets the wrong caller in fails here.

use std::collections::BTreeSet;
use std::io::{Read as _, Write as _};
use std::net::TcpStream;

use serde_json::json;
use taskkeeper_server::http::routes::Access;

use crate::support::{TOKEN, TestDaemon};

/// The rows of ARCHITECTURE.md's route table: (path, methods, who may call).
fn documented() -> BTreeSet<(String, String, String)> {
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
            (cells[0].clone(), cells[1].clone(), cells[2].clone())
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

#[test]
fn every_route_admits_exactly_the_callers_its_row_names() {
    // Without the flag the conformance rows are no routes of their own: `/a2a/tck` is an
    // ordinary desk route, closed to callers without a token.
    let d = TestDaemon::start();
    check_every_route(&d, false);
    assert_eq!(status(&d, "POST", "/a2a/tck", None), 401);
    assert_eq!(status(&d, "POST", "/a2a/tck/", None), 401);
}

#[test]
fn every_route_admits_exactly_the_callers_its_row_names_in_conformance_mode() {
    let d = TestDaemon::start_configured(|c| c.conformance = true);
    check_every_route(&d, true);
}

/// Compare the served routes with the table (its conformance rows only when `conformance`),
/// then call each with every kind of credential and with none.
fn check_every_route(d: &TestDaemon, conformance: bool) {
    d.with_desk("web");
    let (code, body) = d.call("POST", "/api/askers", Some(&json!({"name": "bob"})));
    assert_eq!(code, 201, "{body}");
    let asker = body["token"].as_str().unwrap().to_owned();
    let worker = d.daemon().worker_token().as_str().to_owned();

    let served: BTreeSet<(String, String, String)> = d
        .daemon()
        .routes()
        .iter()
        .map(|r| {
            (
                r.path.to_owned(),
                r.methods.to_owned(),
                r.access.who().to_owned(),
            )
        })
        .collect();
    let table: String = served
        .iter()
        .map(|(p, m, w)| format!("| `{p}` | {m} | {w} |\n"))
        .collect();
    let documented: BTreeSet<_> = documented()
        .into_iter()
        .filter(|(_, _, who)| conformance || who != Access::Conformance.who())
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
