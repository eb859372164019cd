//! The load generator's gRPC binding: the same two calls through `a2a-pb`'s generated client
//! (tonic, HTTP/2 without TLS on loopback), one channel (one HTTP/2 connection) per load
//! thread, each thread on a runtime of its own so the client stays as cheap as the HTTP/1.1
//! one. `--url http://127.0.0.1:PORT/a2a/DESK` names the daemon and, as the tenant, the desk.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use a2a_pb::proto;
use a2a_pb::proto::a2a_service_client::A2aServiceClient;
use prost::Message as _;
use serde_json::{Value, json};
use tonic::transport::Channel;

use super::{Args, Method, Tally, percentile, run_nonce};

fn runtime() -> Result<tokio::runtime::Runtime, String> {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| format!("a runtime for the gRPC client: {e}"))
}

async fn connect(a: &Args) -> Result<A2aServiceClient<Channel>, String> {
    let channel = tonic::transport::Endpoint::from_shared(format!("http://{}:{}", a.host, a.port))
        .map_err(|e| format!("the gRPC target: {e}"))?
        .connect()
        .await
        .map_err(|e| format!("connecting over gRPC: {e}"))?;
    Ok(A2aServiceClient::new(channel))
}

/// The desk the URL's path names (`/a2a/DESK`), sent as the tenant.
fn tenant(a: &Args) -> String {
    a.path
        .trim_matches('/')
        .rsplit('/')
        .next()
        .unwrap_or_default()
        .to_owned()
}

fn with<T>(a: &Args, message: T) -> tonic::Request<T> {
    let mut request = tonic::Request::new(message);
    if let Some(Ok(bearer)) = a.token.as_ref().map(|t| format!("Bearer {t}").parse()) {
        request.metadata_mut().insert("authorization", bearer);
    }
    request
}

fn send_request(tenant: &str, message_id: String) -> proto::SendMessageRequest {
    proto::SendMessageRequest {
        tenant: tenant.to_owned(),
        message: Some(proto::Message {
            message_id,
            role: proto::Role::User as i32,
            parts: vec![proto::Part {
                content: Some(proto::part::Content::Text("Benchmark task.".to_owned())),
                ..Default::default()
            }],
            ..Default::default()
        }),
        configuration: Some(proto::SendMessageConfiguration {
            return_immediately: true,
            ..Default::default()
        }),
        ..Default::default()
    }
}

/// One call; the reply's encoded size.
async fn call(
    a: &Args,
    client: &mut A2aServiceClient<Channel>,
    tenant: &str,
    task_id: &str,
    message_id: String,
) -> Result<usize, tonic::Status> {
    Ok(match a.method {
        Method::Get => {
            let request = proto::GetTaskRequest {
                tenant: tenant.to_owned(),
                id: task_id.to_owned(),
                history_length: None,
            };
            client
                .get_task(with(a, request))
                .await?
                .into_inner()
                .encoded_len()
        }
        Method::Send => client
            .send_message(with(a, send_request(tenant, message_id)))
            .await?
            .into_inner()
            .encoded_len(),
    })
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
    let rt = match runtime() {
        Ok(rt) => rt,
        Err(e) => {
            t.errors += 1;
            t.first_error = Some(e);
            return t;
        }
    };
    let measure_from = start + Duration::from_secs_f64(a.warmup);
    let tenant = tenant(a);
    rt.block_on(async {
        let mut client = match connect(a).await {
            Ok(c) => c,
            Err(e) => {
                t.errors += 1;
                t.first_error = Some(e);
                return;
            }
        };
        let mut n = 0u64;
        while !stop.load(Ordering::Relaxed) {
            n += 1;
            let sent = Instant::now();
            let answer = call(
                a,
                &mut client,
                &tenant,
                task_id,
                format!("bench-grpc-{nonce}-{index}-{n}"),
            )
            .await;
            let took = sent.elapsed();
            let counted = sent >= measure_from && !stop.load(Ordering::Relaxed);
            match answer {
                Ok(bytes) => {
                    t.calls += 1;
                    if counted {
                        t.latencies_us
                            .push(u32::try_from(took.as_micros()).unwrap_or(u32::MAX));
                        t.bytes += bytes as u64;
                    }
                }
                Err(e) => {
                    t.errors += 1;
                    t.first_error.get_or_insert_with(|| e.to_string());
                }
            }
        }
    });
    t
}

pub(super) fn run(a: Args) -> Result<Value, String> {
    let tenant = tenant(&a);
    let task_id = runtime()?.block_on(async {
        let mut client = connect(&a).await?;
        let sent = client
            .send_message(with(
                &a,
                send_request(&tenant, format!("bench-grpc-setup-{}", run_nonce())),
            ))
            .await
            .map_err(|e| format!("the setup SendMessage over gRPC: {e}"))?
            .into_inner();
        match sent.payload {
            Some(proto::send_message_response::Payload::Task(t)) => Ok::<_, String>(t.id),
            other => Err(format!("SendMessage did not answer a task: {other:?}")),
        }
    })?;

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
        "method": match a.method { Method::Get => "GetTask", Method::Send => "SendMessage" },
        "fileBytes": 0,
        "binding": "GRPC",
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
        "tls": false,
        "fresh": false,
    }))
}
