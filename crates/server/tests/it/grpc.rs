//! A2A's gRPC binding against a live daemon, through the official Rust SDK's generated client
//! (`a2a-pb`'s `A2aServiceClient` over a tonic channel, HTTP/2 on the loopback port): the
//! card names the interface and the desk as its tenant; send, get, list, cancel, a streaming
//! send and a subscription; the bearer in metadata, refused as the rooms refuse; the errors
//! as the spec's gRPC codes with their ErrorInfo; the limits; the conformance desk's callers
//! without a token.

use a2a_pb::proto;
use a2a_pb::proto::a2a_service_client::A2aServiceClient;
use serde_json::json;
use tokio_stream::StreamExt as _;
use tonic::transport::{Channel, Endpoint};
use tonic::{Code, Status};
use tonic_types::StatusExt as _;

use crate::support::{Pinned, TOKEN, TestDaemon, network};

/// A gRPC client of `d` on a runtime of its own.
struct Client {
    rt: tokio::runtime::Runtime,
    stub: A2aServiceClient<Channel>,
}

impl Client {
    /// A client of the network listener at `addr` over TLS, trusting `pem` alone, that names
    /// `authority` as the server it calls (HTTP/2's `:authority`).
    fn over_tls(addr: std::net::SocketAddr, pem: &[u8], authority: &str) -> Self {
        use tonic::transport::{Certificate, ClientTlsConfig};
        let tls = ClientTlsConfig::new()
            .ca_certificate(Certificate::from_pem(pem))
            .domain_name("127.0.0.1");
        let endpoint = Endpoint::from_shared(format!("https://{addr}"))
            .unwrap()
            .origin(format!("https://{authority}").parse().unwrap())
            .tls_config(tls)
            .unwrap();
        Self::connect(endpoint)
    }

    fn of(d: &TestDaemon) -> Self {
        Self::connect(Endpoint::from_shared(format!("http://{}", d.addr)).unwrap())
    }

    fn connect(endpoint: Endpoint) -> Self {
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
            .unwrap();
        let channel = rt.block_on(async { endpoint.connect().await.unwrap() });
        Self {
            rt,
            stub: A2aServiceClient::new(channel),
        }
    }
}

/// `message` with `token` as its bearer in the `authorization` metadata.
fn with<T>(message: T, token: Option<&str>) -> tonic::Request<T> {
    let mut request = tonic::Request::new(message);
    if let Some(t) = token {
        request
            .metadata_mut()
            .insert("authorization", format!("Bearer {t}").parse().unwrap());
    }
    request
}

fn subscription(
    tenant: &str,
    id: &str,
    token: &str,
) -> tonic::Request<proto::SubscribeToTaskRequest> {
    with(
        proto::SubscribeToTaskRequest {
            tenant: tenant.to_owned(),
            id: id.to_owned(),
        },
        Some(token),
    )
}

/// Task `id` on the desk `web`, as `token`'s GetTask answers it.
async fn task_of(stub: &mut A2aServiceClient<Channel>, id: &str, token: &str) -> proto::Task {
    stub.get_task(with(get(id, "web"), Some(token)))
        .await
        .unwrap()
        .into_inner()
}

/// A subscription to task `id`, its first item (the Task) taken.
async fn watch(
    stub: &mut A2aServiceClient<Channel>,
    tenant: &str,
    id: &str,
    token: &str,
) -> tonic::Streaming<proto::StreamResponse> {
    let mut watching = stub
        .subscribe_to_task(subscription(tenant, id, token))
        .await
        .unwrap()
        .into_inner();
    let first = watching.next().await.unwrap().unwrap();
    assert!(
        matches!(
            first.payload,
            Some(proto::stream_response::Payload::Task(_))
        ),
        "a subscription begins with the task: {first:?}"
    );
    watching
}

fn text_message(id: &str, text: &str) -> proto::Message {
    proto::Message {
        message_id: id.to_owned(),
        role: proto::Role::User as i32,
        parts: vec![proto::Part {
            content: Some(proto::part::Content::Text(text.to_owned())),
            ..Default::default()
        }],
        ..Default::default()
    }
}

fn send_request(tenant: &str, id: &str, text: &str) -> proto::SendMessageRequest {
    proto::SendMessageRequest {
        tenant: tenant.to_owned(),
        message: Some(text_message(id, text)),
        configuration: Some(proto::SendMessageConfiguration {
            return_immediately: true,
            ..Default::default()
        }),
        ..Default::default()
    }
}

fn the_task(response: proto::SendMessageResponse) -> proto::Task {
    match response.payload {
        Some(proto::send_message_response::Payload::Task(t)) => t,
        other => panic!("a task, not {other:?}"),
    }
}

/// The status's code and its ErrorInfo's reason and domain.
fn refusal(status: &Status) -> (Code, String, String) {
    match status.get_details_error_info() {
        Some(info) => (status.code(), info.reason, info.domain),
        None => (status.code(), String::new(), String::new()),
    }
}

fn get(id: &str, tenant: &str) -> proto::GetTaskRequest {
    proto::GetTaskRequest {
        tenant: tenant.to_owned(),
        id: id.to_owned(),
        history_length: None,
    }
}

/// `card` names one GRPC interface: `127.0.0.1:port`, with `tenant`.
fn assert_grpc_interface(card: &serde_json::Value, port: u16, tenant: &str) {
    let grpc: Vec<_> = card["supportedInterfaces"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|i| i["protocolBinding"] == "GRPC")
        .collect();
    assert_eq!(
        grpc,
        [
            &json!({"url": format!("127.0.0.1:{port}"), "protocolBinding": "GRPC",
                 "protocolVersion": "1.0", "tenant": tenant})
        ],
        "{card}"
    );
}

#[test]
fn a_desks_card_names_its_grpc_interface_with_the_desk_as_tenant() {
    let d = TestDaemon::start();
    d.with_desk("web");
    let (code, card) = d.call("GET", "/a2a/web/.well-known/agent-card.json", None);
    assert_eq!(code, 200, "{card}");
    assert_grpc_interface(&card, d.addr.port(), "web");
    let (_, machine) = d.call("GET", "/.well-known/agent-card.json", None);
    let machine_grpc = machine["supportedInterfaces"]
        .as_array()
        .unwrap()
        .iter()
        .find(|i| i["protocolBinding"] == "GRPC")
        .cloned()
        .unwrap();
    assert!(machine_grpc.get("tenant").is_none(), "{machine_grpc}");
}

#[test]
fn an_asker_sends_gets_lists_and_cancels_its_tasks_over_grpc() {
    let d = TestDaemon::start();
    d.with_desk("web");
    let alice = d.add_asker("alice");
    let bob = d.add_asker("bob");
    let mut c = Client::of(&d);
    let task = c.rt.block_on(async {
        let sent = c
            .stub
            .send_message(with(send_request("web", "m-1", "add a flag"), Some(&alice)))
            .await
            .unwrap();
        the_task(sent.into_inner())
    });
    let state = task.status.as_ref().unwrap().state();
    assert!(
        matches!(
            state,
            proto::TaskState::Submitted | proto::TaskState::Working
        ),
        "{state:?}"
    );
    assert_eq!(d.task(&task.id)["desk"], "web");

    c.rt.block_on(async {
        let got = task_of(&mut c.stub, &task.id, &alice).await;
        assert_eq!(got.id, task.id);
        assert_eq!(
            got.history[0].parts[0].content,
            task.history[0].parts[0].content
        );
        // No tenant is the machine endpoint: the caller's tasks on any desk.
        let anywhere = c.stub.get_task(with(get(&task.id, ""), Some(&alice))).await;
        assert_eq!(anywhere.unwrap().into_inner().id, task.id);

        // Another asker's task is not found, with the spec's code and ErrorInfo.
        let theirs = c
            .stub
            .get_task(with(get(&task.id, "web"), Some(&bob)))
            .await;
        assert_eq!(
            refusal(&theirs.unwrap_err()),
            (
                Code::NotFound,
                "TASK_NOT_FOUND".into(),
                "a2a-protocol.org".into()
            )
        );

        let listed = c
            .stub
            .list_tasks(with(
                proto::ListTasksRequest {
                    tenant: "web".into(),
                    context_id: task.context_id.clone(),
                    ..Default::default()
                },
                Some(&alice),
            ))
            .await
            .unwrap()
            .into_inner();
        assert_eq!(
            listed
                .tasks
                .iter()
                .map(|t| t.id.as_str())
                .collect::<Vec<_>>(),
            [task.id.as_str()]
        );

        let cancel = || proto::CancelTaskRequest {
            tenant: "web".into(),
            id: task.id.clone(),
            metadata: None,
        };
        let canceled = c
            .stub
            .cancel_task(with(cancel(), Some(&alice)))
            .await
            .unwrap()
            .into_inner();
        assert_eq!(canceled.status.unwrap().state(), proto::TaskState::Canceled);
        // Canceling again is no change; a task the worker finished is not cancelable.
        let again = c.stub.cancel_task(with(cancel(), Some(&alice))).await;
        assert_eq!(
            again.unwrap().into_inner().status.unwrap().state(),
            proto::TaskState::Canceled
        );
        let done = the_task(
            c.stub
                .send_message(with(send_request("web", "m-2", "another"), Some(&alice)))
                .await
                .unwrap()
                .into_inner(),
        );
        let (code, body) = d.call(
            "POST",
            &format!("/api/tasks/{}/update", done.id),
            Some(&json!({"status": "done", "text": "All done"})),
        );
        assert_eq!(code, 200, "{body}");
        let finished = c
            .stub
            .cancel_task(with(
                proto::CancelTaskRequest {
                    tenant: "web".into(),
                    id: done.id.clone(),
                    metadata: None,
                },
                Some(&alice),
            ))
            .await;
        assert_eq!(
            refusal(&finished.unwrap_err()),
            (
                Code::FailedPrecondition,
                "TASK_NOT_CANCELABLE".into(),
                "a2a-protocol.org".into()
            )
        );
    });
}

#[test]
fn a_streaming_send_and_a_subscription_follow_the_task_to_its_end() {
    let d = TestDaemon::start();
    d.with_desk("web");
    let alice = d.add_asker("alice");
    let mut c = Client::of(&d);
    c.rt.block_on(async {
        let mut request = send_request("web", "m-1", "stream it");
        request.configuration = None;
        let mut sent = c
            .stub
            .send_streaming_message(with(request, Some(&alice)))
            .await
            .unwrap()
            .into_inner();
        let first = sent.next().await.unwrap().unwrap();
        let Some(proto::stream_response::Payload::Task(task)) = first.payload else {
            panic!("the first item is the task: {first:?}");
        };

        let mut watching = watch(&mut c.stub, "web", &task.id, &alice).await;

        c.stub
            .cancel_task(with(
                proto::CancelTaskRequest {
                    tenant: "web".into(),
                    id: task.id.clone(),
                    metadata: None,
                },
                Some(&alice),
            ))
            .await
            .unwrap();
        // Both streams see the cancel as their last item, then end.
        for stream in [&mut sent, &mut watching] {
            let mut last = None;
            while let Some(item) = stream.next().await {
                last = Some(item.unwrap());
            }
            let Some(proto::stream_response::Payload::StatusUpdate(update)) =
                last.and_then(|l| l.payload)
            else {
                panic!("the stream ends with a status update");
            };
            assert_eq!(update.status.unwrap().state(), proto::TaskState::Canceled);
        }

        // A subscription to an ended task is refused as UnsupportedOperationError.
        let ended = c
            .stub
            .subscribe_to_task(subscription("web", &task.id, &alice))
            .await;
        assert_eq!(refusal(&ended.expect_err("refused")).0, Code::Unimplemented);
    });
}

#[test]
fn grpc_takes_the_bearer_from_metadata_and_refuses_as_the_rooms_do() {
    let d = TestDaemon::start();
    d.with_desk("web");
    let alice = d.add_asker("alice");
    let worker = d.daemon().worker_token().as_str().to_owned();
    let mut c = Client::of(&d);
    c.rt.block_on(async {
        for (token, code) in [
            (None, Code::Unauthenticated),
            (Some("not-a-token"), Code::Unauthenticated),
            (Some(worker.as_str()), Code::PermissionDenied),
        ] {
            let got = c
                .stub
                .send_message(with(send_request("web", "m-1", "hi"), token))
                .await;
            let status = got.unwrap_err();
            assert_eq!(status.code(), code, "{token:?}: {status:?}");
            assert!(!status.message().is_empty());
        }
        // The owner and an asker are let in.
        for token in [TOKEN, alice.as_str()] {
            let sent = c
                .stub
                .send_message(with(
                    send_request("web", &format!("m-{token}"), "hi"),
                    Some(token),
                ))
                .await;
            assert!(sent.is_ok(), "{sent:?}");
        }
    });
}

#[test]
fn the_limits_and_the_versions_answer_with_grpc_codes() {
    let d = TestDaemon::start();
    d.with_desk("web");
    d.set_setting("a2a.streams_per_caller", "1");
    let alice = d.add_asker("alice");
    let mut c = Client::of(&d);
    c.rt.block_on(async {
        let task = the_task(
            c.stub
                .send_message(with(send_request("web", "m-1", "hold"), Some(&alice)))
                .await
                .unwrap()
                .into_inner(),
        );
        let subscribe = || {
            with(
                proto::SubscribeToTaskRequest {
                    tenant: "web".into(),
                    id: task.id.clone(),
                },
                Some(&alice),
            )
        };
        let mut open = c
            .stub
            .subscribe_to_task(subscribe())
            .await
            .unwrap()
            .into_inner();
        open.next().await.unwrap().unwrap();
        let second = c.stub.subscribe_to_task(subscribe()).await;
        let (code, reason, domain) = refusal(&second.expect_err("refused"));
        assert_eq!(code, Code::ResourceExhausted);
        assert_eq!(reason, "STREAMS_PER_CALLER_LIMIT");
        assert_ne!(domain, "a2a-protocol.org");
        drop(open);

        let no_desk = c
            .stub
            .send_message(with(send_request("nowhere", "m-2", "hi"), Some(&alice)))
            .await;
        assert_eq!(no_desk.unwrap_err().code(), Code::NotFound);
        let no_parts = c
            .stub
            .send_message(with(
                proto::SendMessageRequest {
                    tenant: "web".into(),
                    message: Some(proto::Message {
                        parts: vec![],
                        ..text_message("m-3", "")
                    }),
                    ..Default::default()
                },
                Some(&alice),
            ))
            .await;
        assert_eq!(no_parts.unwrap_err().code(), Code::InvalidArgument);

        let mut old = with(get(&task.id, "web"), Some(&alice));
        old.metadata_mut()
            .insert("a2a-version", "0.3".parse().unwrap());
        let (code, reason, _) = refusal(&c.stub.get_task(old).await.unwrap_err());
        assert_eq!(
            (code, reason.as_str()),
            (Code::Unimplemented, "VERSION_NOT_SUPPORTED")
        );
    });
}

#[test]
fn the_conformance_desk_takes_callers_without_a_token_over_grpc_and_only_there() {
    let d = TestDaemon::start_configured(|c| c.conformance = true);
    d.with_desk("web");
    let mut c = Client::of(&d);
    c.rt.block_on(async {
        // No tenant (the kit sends none) is the conformance desk for them.
        let task = the_task(
            c.stub
                .send_message(with(send_request("", "m-1", "hello"), None))
                .await
                .unwrap()
                .into_inner(),
        );
        let got = c.stub.get_task(with(get(&task.id, "tck"), None)).await;
        assert_eq!(got.unwrap().into_inner().id, task.id);
        let elsewhere = c
            .stub
            .send_message(with(send_request("web", "m-2", "hello"), None))
            .await;
        assert_eq!(elsewhere.unwrap_err().code(), Code::PermissionDenied);
    });
    assert_eq!(d.task(&the_id_of_first(&d))["desk"], "tck");
}

/// The one task the owner API lists.
fn the_id_of_first(d: &TestDaemon) -> String {
    let (_, body) = d.call("GET", "/api/tasks", None);
    body["tasks"][0]["id"].as_str().unwrap().to_owned()
}

/// STREAM-SUB-001 as the kit's gRPC test sets it up: a subscription to a task waiting on its
/// asker begins with the Task, and it stays open (the spec closes a subscription at a terminal
/// state only), so the subscriber sees the answer's work through to its end.
#[test]
fn a_subscription_begins_with_the_task_and_stays_open_while_it_waits_on_its_asker() {
    let d = TestDaemon::start();
    d.with_desk("web");
    let alice = d.add_asker("alice");
    let mut c = Client::of(&d);
    let task = c.rt.block_on(async {
        c.stub
            .send_message(with(
                send_request("web", "m-1", "which format?"),
                Some(&alice),
            ))
            .await
            .unwrap()
            .into_inner()
    });
    let Some(proto::send_message_response::Payload::Task(task)) = task.payload else {
        panic!("SendMessage answers a task");
    };
    let (code, body) = d.call(
        "POST",
        &format!("/api/tasks/{}/update", task.id),
        Some(&json!({"status": "blocked", "text": "JSON or YAML?"})),
    );
    assert_eq!(code, 200, "{body}");

    c.rt.block_on(async {
        let mut watching = c
            .stub
            .subscribe_to_task(subscription("web", &task.id, &alice))
            .await
            .unwrap()
            .into_inner();
        let first = watching.next().await.unwrap().unwrap();
        let Some(proto::stream_response::Payload::Task(now)) = first.payload else {
            panic!("the first item is the task: {first:?}");
        };
        assert_eq!(now.status.unwrap().state(), proto::TaskState::InputRequired);

        // The asker answers with a plain send; the open subscription sees the task go back
        // to work and then end, and ends there.
        let mut answer = send_request("web", "m-2", "JSON");
        answer.message.as_mut().unwrap().task_id = task.id.clone();
        c.stub
            .send_message(with(answer, Some(&alice)))
            .await
            .unwrap();
        let (code, body) = d.call(
            "POST",
            &format!("/api/tasks/{}/update", task.id),
            Some(&json!({"status": "done", "text": "JSON it is"})),
        );
        assert_eq!(code, 200, "{body}");
        let mut states = Vec::new();
        while let Some(item) = watching.next().await {
            if let Some(proto::stream_response::Payload::StatusUpdate(u)) = item.unwrap().payload {
                states.push(u.status.unwrap().state());
            }
        }
        assert_eq!(
            states,
            [proto::TaskState::Working, proto::TaskState::Completed],
            "the subscription follows the answer's work to the end"
        );
    });
}

/// An asker on another machine calls gRPC on the network listener: the card it fetched there
/// names the listener as the GRPC interface (HTTP/2 by ALPN over the same TLS), and the
/// front's refusals hold for gRPC as for the other bindings, as gRPC statuses: a foreign
/// `:authority`, the owner's token, a wrong token. Behind a proxy (plain HTTP, HTTP/1.1 to
/// us) no GRPC interface is named.
#[test]
fn an_asker_on_the_network_listener_calls_grpc_over_its_tls_and_meets_the_same_front() {
    let d = TestDaemon::start_configured(|c| {
        c.network = Some(network(&[("network.listen", "127.0.0.1:0")]))
    });
    d.with_desk("web");
    let alice = d.add_asker("alice");
    let addr = d.network_addr();
    let pem = d.self_signed_pem();
    let card = Pinned::new(&[&pem])
        .exchange(
            addr,
            "127.0.0.1",
            "GET",
            "/a2a/web/.well-known/agent-card.json",
            &[],
            "",
        )
        .json();
    assert_grpc_interface(&card, addr.port(), "web");

    let mut c = Client::over_tls(addr, &pem, &format!("127.0.0.1:{}", addr.port()));
    c.rt.block_on(async {
        let task = the_task(
            c.stub
                .send_message(with(send_request("web", "m-1", "from afar"), Some(&alice)))
                .await
                .unwrap()
                .into_inner(),
        );
        let got = task_of(&mut c.stub, &task.id, &alice).await;
        assert_eq!(got.id, task.id);
        let _watching = watch(&mut c.stub, "web", &task.id, &alice).await;

        // The owner's token stays on this machine; a wrong token is not an asker's.
        let owner = c
            .stub
            .get_task(with(get(&task.id, "web"), Some(TOKEN)))
            .await;
        let owner = owner.expect_err("the owner's token is refused");
        assert_eq!(owner.code(), Code::PermissionDenied, "{owner:?}");
        assert!(owner.message().contains("askers' tokens only"), "{owner:?}");
        let wrong = c
            .stub
            .get_task(with(get(&task.id, "web"), Some("not-a-token")))
            .await
            .expect_err("a wrong token is refused");
        assert_eq!(wrong.code(), Code::Unauthenticated, "{wrong:?}");
    });
    drop(c);

    // A call that names another server than this listener.
    let mut foreign = Client::over_tls(addr, &pem, "evil.example:443");
    foreign.rt.block_on(async {
        let refused = foreign
            .stub
            .get_task(with(get("any", "web"), Some(&alice)))
            .await
            .expect_err("a foreign authority is refused");
        assert_eq!(refused.code(), Code::PermissionDenied, "{refused:?}");
        assert!(
            refused.message().contains("is not this listener"),
            "{refused:?}"
        );
    });

    // Behind a proxy the listener speaks plain HTTP/1.1, and its cards name no gRPC.
    let proxied = TestDaemon::start_configured(|c| {
        c.network = Some(network(&[
            ("network.listen", "127.0.0.1:0"),
            ("network.tls", "proxy"),
            ("network.public_url", "https://tasks.example"),
            ("network.trusted_proxies", "127.0.0.1"),
        ]))
    });
    proxied.with_desk("web");
    let addr = proxied.network_addr();
    let mut s = std::net::TcpStream::connect(addr).unwrap();
    use std::io::{Read as _, Write as _};
    write!(
        s,
        "GET /a2a/web/.well-known/agent-card.json HTTP/1.1\r\nHost: tasks.example\r\nConnection: close\r\n\r\n"
    )
    .unwrap();
    let mut answer = String::new();
    s.read_to_string(&mut answer).unwrap();
    let body = &answer[answer.find("\r\n\r\n").unwrap() + 4..];
    let card: serde_json::Value = serde_json::from_str(body).unwrap();
    assert!(
        card["supportedInterfaces"]
            .as_array()
            .unwrap()
            .iter()
            .all(|i| i["protocolBinding"] != "GRPC"),
        "{card}"
    );
}
