//! The daemon over real HTTP on 127.0.0.1, one integration binary.

mod guard;
mod owner_api;
mod support;
