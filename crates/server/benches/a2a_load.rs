//! A2A load generator for the side-by-side benchmark (`bench/a2a/run.sh`): N keep-alive
//! HTTP/1.1 connections, one thread each, send v1.0 `GetTask` (of a task it creates first) or
//! `SendMessage` with `returnImmediately: true` and a fresh `messageId` per call, over JSON-RPC
//! (`POST {url}`) or HTTP+JSON (`GET {url}/tasks/{id}`, `POST {url}/message:send`), for a fixed
//! time after a warm-up; then one JSON line with throughput and latency percentiles. With
//! `--binding grpc` the same calls go over gRPC (`a2a_load/grpc.rs`), the URL's desk as tenant.
//!
//! ```text
//! cargo bench -p taskkeeper-server --bench a2a_load -- \
//!     --url http://127.0.0.1:PORT/a2a/web [--token T] --method get|send \
//!     [--binding jsonrpc|http+json|grpc] [--connections 16] [--seconds 5] [--warmup 1] [--label ours]
//!     [--file-bytes N] [--ca CERT.pem] [--fresh]
//! ```
//!
//! `--file-bytes N` adds a file part of N bytes (`raw`, base64, `text/plain`) to every send.
//! An `https://` URL (the network listener, `bench/a2a/run.sh` with `TLS=1`) is reached over
//! TLS (rustls, ring), trusting only `--ca` (the listener's self-signed certificate).
//! `--fresh` makes every call on a new connection (a full TLS handshake each, no session
//! resumption), which shows what a handshake costs.
//!
//! Plain threads and blocking sockets keep the client cheap and its cost easy to reason about:
//! on a 2-core machine it shares the CPU with the server, and a heavier client would take the
//! server's share. Only loopback addresses are accepted.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use serde_json::{Value, json};

#[derive(Debug, Clone)]
struct Args {
    host: String,
    port: u16,
    path: String,
    token: Option<String>,
    method: Method,
    binding: Binding,
    /// `--binding grpc`: the calls go over gRPC instead (`binding` is then unused).
    grpc: bool,
    connections: usize,
    seconds: f64,
    warmup: f64,
    label: String,
    /// A file part of this many bytes in every send (0: text only).
    file_bytes: usize,
    /// TLS, trusting only this certificate (an `https://` URL).
    tls: Option<Arc<rustls::ClientConfig>>,
    /// Every call on a new connection.
    fresh: bool,
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum Method {
    Get,
    Send,
}

/// How a call is carried over HTTP/1.1: in a JSON-RPC body, or by path and HTTP method
/// (HTTP+JSON). gRPC (`Args::grpc`) is `grpc.rs`'s.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Binding {
    JsonRpc,
    Rest,
}

#[path = "a2a_load/grpc.rs"]
mod grpc;

fn usage() -> String {
    "usage: a2a_load --url http://127.0.0.1:PORT/PATH [--token T] --method get|send \
     [--binding jsonrpc|http+json|grpc] [--connections N] [--seconds S] [--warmup S] [--label NAME] \
     [--file-bytes N] [--ca CERT.pem] [--fresh]"
        .to_owned()
}

fn parse_args() -> Result<Args, String> {
    let mut url = None;
    let mut token = None;
    let mut method = None;
    let mut binding = Binding::JsonRpc;
    let mut grpc = false;
    let mut connections = 1usize;
    let mut seconds = 5.0f64;
    let mut warmup = 1.0f64;
    let mut label = String::from("server");
    let mut file_bytes = 0usize;
    let mut ca = None;
    let mut fresh = false;
    let mut it = std::env::args().skip(1);
    while let Some(flag) = it.next() {
        // `cargo bench` passes `--bench` to every bench binary; it means nothing here.
        if flag == "--bench" {
            continue;
        }
        if flag == "--fresh" {
            fresh = true;
            continue;
        }
        let mut value = || {
            it.next()
                .ok_or_else(|| format!("{flag} needs a value\n{}", usage()))
        };
        match flag.as_str() {
            "--url" => url = Some(value()?),
            "--token" => token = Some(value()?),
            "--method" => {
                method = Some(match value()?.as_str() {
                    "get" => Method::Get,
                    "send" => Method::Send,
                    other => return Err(format!("--method get|send, not {other}")),
                })
            }
            "--connections" => {
                connections = value()?
                    .parse()
                    .map_err(|e| format!("--connections: {e}"))?
            }
            "--seconds" => seconds = value()?.parse().map_err(|e| format!("--seconds: {e}"))?,
            "--warmup" => warmup = value()?.parse().map_err(|e| format!("--warmup: {e}"))?,
            "--label" => label = value()?,
            "--binding" => {
                binding = match value()?.as_str() {
                    "jsonrpc" => Binding::JsonRpc,
                    "http+json" => Binding::Rest,
                    "grpc" => {
                        grpc = true;
                        Binding::JsonRpc
                    }
                    other => return Err(format!("--binding jsonrpc|http+json|grpc, not {other}")),
                }
            }
            "--file-bytes" => {
                file_bytes = value()?.parse().map_err(|e| format!("--file-bytes: {e}"))?
            }
            "--ca" => ca = Some(value()?),
            other => return Err(format!("unknown argument {other}\n{}", usage())),
        }
    }
    let url = url.ok_or_else(usage)?;
    let (rest, tls) = match (url.strip_prefix("http://"), url.strip_prefix("https://")) {
        (Some(rest), _) => (rest, None),
        (_, Some(rest)) => {
            let ca = ca.ok_or("an https:// URL needs --ca CERT.pem (the certificate to trust)")?;
            (rest, Some(tls_config(&ca)?))
        }
        _ => return Err("only http:// and https:// URLs (loopback) are supported".into()),
    };
    let (authority, path) = match rest.find('/') {
        Some(i) => (&rest[..i], &rest[i..]),
        None => (rest, "/"),
    };
    let (host, port) = authority
        .rsplit_once(':')
        .ok_or("the URL needs an explicit port")?;
    // A load test sends traffic to this machine only.
    if host != "127.0.0.1" && host != "localhost" && host != "[::1]" {
        return Err(format!("refusing a non-loopback host: {host}"));
    }
    if connections == 0 || seconds <= 0.0 || seconds > 120.0 || warmup < 0.0 {
        return Err("need 1+ connections and 0 < seconds <= 120".into());
    }
    Ok(Args {
        host: host.to_owned(),
        port: port.parse().map_err(|e| format!("port: {e}"))?,
        path: path.to_owned(),
        token,
        method: method.ok_or_else(usage)?,
        binding,
        grpc,
        connections,
        seconds,
        warmup,
        label,
        file_bytes,
        tls,
        fresh,
    })
}

/// TLS that trusts only the certificate in `ca` (PEM), with no session resumption: every new
/// connection is a full handshake.
fn tls_config(ca: &str) -> Result<Arc<rustls::ClientConfig>, String> {
    use rustls::pki_types::CertificateDer;
    use rustls::pki_types::pem::PemObject as _;
    let mut roots = rustls::RootCertStore::empty();
    for cert in CertificateDer::pem_file_iter(ca).map_err(|e| format!("--ca {ca}: {e}"))? {
        roots
            .add(cert.map_err(|e| format!("--ca {ca}: {e}"))?)
            .map_err(|e| format!("--ca {ca}: {e}"))?;
    }
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut config = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| e.to_string())?
        .with_root_certificates(roots)
        .with_no_client_auth();
    config.resumption = rustls::client::Resumption::disabled();
    Ok(Arc::new(config))
}

/// A connection's byte stream: plain TCP or TLS over it.
trait Io: Read + Write + Send {}
impl<T: Read + Write + Send> Io for T {}

/// One keep-alive HTTP/1.1 connection (writes go through the reader's stream, which holds
/// nothing unread between an answer and the next request).
struct Conn {
    reader: BufReader<Box<dyn Io>>,
    /// The headers every request carries (Host, the token, the version).
    headers: String,
    /// The interface URL's path; HTTP+JSON paths are joined onto it.
    base: String,
}

/// One request: HTTP method, path, and body (empty: none).
struct Call {
    method: &'static str,
    path: String,
    body: String,
}

impl Conn {
    fn open(a: &Args) -> Result<Conn, String> {
        let stream = TcpStream::connect((a.host.trim_matches(['[', ']']), a.port))
            .map_err(|e| format!("connect {}:{}: {e}", a.host, a.port))?;
        // Small request/response pairs: Nagle would add its delay to every call.
        stream.set_nodelay(true).map_err(|e| e.to_string())?;
        stream
            .set_read_timeout(Some(Duration::from_secs(30)))
            .map_err(|e| e.to_string())?;
        let io: Box<dyn Io> = match &a.tls {
            None => Box::new(stream),
            Some(config) => {
                let name = rustls::pki_types::ServerName::try_from(
                    a.host.trim_matches(['[', ']']).to_owned(),
                )
                .map_err(|e| format!("server name {}: {e}", a.host))?;
                let mut conn = rustls::ClientConnection::new(config.clone(), name)
                    .map_err(|e| e.to_string())?;
                let mut stream = stream;
                // The handshake now, so a fresh connection's cost is in the call it opens.
                while conn.is_handshaking() {
                    conn.complete_io(&mut stream)
                        .map_err(|e| format!("TLS handshake: {e}"))?;
                }
                Box::new(rustls::StreamOwned::new(conn, stream))
            }
        };
        let auth = a
            .token
            .as_ref()
            .map(|t| format!("Authorization: Bearer {t}\r\n"))
            .unwrap_or_default();
        let close = if a.fresh { "Connection: close\r\n" } else { "" };
        let headers = format!(
            "Host: {}:{}\r\n{auth}A2A-Version: 1.0\r\n{close}",
            a.host, a.port
        );
        Ok(Conn {
            reader: BufReader::new(io),
            headers,
            base: a.path.trim_end_matches('/').to_owned(),
        })
    }

    /// One request; the status and body of its answer.
    fn call(&mut self, call: &Call) -> Result<(u16, Vec<u8>), String> {
        let kind = if call.body.is_empty() {
            ""
        } else {
            "Content-Type: application/json\r\n"
        };
        let req = format!(
            "{} {} HTTP/1.1\r\n{}{kind}Content-Length: {}\r\n\r\n{}",
            call.method,
            call.path,
            self.headers,
            call.body.len(),
            call.body
        );
        let writer = self.reader.get_mut();
        writer
            .write_all(req.as_bytes())
            .and_then(|()| writer.flush())
            .map_err(|e| format!("write: {e}"))?;
        let mut line = String::new();
        self.reader
            .read_line(&mut line)
            .map_err(|e| format!("read status: {e}"))?;
        let status: u16 = line
            .split(' ')
            .nth(1)
            .and_then(|s| s.parse().ok())
            .ok_or_else(|| format!("not an HTTP status line: {line:?}"))?;
        let mut length = None;
        let mut chunked = false;
        loop {
            line.clear();
            self.reader
                .read_line(&mut line)
                .map_err(|e| format!("read header: {e}"))?;
            let l = line.trim_end();
            if l.is_empty() {
                break;
            }
            let lower = l.to_ascii_lowercase();
            if let Some(v) = lower.strip_prefix("content-length:") {
                length = v.trim().parse::<usize>().ok();
            } else if lower.starts_with("transfer-encoding:") && lower.contains("chunked") {
                chunked = true;
            }
        }
        let mut body = Vec::new();
        if chunked {
            loop {
                line.clear();
                self.reader
                    .read_line(&mut line)
                    .map_err(|e| format!("read chunk size: {e}"))?;
                let size = usize::from_str_radix(line.trim().split(';').next().unwrap_or(""), 16)
                    .map_err(|e| format!("chunk size {line:?}: {e}"))?;
                let mut chunk = vec![0; size + 2];
                self.reader
                    .read_exact(&mut chunk)
                    .map_err(|e| format!("read chunk: {e}"))?;
                if size == 0 {
                    break;
                }
                body.extend_from_slice(&chunk[..size]);
            }
        } else {
            let n = length.ok_or("an answer with neither Content-Length nor chunks")?;
            body.resize(n, 0);
            self.reader
                .read_exact(&mut body)
                .map_err(|e| format!("read body: {e}"))?;
        }
        Ok((status, body))
    }
}

/// JSON-RPC posts to the interface URL itself (`/` when its path is empty).
fn rpc_path(base: &str) -> String {
    if base.is_empty() {
        "/".to_owned()
    } else {
        base.to_owned()
    }
}

/// The same SendMessageRequest in either binding.
/// `file`: a file part's base64 bytes to add (`raw`, `text/plain`).
fn send_call(binding: Binding, base: &str, message_id: &str, file: Option<&str>) -> Call {
    let mut parts = vec![json!({"text": "benchmark request"})];
    if let Some(raw) = file {
        parts.push(json!({"raw": raw, "filename": "bench.txt", "mediaType": "text/plain"}));
    }
    let request = json!({
        "message": {"messageId": message_id, "role": "ROLE_USER", "parts": parts},
        "configuration": {"returnImmediately": true}});
    match binding {
        Binding::JsonRpc => Call {
            method: "POST",
            path: rpc_path(base),
            body: json!({"jsonrpc": "2.0", "id": 1, "method": "SendMessage", "params": request})
                .to_string(),
        },
        Binding::Rest => Call {
            method: "POST",
            path: format!("{base}/message:send"),
            body: request.to_string(),
        },
    }
}

fn get_call(binding: Binding, base: &str, task_id: &str) -> Call {
    match binding {
        Binding::JsonRpc => Call {
            method: "POST",
            path: rpc_path(base),
            body:
                json!({"jsonrpc": "2.0", "id": 1, "method": "GetTask", "params": {"id": task_id}})
                    .to_string(),
        },
        Binding::Rest => Call {
            method: "GET",
            path: format!("{base}/tasks/{task_id}"),
            body: String::new(),
        },
    }
}

/// Whether an answer is a success: a JSON-RPC result, or an HTTP+JSON 200 (its errors have
/// other statuses).
fn succeeded(binding: Binding, status: u16, body: &[u8]) -> bool {
    status == 200 && (binding == Binding::Rest || body.windows(9).any(|w| w == b"\"result\":"))
}

/// The method's result, or why not.
fn result_of(binding: Binding, status: u16, body: &[u8]) -> Result<Value, String> {
    let text = String::from_utf8_lossy(body);
    if status != 200 {
        return Err(format!("HTTP {status}: {text}"));
    }
    let v: Value = serde_json::from_slice(body).map_err(|e| format!("not JSON ({e}): {text}"))?;
    match binding {
        Binding::Rest => Ok(v),
        Binding::JsonRpc => match v.get("result") {
            Some(r) => Ok(r.clone()),
            None => Err(format!("not a JSON-RPC result: {text}")),
        },
    }
}

/// Fresh message ids across runs too: both servers may dedupe on messageId.
fn run_nonce() -> u128 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or(0)
}

struct Tally {
    latencies_us: Vec<u32>,
    errors: u64,
    first_error: Option<String>,
    bytes: u64,
    /// Every answered call, warm-up included: what the server's CPU time is divided by.
    calls: u64,
}

fn worker(
    a: &Args,
    index: usize,
    task_id: &str,
    nonce: u128,
    start: Instant,
    stop: &AtomicBool,
) -> Tally {
    let mut t = Tally {
        latencies_us: Vec::with_capacity(100_000),
        errors: 0,
        first_error: None,
        bytes: 0,
        calls: 0,
    };
    let measure_from = start + Duration::from_secs_f64(a.warmup);
    let base = a.path.trim_end_matches('/');
    let get = get_call(a.binding, base, task_id);
    let file = (a.file_bytes > 0).then(|| {
        use base64::Engine as _;
        base64::engine::general_purpose::STANDARD.encode(vec![b'x'; a.file_bytes])
    });
    let mut conn = None;
    let mut n = 0u64;
    while !stop.load(Ordering::Relaxed) {
        // Opening a connection (with `--fresh`, every call's) is part of the call's time.
        let sent = Instant::now();
        let c = match &mut conn {
            Some(c) => c,
            None => match Conn::open(a) {
                Ok(c) => conn.insert(c),
                Err(e) => {
                    t.errors += 1;
                    t.first_error.get_or_insert(e);
                    std::thread::sleep(Duration::from_millis(10));
                    continue;
                }
            },
        };
        n += 1;
        let send;
        let call = match a.method {
            Method::Get => &get,
            Method::Send => {
                send = send_call(
                    a.binding,
                    base,
                    &format!("bench-{nonce}-{index}-{n}"),
                    file.as_deref(),
                );
                &send
            }
        };
        let answer = c.call(call);
        let took = sent.elapsed();
        let counted = sent >= measure_from && !stop.load(Ordering::Relaxed);
        if answer.is_ok() {
            t.calls += 1;
        }
        match answer {
            Ok((status, b)) if succeeded(a.binding, status, &b) => {
                if a.fresh {
                    conn = None;
                }
                if counted {
                    t.latencies_us
                        .push(u32::try_from(took.as_micros()).unwrap_or(u32::MAX));
                    t.bytes += b.len() as u64;
                }
            }
            Ok((status, b)) => {
                if a.fresh {
                    conn = None;
                }
                t.errors += 1;
                t.first_error.get_or_insert_with(|| {
                    format!("HTTP {status}: {}", String::from_utf8_lossy(&b))
                });
            }
            Err(e) => {
                // A broken connection is reopened; the failed call counts as an error.
                t.errors += 1;
                t.first_error.get_or_insert(e);
                conn = None;
            }
        }
    }
    t
}

fn percentile(sorted: &[u32], p: f64) -> u32 {
    if sorted.is_empty() {
        return 0;
    }
    let rank = ((p / 100.0) * sorted.len() as f64).ceil() as usize;
    sorted[rank.clamp(1, sorted.len()) - 1]
}

fn run(a: Args) -> Result<Value, String> {
    if a.grpc {
        if a.tls.is_some() || a.fresh || a.file_bytes > 0 {
            return Err("--binding grpc is plain loopback, kept connections, text only".into());
        }
        return grpc::run(a);
    }
    // Set-up on its own connection: a task to read, and a check that the server answers as
    // expected before anything is timed.
    let mut setup = Conn::open(&a)?;
    let base = setup.base.clone();
    let setup_send = send_call(
        a.binding,
        &base,
        &format!("bench-setup-{}", run_nonce()),
        None,
    );
    let (status, body) = setup.call(&setup_send)?;
    let created = result_of(a.binding, status, &body)?;
    let task_id = created["task"]["id"]
        .as_str()
        .ok_or_else(|| format!("SendMessage did not answer a task: {created}"))?
        .to_owned();
    // With `--fresh` each connection carries one call.
    let mut setup = Conn::open(&a)?;
    let (status, body) = setup.call(&get_call(a.binding, &base, &task_id))?;
    let got = result_of(a.binding, status, &body)?;
    if got["id"] != task_id.as_str() {
        return Err(format!("GetTask({task_id}) answered {got}"));
    }
    drop(setup);

    let stop = Arc::new(AtomicBool::new(false));
    let nonce = run_nonce();
    let start = Instant::now();
    let threads: Vec<_> = (0..a.connections)
        .map(|i| {
            let (a, id, stop) = (a.clone(), task_id.clone(), stop.clone());
            std::thread::spawn(move || worker(&a, i, &id, nonce, start, &stop))
        })
        .collect();
    std::thread::sleep(Duration::from_secs_f64(a.warmup + a.seconds));
    stop.store(true, Ordering::Relaxed);
    let mut all = Vec::new();
    let (mut errors, mut bytes, mut calls, mut first_error) = (0, 0, 0, None);
    for t in threads {
        let t = t.join().map_err(|_| "a load thread panicked")?;
        all.extend(t.latencies_us);
        errors += t.errors;
        bytes += t.bytes;
        calls += t.calls;
        if first_error.is_none() {
            first_error = t.first_error;
        }
    }
    all.sort_unstable();
    let n = all.len() as f64;
    Ok(json!({
        "label": a.label,
        "method": match a.method {
            Method::Get => "GetTask",
            Method::Send if a.file_bytes > 0 => "SendMessage+file",
            Method::Send => "SendMessage",
        },
        "fileBytes": a.file_bytes,
        "binding": match a.binding { Binding::JsonRpc => "JSONRPC", Binding::Rest => "HTTP+JSON" },
        "connections": a.connections,
        "seconds": a.seconds,
        "requests": all.len(),
        "calls": calls,
        "errors": errors,
        "firstError": first_error,
        "rps": (n / a.seconds).round(),
        "p50Us": percentile(&all, 50.0),
        "p99Us": percentile(&all, 99.0),
        "meanBodyBytes": if all.is_empty() { 0 } else { bytes / all.len() as u64 },
        "tls": a.tls.is_some(),
        "fresh": a.fresh,
    }))
}

fn main() -> std::process::ExitCode {
    let result = parse_args().and_then(run);
    match result {
        Ok(line) => {
            println!("{line}");
            std::process::ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("a2a_load: {e}");
            std::process::ExitCode::FAILURE
        }
    }
}
