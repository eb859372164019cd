//! Integration tests of the core: one binary (links are slow on two cores), one module per
//! area.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // tests fail loudly

mod autolaunch;
mod digest;
mod limits;
mod push;
mod queue;
mod settings;
mod store;
mod support;
mod transitions;
mod watchdog;
