//! The daemon over real HTTP on 127.0.0.1, one integration binary.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // tests fail loudly

mod a2a;
mod agent_hooks;
mod agents;
mod away;
mod cards;
mod claude_ways;
mod codex_app_server;
mod conformance;
mod delivery;
mod files;
mod fuzz;
mod grpc;
mod guard;
mod hooks;
mod kit;
mod limits;
mod mcp;
mod network;
mod owner_api;
mod protojson;
mod push;
mod push_targets;
mod push_tls;
mod rest;
mod routes;
mod signed_cards;
mod streams;
mod support;
mod terminal;
mod tidy;
mod tmux;
mod trips;
mod ui;
mod ui_codes;
mod watchdog;
