//! The decoders at the daemon's edges under random input. The JSON-RPC decoder: whatever
//! arrives, the daemon answers with a well-formed JSON-RPC response (a result, or an error
//! with a known code), never a panic, a hang or a bare HTTP error for a readable body. The
//! hook intakes (Claude Code's, the generic report, Codex's and Gemini's, each with its own
//! events): a payload is taken (200) or refused (a 4xx in our error shape), never a 5xx.
//! MCP tool inputs: any arguments to any tool get a JSON-RPC answer (a tool result, maybe
//! an error result, or a JSON-RPC error), never a 5xx. After every case the daemon still
//! answers.

use std::sync::OnceLock;

use proptest::prelude::*;

/// Each property's run: in CI a fixed number of cases from a fixed seed, so a run is the same
/// every time; `TASKKEEPER_FUZZ_CASES` (what `bench/soak/run.sh` sets) runs more, from a
/// random seed unless `TASKKEEPER_FUZZ_SEED` names one (a failure prints the seed to replay).
fn config(cases: u32) -> ProptestConfig {
    let env = |name: &str| std::env::var(name).ok().and_then(|v| v.parse::<u64>().ok());
    let soak = env("TASKKEEPER_FUZZ_CASES");
    let seed = match (env("TASKKEEPER_FUZZ_SEED"), soak) {
        (Some(seed), _) => proptest::test_runner::RngSeed::Fixed(seed),
        (None, Some(_)) => proptest::test_runner::RngSeed::Random,
        (None, None) => proptest::test_runner::RngSeed::Fixed(0x7a5c_4ee9),
    };
    ProptestConfig {
        cases: soak.map_or(cases, |n| u32::try_from(n).unwrap_or(u32::MAX)),
        rng_seed: seed,
        ..ProptestConfig::default()
    }
}
use serde_json::{Value, json};

use crate::support::{TOKEN, TestDaemon};

/// One daemon for all cases: starting one per case would dominate the run.
fn daemon() -> &'static TestDaemon {
    static D: OnceLock<TestDaemon> = OnceLock::new();
    D.get_or_init(|| {
        let d = TestDaemon::start();
        d.with_desk("web");
        d
    })
}

const KNOWN_CODES: [i64; 15] = [
    -32700, -32600, -32601, -32602, -32603, -32000, -32001, -32002, -32003, -32004, -32005, -32006,
    -32007, -32008, -32009,
];

fn arb_json() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(|n| json!(n)),
        "[a-zA-Z_ -]{0,12}".prop_map(Value::String),
        prop_oneof![
            Just("TASK_STATE_WORKING"),
            Just("ROLE_USER"),
            Just("user"),
            Just("text"),
            Just("2.0")
        ]
        .prop_map(|s| json!(s)),
    ];
    leaf.prop_recursive(3, 24, 4, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
            prop::collection::btree_map(
                prop_oneof![
                    Just("message".to_owned()),
                    Just("messageId".to_owned()),
                    Just("role".to_owned()),
                    Just("parts".to_owned()),
                    Just("text".to_owned()),
                    Just("id".to_owned()),
                    Just("taskId".to_owned()),
                    Just("configuration".to_owned()),
                    Just("pageSize".to_owned()),
                    Just("kind".to_owned()),
                    "[a-z]{1,6}",
                ],
                inner,
                0..5
            )
            .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

fn arb_method() -> impl Strategy<Value = String> {
    prop_oneof![
        Just("SendMessage".to_owned()),
        Just("GetTask".to_owned()),
        Just("ListTasks".to_owned()),
        Just("CancelTask".to_owned()),
        Just("AckTask".to_owned()),
        Just("message/send".to_owned()),
        Just("tasks/get".to_owned()),
        Just("tasks/cancel".to_owned()),
        "[A-Za-z/]{0,16}",
    ]
}

fn check_answer(status: u16, text: &str) -> Result<(), TestCaseError> {
    prop_assert!([200, 404].contains(&status), "HTTP {status}: {text}");
    let v: Value =
        serde_json::from_str(text).map_err(|e| TestCaseError::fail(format!("{e}: {text}")))?;
    prop_assert_eq!(&v["jsonrpc"], "2.0");
    match v.get("error") {
        Some(e) => {
            let code = e["code"].as_i64().unwrap_or(0);
            prop_assert!(KNOWN_CODES.contains(&code), "unknown code: {v}");
            prop_assert!(e["message"].as_str().is_some_and(|m| !m.is_empty()));
        }
        None => prop_assert!(v.get("result").is_some(), "neither result nor error: {v}"),
    }
    Ok(())
}

fn post(body: &str, version: Option<&str>) -> (u16, String) {
    let d = daemon();
    let mut headers = vec![
        ("Authorization".to_owned(), format!("Bearer {TOKEN}")),
        ("Content-Type".to_owned(), "application/json".to_owned()),
    ];
    if let Some(v) = version {
        headers.push(("A2A-Version".to_owned(), v.to_owned()));
    }
    d.raw("POST", "/a2a/web", &d.host(), &headers, body)
}

proptest! {
    #![proptest_config(config(200))]

    #[test]
    fn any_params_to_any_method_get_a_json_rpc_answer(
        method in arb_method(),
        params in arb_json(),
        id in prop_oneof![Just(json!(1)), Just(json!("x")), Just(Value::Null), Just(json!([1]))],
        version in prop_oneof![Just(None), Just(Some("1.0")), Just(Some("0.3")), Just(Some("7"))],
    ) {
        let body = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
        let (status, text) = post(&body.to_string(), version);
        check_answer(status, &text)?;
    }

    #[test]
    fn arbitrary_bodies_get_a_json_rpc_error(body in prop_oneof![
        ".{0,64}",
        arb_json().prop_map(|v| v.to_string()),
    ]) {
        let (status, text) = post(&body, Some("1.0"));
        check_answer(status, &text)?;
        let v: Value = serde_json::from_str(&text).unwrap_or(Value::Null);
        prop_assert!(v.get("error").is_some(), "{body} → {text}");
    }
}

const HOOK_EVENTS: [&str; 8] = [
    "SessionStart",
    "UserPromptSubmit",
    "PreToolUse",
    "PostToolUse",
    "Stop",
    "StopFailure",
    "SessionEnd",
    "Notification",
];

/// Codex CLI's hooks and Gemini CLI's (`core::agent_hooks::read`), for their routes.
const CODEX_EVENTS: [&str; 8] = [
    "SessionStart",
    "UserPromptSubmit",
    "PreToolUse",
    "PostToolUse",
    "PermissionRequest",
    "Stop",
    "Interrupt",
    "SessionEnd",
];
const GEMINI_EVENTS: [&str; 11] = [
    "SessionStart",
    "BeforeAgent",
    "BeforeTool",
    "AfterTool",
    "AfterAgent",
    "Notification",
    "BeforeModel",
    "AfterModel",
    "BeforeToolSelection",
    "PreCompress",
    "SessionEnd",
];

/// The fields Codex's and Gemini's hooks carry that the intake reads.
const HOOK_FIELDS: [&str; 9] = [
    "last_assistant_message",
    "prompt_response",
    "notification_type",
    "stop_hook_active",
    "mcp_context",
    "source",
    "reason",
    "prompt",
    "model",
];

fn arb_hook() -> impl Strategy<Value = Value> {
    arb_hook_of(&HOOK_EVENTS)
}

/// A hook payload of one of `events` with a session, a directory and anything besides: mostly
/// a readable event, session and directory, so most cases get past the checks to what the
/// hook does; the rest are anything.
fn arb_hook_of(events: &[&'static str]) -> impl Strategy<Value = Value> + use<> {
    (
        prop_oneof![
            6 => proptest::sample::select(events.to_vec()).prop_map(|e| json!(e)),
            1 => arb_json()
        ],
        prop_oneof![
            6 => "s-[a-z0-9]{1,8}".prop_map(|s| json!(s)),
            1 => ".{0,24}".prop_map(|s| json!(s)),
            1 => arb_json()
        ],
        prop_oneof![
            6 => Just(json!("/tmp/fuzz")),
            1 => ".{0,16}".prop_map(|s| json!(s)),
            1 => arb_json()
        ],
        arb_json(),
    )
        .prop_map(|(event, session, cwd, extra)| {
            let mut body = json!({"hook_event_name": event, "session_id": session, "cwd": cwd});
            if let Value::Object(extra) = extra {
                for (k, v) in extra {
                    body[k] = v;
                }
            }
            body
        })
}

/// A hook before one of our tools (`event`, the tool as the agent names it) with any input.
fn arb_tool_call(event: &'static str, tool: &'static str) -> impl Strategy<Value = Value> {
    (arb_hook_of(&[event]), arb_json()).prop_map(move |(mut hook, input)| {
        hook["tool_name"] = json!(tool);
        hook["tool_input"] = input;
        hook
    })
}

fn post_as_worker(path: &str, body: &str, extra: &[(String, String)]) -> (u16, String) {
    let d = daemon();
    let mut headers = vec![
        (
            "Authorization".to_owned(),
            format!("Bearer {}", d.daemon().worker_token().as_str()),
        ),
        ("Content-Type".to_owned(), "application/json".to_owned()),
        (
            "Accept".to_owned(),
            "application/json, text/event-stream".to_owned(),
        ),
    ];
    headers.extend(extra.iter().cloned());
    d.raw("POST", path, &d.host(), &headers, body)
}

fn still_answers() -> Result<(), TestCaseError> {
    let d = daemon();
    let (status, _) = d.raw("GET", "/healthz", &d.host(), &[], "");
    prop_assert_eq!(status, 200);
    Ok(())
}

/// A hook is taken (200), or refused in our shape (400, or 404 for a desk hint naming no desk
/// that could exist); never a 5xx. The daemon answers afterwards.
fn taken_or_refused(
    path: &str,
    body: &str,
    headers: &[(String, String)],
) -> Result<(), TestCaseError> {
    let (status, text) = post_as_worker(path, body, headers);
    prop_assert!(
        status == 200 || (400..500).contains(&status),
        "HTTP {status} on {path} for {body}: {text}"
    );
    if status != 200 {
        let v: Value =
            serde_json::from_str(&text).map_err(|e| TestCaseError::fail(format!("{e}: {text}")))?;
        prop_assert!(
            v["error"]["message"]
                .as_str()
                .is_some_and(|m| !m.is_empty()),
            "{text}"
        );
    }
    still_answers()
}

const TOOLS: [&str; 7] = [
    "task_update",
    "task_list",
    "task_get",
    "desks_list",
    "task_send",
    "task_status",
    "task_ack",
];

proptest! {
    #![proptest_config(config(200))]

    #[test]
    fn any_hook_payload_is_taken_or_refused_in_our_shape(
        hook in prop_oneof![arb_hook(), arb_json()],
        raw in proptest::option::of(".{0,48}"),
        headers in proptest::collection::vec(
            (proptest::sample::select(vec!["X-Taskkeeper-Desk", "X-Taskkeeper-Tmux",
                "X-Taskkeeper-Tmux-Pane", "X-Taskkeeper-Pid", "X-Taskkeeper-Status-File"]),
             "[ -~]{0,24}"),
            0..3,
        ),
        path in proptest::sample::select(vec!["/hooks/claude-code", "/hooks/generic"]),
    ) {
        let body = raw.unwrap_or_else(|| hook.to_string());
        let headers: Vec<(String, String)> =
            headers.into_iter().map(|(k, v)| (k.to_owned(), v)).collect();
        taken_or_refused(path, &body, &headers)?;
    }

    #[test]
    fn any_codex_or_gemini_hook_payload_is_taken_or_refused_in_our_shape(
        (path, hook) in prop_oneof![
            4 => (Just("/hooks/codex"), arb_hook_of(&CODEX_EVENTS)),
            4 => (Just("/hooks/gemini"), arb_hook_of(&GEMINI_EVENTS)),
            // A call of one of our tools, under each agent's name for them: its input is
            // given back with the session's proof.
            2 => (Just("/hooks/codex"), arb_tool_call("PreToolUse", "mcp__taskkeeper__task_update")),
            2 => (Just("/hooks/gemini"), arb_tool_call("BeforeTool", "mcp_taskkeeper_task_update")),
            1 => (proptest::sample::select(vec!["/hooks/codex", "/hooks/gemini"]), arb_json()),
        ],
        // What these agents' hooks read, each there or not, anything or a value that means
        // something to them.
        fields in proptest::collection::vec(
            proptest::option::of(prop_oneof![
                2 => arb_json(),
                1 => proptest::sample::select(vec![json!("ToolPermission"), json!(true),
                    json!({"server_name": "taskkeeper"}), json!("startup"), json!("clear")]),
            ]),
            HOOK_FIELDS.len(),
        ),
        raw in proptest::option::weighted(0.15, ".{0,48}"),
        headers in proptest::collection::vec(
            (proptest::sample::select(vec!["X-Taskkeeper-Desk", "X-Taskkeeper-Tmux",
                "X-Taskkeeper-Tmux-Pane", "X-Taskkeeper-Pid", "X-Taskkeeper-Codex-Home"]),
             "[ -~]{0,24}"),
            0..3,
        ),
    ) {
        let mut hook = hook;
        if let Value::Object(h) = &mut hook {
            for (k, v) in HOOK_FIELDS.iter().zip(fields) {
                if let Some(v) = v {
                    h.insert((*k).to_owned(), v);
                }
            }
        }
        let body = raw.unwrap_or_else(|| hook.to_string());
        let headers: Vec<(String, String)> =
            headers.into_iter().map(|(k, v)| (k.to_owned(), v)).collect();
        taken_or_refused(path, &body, &headers)?;
    }

    #[test]
    fn any_arguments_to_any_tool_get_a_json_rpc_answer(
        tool in prop_oneof![proptest::sample::select(TOOLS.to_vec()).prop_map(str::to_owned),
            "[a-z_]{0,12}"],
        arguments in arb_json(),
        session in proptest::option::of(prop_oneof![Just("s-fuzz".to_owned()), ".{0,12}"]),
    ) {
        let d = daemon();
        let mut arguments = arguments;
        if let (Some(s), Value::Object(a)) = (&session, &mut arguments) {
            a.insert("session_id".into(), json!(s));
            a.insert("session_proof".into(), json!(d.daemon().session_proof(s)));
        }
        let call = json!({"jsonrpc": "2.0", "id": 7, "method": "tools/call",
            "params": {"name": tool, "arguments": arguments}});
        let headers = [("MCP-Protocol-Version".to_owned(), "2025-11-25".to_owned())];
        let (status, text) = post_as_worker("/mcp", &call.to_string(), &headers);
        prop_assert!(status < 500, "HTTP {status} for {call}: {text}");
        if status == 200 {
            let v: Value = serde_json::from_str(&text)
                .map_err(|e| TestCaseError::fail(format!("{e}: {text}")))?;
            prop_assert!(v.get("result").is_some() || v.get("error").is_some(), "{text}");
        }
        still_answers()?;
    }
}
