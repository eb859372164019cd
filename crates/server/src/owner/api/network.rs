//! The network listener for askers on other machines as the owner sees it (`GET
//! /api/network`, the window's Settings, and beside a new asker's token): where askers reach
//! it, the certificate they pin, and what is wrong, in the owner API's words.

use serde::{Deserialize, Serialize};

use crate::network::{NetworkState, NetworkStatus};

/// Whether the network listener runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(test, derive(ts_rs::TS))]
#[serde(rename_all = "lowercase")]
pub enum NetworkStateView {
    Off,
    Listening,
    /// The settings do not make a listener, or it could not start (`error` says why).
    Failed,
}

/// The network listener now.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(test, derive(ts_rs::TS))]
#[serde(rename_all = "camelCase")]
pub struct NetworkView {
    pub state: NetworkStateView,
    /// The address and port it listens on.
    pub address: Option<String>,
    /// The URL askers are given (the cards name it): add `/a2a/<desk>` for a desk.
    pub url: Option<String>,
    /// `self-signed`, `files`, `proxy` or `off`.
    pub tls: Option<String>,
    /// The SHA-256 fingerprint of its certificate (`AB:CD:…`), for askers to pin.
    pub certificate_sha256: Option<String>,
    /// What the owner is warned of while it runs (plain HTTP beyond loopback).
    pub warning: Option<String>,
    /// Why it does not run.
    pub error: Option<String>,
}

impl From<&NetworkStatus> for NetworkView {
    fn from(s: &NetworkStatus) -> Self {
        Self {
            state: match s.state {
                NetworkState::Off => NetworkStateView::Off,
                NetworkState::Listening => NetworkStateView::Listening,
                NetworkState::Failed => NetworkStateView::Failed,
            },
            address: s.addr.map(|a| a.to_string()),
            url: s.url.clone(),
            tls: s.tls.map(|t| t.as_str().to_owned()),
            certificate_sha256: s.certificate_sha256(),
            warning: s.warning.clone(),
            error: s.error.clone(),
        }
    }
}
